//! `vouch`: parse arguments, start logging, run the command, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Not a command for people: what the sandbox's proof runs inside the sandbox (`vouch::sandbox::prove`).
    let args: Vec<String> = std::env::args().skip(1).take(3).collect();
    if let [probe, what, addr] = args.as_slice() {
        if probe == vouch::sandbox::PROBE_SUBCOMMAND && what == "connect" {
            return ExitCode::from(vouch::sandbox::probe_connect(addr) as u8);
        }
    }
    let cli = vouch::cli::Cli::parse();
    // The gate mounts its copy-on-write layers in a namespace of vouch's own, entered while one thread runs.
    if cli.command.runs_the_gate() {
        vouch::layers::enter();
    }
    // Every secret vouch can see is known before anything is printed, logged, written or sent.
    vouch::secret::learn_environment();
    vouch::logging::init_with(cli.verbose, cli.quiet());
    let code = match vouch::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let code = vouch::error::exit_code_of(&err);
            let mut text = format!("error: {err:#}\n");
            if let Some(hint) = vouch::error::hint_of(&err) {
                text.push_str(&format!("hint: {hint}\n"));
            }
            // Nowhere is left to report a failure to write the error itself; the exit code still says it.
            let mut stderr = vouch::commands::output::stderr();
            let _ = stderr.print(&text).and_then(|()| stderr.finish());
            code
        }
    };
    ExitCode::from(code as u8)
}
