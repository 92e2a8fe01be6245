//! `vouch`: parse arguments, start logging, run the command, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = vouch::cli::Cli::parse();
    vouch::logging::init(cli.verbose);
    let code = match vouch::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let code = vouch::error::exit_code_of(&err);
            eprintln!("error: {err:#}");
            if let Some(hint) = vouch::error::hint_of(&err) {
                eprintln!("hint: {hint}");
            }
            code
        }
    };
    ExitCode::from(code as u8)
}
