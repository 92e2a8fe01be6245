//! One module per subcommand; [`run`] dispatches and returns the exit code.

pub mod clean;
pub mod gate;
pub mod profile;
pub mod run;
pub mod toolcalls;

use anyhow::Result;

use crate::cli::{Cli, Command};

/// Runs the command line; `Ok` carries the exit code of a completed command.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Gate(args) => gate::run(*args),
        Command::Profile(args) => profile::run(args),
        Command::Toolcalls(args) => toolcalls::run(args),
        Command::Run(args) => run::run(*args),
        Command::Clean(args) => clean::run(args),
    }
}
