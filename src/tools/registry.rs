//! The registry: which tools a run offers, in which order, and running a call by name.

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use serde_json::Value;

use super::args::Params;
use super::{
    CallResult, Context, Edit, ListFiles, ReadFile, RunTests, Search, Settings, Shell, Submit,
    Tool, ToolError, WriteFile,
};

/// The tools offered to a run, in the order the model sees them.
pub struct Registry {
    tools: Vec<(Box<dyn Tool>, Params)>,
}

impl Registry {
    /// The standard tools: `read_file`, `edit`, `write_file`, `list_files`, `search`, `run_tests` and `submit`.
    pub fn standard() -> Registry {
        Registry::of(vec![
            Box::new(ReadFile),
            Box::new(Edit),
            Box::new(WriteFile),
            Box::new(ListFiles),
            Box::new(Search),
            Box::new(RunTests),
            Box::new(Submit),
        ])
    }

    /// The tools of a run with these settings: the standard ones, then `shell` when it is allowed.
    pub fn for_run(settings: &Settings) -> Registry {
        let mut registry = Registry::standard();
        if settings.shell.is_some() {
            registry.add(Box::new(Shell));
        }
        registry
    }

    fn of(tools: Vec<Box<dyn Tool>>) -> Registry {
        let mut registry = Registry { tools: Vec::new() };
        for tool in tools {
            registry.add(tool);
        }
        registry
    }

    fn add(&mut self, tool: Box<dyn Tool>) {
        let params = Params::from_definition(&tool.definition());
        self.tools.push((tool, params));
    }

    /// The names of the tools, in order.
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

    /// The OpenAI definitions of the tools, in order: the `tools` of a request.
    pub fn definitions(&self) -> Vec<Value> {
        self.tools
            .iter()
            .map(|(tool, _)| tool.definition())
            .collect()
    }

    /// Runs the call `name(args)`. Unknown tools and arguments that do not fit a strict tool's schema fail
    /// with a text naming the valid tools or fields; a tool that panics fails too, as a call the model may
    /// try another way.
    pub async fn dispatch(&self, ctx: &mut Context<'_>, name: &str, args: &Value) -> CallResult {
        let Some((tool, params)) = self.tools.iter().find(|(tool, _)| tool.name() == name) else {
            return Err(ToolError::failed(no_such_tool(name, &self.names())));
        };
        let checked;
        let mut note = None;
        let args = if tool.strict() {
            let (args, read_as) = params.check(args).map_err(|problem| {
                ToolError::failed(format!(
                    "Bad arguments for {name}: {problem}. {name} takes {}.",
                    params.describe()
                ))
            })?;
            checked = args;
            note = read_as;
            &checked
        } else {
            args
        };
        let result = Self::call(tool.as_ref(), ctx, name, args).await;
        // The model learns the field's name from the answer, whatever the call did.
        match note {
            None => result,
            Some(note) => match result {
                Ok(text) => Ok(format!("{text}\n({note})")),
                Err(ToolError::Failed(text)) => Err(ToolError::Failed(format!("{text}\n({note})"))),
                Err(other) => Err(other),
            },
        }
    }

    async fn call(tool: &dyn Tool, ctx: &mut Context<'_>, name: &str, args: &Value) -> CallResult {
        // A bug in a tool must not end the agent's run: it becomes one more failed call.
        AssertUnwindSafe(tool.call(ctx, args))
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| {
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(ToolError::failed(format!(
                    "{name} failed with an internal error ({what}); this is a bug in vouch, not in the call. \
                     Try another way to reach the same result."
                )))
            })
    }
}

/// The answer to a call of a tool that does not exist. A small model often calls a function of the code or
/// of the issue (`median`, `ports.Parse`) as if it were a tool: the answer names the tools and shows the
/// call that finds that function.
pub fn no_such_tool(name: &str, tools: &[&str]) -> String {
    let mut out = format!(
        "There is no tool called `{name}`. The tools are: {}.",
        tools.join(", ")
    );
    let ident = name
        .rsplit(['.', ':', '/'])
        .find(|part| !part.is_empty())
        .unwrap_or(name)
        .trim_end_matches("()");
    let is_ident = !ident.is_empty()
        && ident.chars().all(|c| c.is_alphanumeric() || c == '_')
        && tools.iter().all(|t| !t.eq_ignore_ascii_case(ident));
    if is_ident && tools.contains(&"search") {
        out.push_str(&format!(
            " If `{ident}` is a name in the code, find it with {{\"name\": \"search\", \"arguments\": \
             {{\"pattern\": \"{ident}\"}}}}."
        ));
    }
    out
}
