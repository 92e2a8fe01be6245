//! The agent's tools: what a model may do in its worktree, one file per tool, each behind the one [`Tool`]
//! trait.
//!
//! A tool carries its own name, description and JSON schema, so the definition the model sees and the code
//! that runs the call cannot drift apart; the [`Registry`] lists the tools offered to a run, in a fixed order
//! (the tool list is part of the prompt, and a stable prompt keeps the server's cache valid), checks each
//! call's arguments against the schema, and runs it. `run_tests`, `submit` and `shell` are tools like the
//! others: what they need beyond the worktree (the test command, the shell's settings) comes in the
//! [`Context`], and `submit` leaves its [`Submission`] there for the loop to act on.
//!
//! A failing call is an answer, not an error: every problem the model can do something about (an unknown
//! tool, a missing field, a path outside the workspace, an edit whose text is not there, failing tests) is a
//! [`ToolError::Failed`] whose text goes back to the model as the call's result and says what to do next.
//! Only [`ToolError::Infrastructure`] ends the run.
//!
//! Every path goes through [`Workspace`], which confines reads and writes to the worktree and keeps the
//! model out of `.git`.
//!
//! The trait is async through boxed futures ([`CallFuture`]) rather than `async fn` in the trait: the registry
//! holds `Box<dyn Tool>`, which native async trait methods do not allow, and boxing by hand needs no
//! dependency beyond `futures`, which vouch already has.

mod args;
pub(crate) mod definitions;
mod edit;
mod list_files;
pub(crate) mod merge;
mod overview;
mod read_file;
mod registry;
mod run_tests;
pub(crate) mod same_code;
mod search;
mod shell;
mod submit;
mod syntax_guard;
mod test_summary;
mod text;
mod walk;
mod workspace;
mod write_file;

#[cfg(test)]
mod tests;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub use args::Args;
pub use edit::Edit;
pub use list_files::ListFiles;
pub use overview::{overview, Overview, DEFAULT_BUDGET as DEFAULT_OVERVIEW_BYTES};
pub use read_file::ReadFile;
pub use registry::{no_such_tool, Registry};
pub use run_tests::{RunTests, TestResult, TestRunner};
pub use search::Search;
pub use shell::{shell_env, Shell, ShellRunner};
pub use submit::{Submission, Submit};
pub use test_summary::{summarize, Summary};
pub use text::cap;
pub use workspace::{Changed, Resolved, Workspace};
pub use write_file::WriteFile;

/// Why a call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The call failed in a way the model can act on; the text goes back to it as the call's result.
    #[error("{0}")]
    Failed(String),
    /// Something under the tool broke that no other call can fix; the run ends.
    #[error("{0:#}")]
    Infrastructure(anyhow::Error),
}

impl ToolError {
    pub fn failed(text: impl Into<String>) -> ToolError {
        ToolError::Failed(text.into())
    }
}

/// What a call returns: the text for the model.
pub type CallResult = Result<String, ToolError>;

/// The future of one call.
pub type CallFuture<'a> = BoxFuture<'a, CallResult>;

/// What the tools of one run need beyond the workspace.
#[derive(Default)]
pub struct Settings {
    /// The profile's test command for `run_tests`; `None` when no gate profile matches the repository.
    pub tests: Option<TestRunner>,
    /// How `shell` runs commands; `None` unless `--allow-shell`.
    pub shell: Option<ShellRunner>,
}

/// What a call runs in.
pub struct Context<'a> {
    pub workspace: &'a Workspace,
    /// Ctrl-C: a long call (tests, a shell command) stops when it is cancelled.
    pub cancel: &'a CancellationToken,
    pub settings: &'a Settings,
    /// What `submit` recorded; the loop takes it after the call.
    pub submission: Option<Submission>,
}

impl<'a> Context<'a> {
    pub fn new(
        workspace: &'a Workspace,
        cancel: &'a CancellationToken,
        settings: &'a Settings,
    ) -> Context<'a> {
        Context {
            workspace,
            cancel,
            settings,
            submission: None,
        }
    }
}

/// One tool the agent can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;

    /// What the tool does, for the model.
    fn description(&self) -> &'static str;

    /// The JSON schema of the arguments (`{"type": "object", "properties": ..., "required": ...}`).
    fn parameters(&self) -> Value;

    /// Whether a successful call counts as a change of the files for the rails (a run without one stalls).
    fn mutates(&self) -> bool;

    /// Whether the registry checks the arguments against [`Tool::parameters`] before the call, refusing
    /// unknown fields and mistyped values. The workspace tools are strict; `run_tests`, `submit` and `shell`
    /// read their arguments leniently, as they always have.
    fn strict(&self) -> bool {
        true
    }

    /// Runs the call. A strict tool's `args` have been checked against its schema (see
    /// [`Registry::dispatch`]).
    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a>;

    /// The OpenAI definition (`{"type": "function", "function": {...}}`) the model is offered.
    fn definition(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name(),
                "description": self.description(),
                "parameters": self.parameters(),
            }
        })
    }
}

/// The schema of an object with these properties, of which `required` must be there.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
    })
}

/// The standard tools' definitions as one JSON array (what `vouch toolcalls parse` recovers calls against
/// unless it is given other tools).
pub fn definitions() -> Value {
    Value::Array(Registry::standard().definitions())
}
