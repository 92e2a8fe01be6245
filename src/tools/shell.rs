//! `shell`: a command run with `sh -c` in the worktree, offered to the model only with `--allow-shell`.
//!
//! It goes through [`crate::process`] like every other child: its own process group, killed as a whole on
//! timeout or Ctrl-C, output to a log file of which only a capped head and tail come back to the model. The
//! environment is vouch's minus anything that looks like a secret (see [`scrubbed_env`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{object, CallFuture, CallResult, Context, Tool, ToolError};
use crate::process;

/// Characters of output from the start returned to the model.
const HEAD_CHARS: usize = 2000;
/// Characters of output from the end returned to the model.
const TAIL_CHARS: usize = 6000;
/// Parts of variable names that mark a secret (compared case-insensitively).
const SECRET_MARKS: [&str; 6] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"];

/// The tool; how it runs commands comes from [`super::Settings::shell`].
pub struct Shell;

impl Tool for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn description(&self) -> &'static str {
        "Run a shell command (sh -c) in the repository's root and return its exit status and output. \
         It has a timeout; prefer read_file, search and edit for reading and changing files."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "command": {"type": "string", "description": "The command line, run with sh -c in the repository's root."}
            }),
            &["command"],
        )
    }

    /// A command may change files, but the rails count only `edit` and `write_file` as a change.
    fn mutates(&self) -> bool {
        false
    }

    fn strict(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move {
            match &ctx.settings.shell {
                Some(runner) => runner.run(args, ctx.cancel).await,
                None => Err(ToolError::failed("shell is not available.")),
            }
        })
    }
}

/// vouch's environment without the variables whose names look like secrets, and without `api_key_env`.
pub fn scrubbed_env(api_key_env: Option<&str>) -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(name, _)| !is_secret(name, api_key_env))
        .collect()
}

fn is_secret(name: &str, api_key_env: Option<&str>) -> bool {
    let upper = name.to_ascii_uppercase();
    api_key_env.is_some_and(|k| k == name) || SECRET_MARKS.iter().any(|m| upper.contains(m))
}

/// Runs the model's shell commands in one worktree.
#[derive(Debug)]
pub struct ShellRunner {
    dir: PathBuf,
    logs: PathBuf,
    timeout: Duration,
    env: Vec<(String, String)>,
    runs: AtomicU32,
}

impl ShellRunner {
    pub fn new(
        dir: PathBuf,
        logs: PathBuf,
        timeout: Duration,
        api_key_env: Option<&str>,
    ) -> ShellRunner {
        ShellRunner {
            dir,
            logs,
            timeout,
            env: scrubbed_env(api_key_env),
            runs: AtomicU32::new(0),
        }
    }

    /// Runs `args.command`; every problem, a failing command included, is a failed call.
    pub async fn run(&self, args: &Value, cancel: &CancellationToken) -> CallResult {
        let Some(command) = args
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        else {
            return Err(ToolError::failed(
                "shell needs a non-empty `command` string.",
            ));
        };
        let run = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        if let Err(e) = std::fs::create_dir_all(&self.logs) {
            return Err(ToolError::failed(format!(
                "The command could not be started: {e}"
            )));
        }
        let log = self.logs.join(format!("shell-{run}.log"));
        let spec = process::Spec {
            argv: vec!["sh".into(), "-c".into(), command.to_string()],
            cwd: self.dir.clone(),
            env: self.env.clone(),
            timeout: self.timeout,
            log_path: log.clone(),
            stdout_path: log,
            merge_output: true,
        };
        let outcome = match process::run_clean_env(&spec, cancel).await {
            Ok(o) => o,
            Err(e) => {
                return Err(ToolError::failed(format!(
                    "The command could not be started: {e:#}"
                )))
            }
        };
        let status = if outcome.timed_out {
            format!(
                "timed out after {}s (the command and its children were killed)",
                self.timeout.as_secs()
            )
        } else if outcome.cancelled {
            "cancelled".to_string()
        } else if let Some(code) = outcome.exit_code {
            format!("exit status {code}")
        } else {
            format!("killed by signal {}", outcome.signal.unwrap_or(0))
        };
        let output = cap_middle(&outcome.head_and_tail(), HEAD_CHARS, TAIL_CHARS);
        let text = format!("$ {command}\n{status}\n{output}");
        if outcome.success() {
            Ok(text)
        } else {
            Err(ToolError::Failed(text))
        }
    }
}

/// `text` with at most `head` characters from its start and `tail` from its end, saying how much was cut.
fn cap_middle(text: &str, head: usize, tail: usize) -> String {
    let count = text.chars().count();
    if count <= head + tail {
        return text.to_string();
    }
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!(
        "{start}\n[... {} characters of output cut ...]\n{end}",
        count - head - tail
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_by_name() {
        for name in [
            "MY_API_TOKEN",
            "aws_secret_access_key",
            "GH_AUTH",
            "DB_PASSWORD",
            "X_KEY",
        ] {
            assert!(is_secret(name, None), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "USER"] {
            assert!(!is_secret(name, None), "{name}");
        }
        assert!(is_secret("LLM", Some("LLM")));
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let text = "a".repeat(10) + &"b".repeat(10) + &"c".repeat(10);
        let capped = cap_middle(&text, 10, 10);
        assert_eq!(
            capped,
            format!(
                "{}\n[... 10 characters of output cut ...]\n{}",
                "a".repeat(10),
                "c".repeat(10)
            )
        );
        assert_eq!(cap_middle("short", 10, 10), "short");
    }
}
