//! `vouch backlog`: many tasks at once. The tasks come from a folder of task files or a forge label
//! ([`source`]); the plan sorts them and keeps a shard's share ([`shard`]); each is claimed ([`claim`]) and
//! run as a child `vouch run` ([`child`]) in a bounded local pool ([`pool`]) with retries that carry the
//! gate's findings ([`findings`]) and one escalation to a stronger model; every attempt is recorded
//! ([`state`]) and the run ends with one summary ([`summary`]) while [`progress`] shows each task's state.
//! The per-index entry point (`--index I`, one pod of a Kubernetes Indexed Job) is one slot of the pool;
//! [`k8s`] writes that Job.

pub mod child;
pub mod claim;
pub mod findings;
pub mod k8s;
pub mod pool;
pub mod progress;
pub mod shard;
pub mod source;
pub mod state;
pub mod summary;

pub use child::{Endpoint, RunSpec};
pub use pool::{run_task, LabelClaims, Options};
pub use shard::Shard;
pub use source::{BacklogTask, TaskKind};
pub use state::{Attempt, Outcome, StateDir, TaskRecord};
pub use summary::Summary;
