//! The agent's tools: what a model may do to its workspace, one file per tool.
//!
//! The tool definitions the model sees live in one place, [`crate::toolcall::agent_tools`]; this module
//! implements them and checks every call against them, so a tool and its schema cannot drift apart. A tool
//! never fails the agent: every problem (an unknown tool, a missing field, a path outside the workspace, an
//! edit whose text is not there) comes back as a [`ToolOutput`] with `ok: false` and a message that tells the
//! model what to do next. Only the agent loop decides when a turn ends.
//!
//! Every path goes through [`Workspace`], which confines reads and writes to the worktree and keeps the
//! model out of `.git`. `run_tests` and `submit` are not here: they need the gate and the loop's state, so the
//! loop handles them before it calls [`Tools::dispatch`] (see [`LOOP_TOOLS`]).

mod args;
mod edit;
mod list_files;
mod read_file;
mod search;
mod text;
mod walk;
mod workspace;
mod write_file;

#[cfg(test)]
mod tests;

use std::panic::{self, AssertUnwindSafe};

use serde::Serialize;
use serde_json::Value;

pub use args::Args;
pub use edit::Edit;
pub use list_files::ListFiles;
pub use read_file::ReadFile;
pub use search::Search;
pub use workspace::{Resolved, Workspace};
pub use write_file::WriteFile;

use args::Params;

/// The tools of [`crate::toolcall::agent_tools`] that the agent loop handles itself, not [`Tools`].
pub const LOOP_TOOLS: [&str; 2] = ["run_tests", "submit"];

/// What a tool call returns to the model. `ok: false` marks a failed call; the text says why and what next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolOutput {
    pub ok: bool,
    pub text: String,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            ok: true,
            text: text.into(),
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            ok: false,
            text: text.into(),
        }
    }
}

impl From<Result<String, String>> for ToolOutput {
    fn from(result: Result<String, String>) -> Self {
        match result {
            Ok(text) => ToolOutput::ok(text),
            Err(text) => ToolOutput::error(text),
        }
    }
}

/// One tool the agent can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by, as in [`crate::toolcall::agent_tools`].
    fn name(&self) -> &'static str;

    /// Whether a successful call may change the workspace (the loop re-runs checks after such calls).
    fn mutates(&self) -> bool;

    /// Runs the call. `args` has been checked against the tool's schema (see [`Tools::dispatch`]).
    fn call(&self, ws: &Workspace, args: &Value) -> ToolOutput;

    /// The tool's OpenAI definition from [`crate::toolcall::agent_tools`], or `Value::Null` if it has none.
    fn schema(&self) -> Value {
        definition(self.name())
    }
}

/// The OpenAI definition of the agent tool `name` (`{"type": "function", "function": {...}}`), if any.
pub fn definition(name: &str) -> Value {
    let all = crate::toolcall::agent_tools();
    all.as_array()
        .into_iter()
        .flatten()
        .find(|def| def.pointer("/function/name").and_then(Value::as_str) == Some(name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The tools of one workspace, by name.
pub struct Tools {
    workspace: Workspace,
    tools: Vec<(Box<dyn Tool>, Params)>,
}

impl Tools {
    /// The standard tools: `read_file`, `edit`, `write_file`, `list_files` and `search` (not [`LOOP_TOOLS`]).
    pub fn standard(workspace: Workspace) -> Self {
        let tools: Vec<Box<dyn Tool>> = vec![
            Box::new(ReadFile),
            Box::new(Edit),
            Box::new(WriteFile),
            Box::new(ListFiles),
            Box::new(Search),
        ];
        Tools {
            workspace,
            tools: tools
                .into_iter()
                .map(|tool| {
                    let params = Params::from_definition(&tool.schema());
                    (tool, params)
                })
                .collect(),
        }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The names of the tools, in the order of [`Tools::standard`].
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|(tool, _)| tool.name()).collect()
    }

    /// The tool called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|(tool, _)| tool.name() == name)
            .map(|(tool, _)| tool.as_ref())
    }

    /// Runs the call `name(args)`. Unknown tools and arguments that do not fit the tool's schema come back as
    /// an error output naming the valid tools or fields; a tool that panics comes back as an error output too.
    pub fn dispatch(&self, name: &str, args: &Value) -> ToolOutput {
        let Some((tool, params)) = self.tools.iter().find(|(tool, _)| tool.name() == name) else {
            return self.unknown(name);
        };
        let args = match params.check(args) {
            Ok(args) => args,
            Err(problem) => {
                return ToolOutput::error(format!(
                    "Bad arguments for {name}: {problem}. {name} takes {}.",
                    params.describe()
                ))
            }
        };
        // A bug in a tool must not end the agent's run: it becomes one more failed call.
        panic::catch_unwind(AssertUnwindSafe(|| tool.call(&self.workspace, &args))).unwrap_or_else(
            |payload| {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                ToolOutput::error(format!(
                    "{name} failed with an internal error ({what}); this is a bug in vouch, not in the call. \
                     Try another way to reach the same result."
                ))
            },
        )
    }

    fn unknown(&self, name: &str) -> ToolOutput {
        if LOOP_TOOLS.contains(&name) {
            return ToolOutput::error(format!(
                "{name} is handled by the agent loop, not by the workspace tools."
            ));
        }
        let mut names = self.names();
        names.extend(LOOP_TOOLS);
        ToolOutput::error(format!(
            "There is no tool called `{name}`. The tools are: {}.",
            names.join(", ")
        ))
    }
}
