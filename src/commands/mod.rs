//! One module per subcommand; [`run`] dispatches and returns the exit code. [`runtime`] is the async runtime
//! and Ctrl-C of the commands that need them; [`output`] is where every command writes.

pub mod backlog;
mod backlog_emit;
pub mod clean;
pub mod gate;
mod gate_pr;
pub mod model;
pub mod output;
pub mod pr;
pub mod probe;
pub mod profile;
pub mod run;
pub mod runtime;
pub mod toolcalls;

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{Cli, Command};

/// Runs the command line; `Ok` carries the exit code of a completed command.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Gate(args) => gate::run(*args),
        Command::Profile(args) => profile::run(args),
        Command::Toolcalls(args) => toolcalls::run(args),
        Command::Run(args) => run::run(*args),
        Command::Clean(args) => clean::run(args),
        Command::Model(args) => model::run(args),
        Command::Pr(args) => pr::run(*args),
        Command::Probe(args) => probe::run(args),
        Command::Backlog(args) => backlog::run(*args),
    }
}

/// Writes a report file, creating its directory; every known secret in `text` is replaced.
fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(path, crate::secret::redact(text))
        .with_context(|| format!("write {}", path.display()))
}
