//! vouch hands backlog issues to a local coding model and merges only what an independent gate has proven.
//!
//! The crate is a library with a thin binary in `main.rs`. The parts, by where a reader looks for them:
//! [`cli`] defines the command line and [`commands`] holds one module per subcommand; [`gate`] decides
//! verdicts (profiles, steps, baseline, per-test results, reports); [`room`] builds the clean rooms the gate
//! works in without touching the user's checkout; [`process`] is the only place that starts processes, and [`sandbox`] confines the untrusted ones;
//! [`error`] maps failures to documented exit codes; [`toolcall`] recovers tool calls a local server left in
//! the text of a reply; [`agent`] runs a local model on a task in a [`workspace`] (a git worktree on its
//! own branch) and lets the gate, not the model, decide the outcome; [`secret`] keeps the model's key and the
//! forge's token out of everything vouch prints or writes.

pub mod agent;
pub mod backlog;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod forge;
pub mod gate;
pub mod git;
pub mod layers;
pub mod llama;
pub mod logging;
pub mod model;
pub mod probe;
pub mod process;
pub mod room;
pub mod sandbox;
pub mod secret;
pub mod toolcall;
pub mod tools;
pub mod ui;
pub mod workspace;
