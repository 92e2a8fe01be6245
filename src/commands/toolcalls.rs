//! `vouch toolcalls`: tool-call recovery on raw model output, for checking what a model's reply turns into
//! (and for a bug report when it turns into nothing).

use std::io::{self, Read as _};
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::Value;

use crate::cli::{ParseArgs, ToolcallsArgs, ToolcallsCommand};
use crate::error::VouchError;
use crate::toolcall::learn::{self, Learned};
use crate::toolcall::{self, Format, Message, Recovered, ToolSpec};

use super::output;

pub fn run(args: ToolcallsArgs) -> Result<i32> {
    match args.command {
        ToolcallsCommand::Parse(args) => parse(args),
    }
}

fn parse(args: ParseArgs) -> Result<i32> {
    let format = args.format.as_deref().map(parse_format).transpose()?;
    let tools = match &args.tools {
        Some(path) => load_tools(path)?,
        None => ToolSpec::from_openai(&crate::tools::definitions())?,
    };
    let learned = args.template.as_deref().map(load_template).transpose()?;
    let mut raw = Vec::new();
    io::stdin()
        .read_to_end(&mut raw)
        .context("read model output from stdin")?;
    let out = parse_learned(
        &String::from_utf8_lossy(&raw),
        &tools,
        format,
        learned.as_ref(),
    );
    let text = serde_json::to_string_pretty(&out)?;
    let mut stdout = output::stdout();
    stdout.line(&text)?;
    stdout.finish()?;
    Ok(0)
}

/// What `vouch toolcalls parse` prints for a reply (serialized in field order: format, calls, content,
/// then reasoning and warnings when there are any).
pub fn parse_stdin(text: &str, tools: &[ToolSpec], format: Option<Format>) -> Recovered {
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    toolcall::recover(&msg, tools, format)
}

/// [`parse_stdin`] with the call syntax learned from a chat template (`--template`).
pub fn parse_learned(
    text: &str,
    tools: &[ToolSpec],
    format: Option<Format>,
    learned: Option<&Learned>,
) -> Recovered {
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    toolcall::recover_with(&msg, tools, format, learned)
}

/// The call syntax of the chat template in `path`; a template vouch cannot learn is a usage error.
fn load_template(path: &Path) -> Result<Learned> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        VouchError::usage(format!("cannot read chat template {}: {e}", path.display()))
    })?;
    learn::learn(&text).map_err(|e| {
        VouchError::usage_hint(
            format!("{}: {e}", path.display()),
            "--template takes a Jinja chat template that renders tool calls",
        )
        .into()
    })
}

fn parse_format(name: &str) -> Result<Format> {
    Format::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Format::PARSERS.iter().map(|f| f.name()).collect();
        VouchError::usage_hint(
            format!("unknown tool-call format {name:?}"),
            format!("--format takes one of: {}", names.join(", ")),
        )
        .into()
    })
}

