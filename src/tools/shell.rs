//! `shell`: a command run with `sh -c` in the worktree, offered to the model only with `--allow-shell`.
//!
//! It goes through [`crate::process`] like every other child: its own process group, killed as a whole on
//! timeout or Ctrl-C, output to a log file of which only a capped head and tail come back to the model. It runs
//! under the [sandbox](crate::sandbox) (writable: the worktree and a home of its own) with an environment built
//! from the allowlist ([`crate::sandbox::child_env`]), so vouch's API key is not in it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{object, CallFuture, CallResult, Context, Tool, ToolError};
use crate::process;
use crate::sandbox::{Policy, Sandbox};

/// Characters of output from the start returned to the model.
const HEAD_CHARS: usize = 2000;
/// Characters of output from the end returned to the model.
const TAIL_CHARS: usize = 6000;

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
                Some(runner) => {
                    ctx.workspace.record_unknown();
                    runner.run(args, ctx.cancel).await
                }
                None => Err(ToolError::failed("shell is not available.")),
            }
        })
    }
}

/// The shell's environment: the allowlist with `home` as HOME, and never the variable `api_key_env` names.
pub fn shell_env(home: &std::path::Path, api_key_env: Option<&str>) -> Vec<(String, String)> {
    crate::sandbox::child_env(home, &[])
        .into_iter()
        .filter(|(name, _)| api_key_env != Some(name.as_str()))
        .collect()
}

/// Runs the model's shell commands in one worktree.
#[derive(Debug)]
pub struct ShellRunner {
    dir: PathBuf,
    logs: PathBuf,
    timeout: Duration,
    env: Vec<(String, String)>,
    sandbox: Sandbox,
    policy: Policy,
    runs: AtomicU32,
}

impl ShellRunner {
    /// `home` is the shell's own home directory (created); `readable` what it may read in the hidden home.
    pub fn new(
        dir: PathBuf,
        logs: PathBuf,
        timeout: Duration,
        api_key_env: Option<&str>,
        sandbox: Sandbox,
        home: PathBuf,
        readable: Vec<PathBuf>,
    ) -> ShellRunner {
        if let Err(e) = std::fs::create_dir_all(&home) {
            tracing::warn!("create {}: {e}", home.display());
        }
        ShellRunner {
            env: shell_env(&home, api_key_env),
            policy: Policy {
                writable: vec![dir.clone(), home],
                hidden: readable
                    .iter()
                    .flat_map(|o| crate::gate::steps::repository_of(o))
                    .collect(),
                readable,
                network: false,
                // The worktree's `.git` file is vouch's ([`crate::workspace::Worktree::git_dir`]).
                read_only: vec![(dir.join(".git"), dir.join(".git"))],
                ..Policy::default()
            },
            dir,
            logs,
            timeout,
            sandbox,
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
            argv: self.sandbox.wrap(
                &["sh".into(), "-c".into(), command.to_string()],
                &self.dir,
                &self.policy,
            ),
            cwd: self.dir.clone(),
            env: self.env.clone(),
            timeout: self.timeout,
            log_path: log.clone(),
            stdout_path: log,
            merge_output: true,
            hold: Default::default(),
            caps: self.sandbox.caps(),
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
            assert!(crate::sandbox::is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "USER"] {
            assert!(!crate::sandbox::is_secret_name(name), "{name}");
        }
        // The variable the API key is read from never reaches the shell, whatever its name.
        let home = std::path::Path::new("/tmp/shell-home");
        assert!(shell_env(home, None).iter().any(|(k, _)| k == "PATH"));
        assert!(!shell_env(home, Some("PATH"))
            .iter()
            .any(|(k, _)| k == "PATH"));
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
