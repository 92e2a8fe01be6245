//! Logging setup: `tracing` to stderr, quiet by default, `-v`/`-vv` or `RUST_LOG` for more.

use tracing_subscriber::EnvFilter;

/// Starts the global subscriber. Safe to call more than once (later calls are ignored).
pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "vouch=info",
        _ => "vouch=debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