fn load_tools(path: &Path) -> Result<Vec<ToolSpec>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        VouchError::usage(format!(
            "cannot read tool definitions {}: {e}",
            path.display()
        ))
    })?;
    let defs: Value = serde_json::from_str(&text).map_err(|e| {
        VouchError::usage_hint(
            format!("{} is not JSON: {e}", path.display()),
            "--tools takes a JSON array of OpenAI tool definitions",
        )
    })?;
    ToolSpec::from_openai(&defs).map_err(|e| {
        VouchError::usage_hint(
            format!("{}: {e:#}", path.display()),
            "--tools takes a JSON array of OpenAI tool definitions",
        )
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::PARSE_EXAMPLES;
    use crate::error::{exit_code_of, hint_of, EXIT_USAGE};
    use clap::{CommandFactory, Parser};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::path::PathBuf;

    fn printed(text: &str, format: Option<Format>) -> Value {
        serde_json::to_value(parse_stdin(text, &agent(), format)).unwrap()
    }

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        Toolcalls(ToolcallsArgs),
    }

    fn agent() -> Vec<ToolSpec> {
        ToolSpec::from_openai(&crate::tools::definitions()).unwrap()
    }

    #[test]
    fn parse_prints_format_calls_and_content() {
        let text = "Reading it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>";
        let out = printed(text, None);
        assert_eq!(
            out,
            json!({
                "format": "hermes",
                "calls": [{"name": "read_file", "arguments": {"path": "src/main.rs"}}],
                "content": "Reading it.",
            })
        );
    }

    #[test]
    fn parse_prints_warnings_only_when_there_are_some() {
        let out = printed("<tool_call>delete_all</tool_call>", None);
        assert_eq!(
            out,
            json!({
                "format": "glm",
                "calls": [],
                "content": "",
                "warnings": ["dropped a call to \"delete_all\": no such tool is offered (offered: read_file, edit, write_file, list_files, search, run_tests, submit)"],
                "unknown": ["delete_all"],
            })
        );
    }

    #[test]
    fn a_forced_format_is_the_only_parser_tried() {
        let text = "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(
            printed(text, Some(Format::Glm)),
            json!({"format": "none", "calls": [], "content": text})
        );
    }

    #[test]
    fn an_unknown_format_is_a_usage_error_that_lists_the_valid_names() {
        let err = parse_format("qwen4").unwrap_err();
        assert_eq!(exit_code_of(&err), EXIT_USAGE);
        assert_eq!(err.to_string(), "unknown tool-call format \"qwen4\"");
        let hint = hint_of(&err).unwrap();
        for f in Format::PARSERS {
            assert!(hint.contains(f.name()), "{hint} lacks {f}");
        }
    }

    #[test]
    fn format_aliases_from_servers_are_accepted() {
        assert_eq!(parse_format("qwen3_coder").unwrap(), Format::Qwen3Coder);
        assert_eq!(parse_format("GLM47").unwrap(), Format::Glm);
        assert_eq!(parse_format("gpt-oss").unwrap(), Format::Harmony);
    }

    #[test]
    fn the_examples_list_every_format() {
        for f in Format::PARSERS {
            assert!(PARSE_EXAMPLES.contains(f.name()), "after_help lacks {f}");
        }
    }

    #[test]
    fn tool_definitions_that_are_not_an_array_are_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(&path, "{\"name\": 1}").unwrap();
        let err = load_tools(&path).unwrap_err();
        assert_eq!(exit_code_of(&err), EXIT_USAGE);
    }

    #[test]
    fn every_flag_has_help_text() {
        let cmd = Cli::command();
        let parse = cmd
            .find_subcommand("toolcalls")
            .and_then(|c| c.find_subcommand("parse"))
            .unwrap();
        assert!(parse.get_after_help().is_some());
        for arg in parse.get_arguments() {
            if arg.get_id() != "help" {
                assert!(arg.get_help().is_some(), "--{} has no help", arg.get_id());
            }
        }
        Cli::command().debug_assert();
    }

    #[test]
    fn the_output_lists_format_calls_and_content_first() {
        let text = serde_json::to_string(&parse_stdin(
            "<tool_call>list_files</tool_call>",
            &agent(),
            None,
        ))
        .unwrap();
        assert_eq!(
            text,
            r#"{"format":"glm","calls":[{"name":"list_files","arguments":{}}],"content":""}"#
        );
    }

    #[test]
    fn the_command_line_parses() {
        let cli = Cli::parse_from([
            "vouch",
            "toolcalls",
            "parse",
            "--format",
            "glm",
            "--tools",
            "t.json",
        ]);
        let Sub::Toolcalls(ToolcallsArgs {
            command: ToolcallsCommand::Parse(args),
        }) = cli.command;
        assert_eq!(args.format.as_deref(), Some("glm"));
        assert_eq!(args.tools, Some(PathBuf::from("t.json")));
    }
}
