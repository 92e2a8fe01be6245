//! The sandbox proves it is on: a forbidden write and a connect tried from inside, once per process.

use std::path::Path;

use super::*;

/// Where vouch's own binary is inside the sandbox while it proves the sandbox.
pub(super) const PROBE_EXE: &str = "/.vouch/vouch";

/// The hidden subcommand the proof runs inside the sandbox: `vouch sandbox-probe connect ADDR`.
pub const PROBE_SUBCOMMAND: &str = "sandbox-probe";

/// One try of [`Sandbox::prove`].
pub(super) fn prove_once(sandbox: &Sandbox) -> Result<(), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find vouch's own binary: {e}"))?;
    let outside = tempfile::Builder::new()
        .prefix("vouch-proof-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory to prove the sandbox with: {e}"))?;
    let dir = outside.path().join("read-only");
    std::fs::create_dir(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on the loopback to prove the sandbox with: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("the listener's address: {e}"))?;
    let policy = Policy {
        readable: vec![dir.clone()],
        read_only: vec![(exe, PROBE_EXE.into())],
        ..Policy::default()
    };
    let script =
        "if echo pwned > \"$1/pwned\"; then echo write=done; else echo write=refused; fi; \
                  exec \"$2\" \"$3\" connect \"$4\"";
    let argv: Vec<String> = [
        "sh",
        "-c",
        script,
        "sh",
        &path_str(&dir),
        PROBE_EXE,
        PROBE_SUBCOMMAND,
        &addr.to_string(),
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    // The proof runs without caps: it is vouch's own, and a cap must not be what refuses it.
    let argv = match &sandbox.bwrap {
        Some(bwrap) => bwrap_argv(
            bwrap,
            &argv,
            Path::new("/"),
            &policy,
            &Host::current(1 << 20),
        ),
        None => return Ok(()),
    };
    let (program, args) = argv.split_first().ok_or("empty command line")?;
    let out = std::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("bubblewrap did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran = format!(
        "exit {}, output {:?}",
        out.status
            .code()
            .map_or_else(|| "by a signal".to_owned(), |c| c.to_string()),
        format!("{} {}", stdout.trim(), stderr.trim()).trim()
    );
    listener.set_nonblocking(true).ok();
    if dir.join("pwned").exists() {
        return Err(format!(
            "a write to {} (read-only inside) went through",
            dir.display()
        ));
    }
    if listener.accept().is_ok() || stdout.contains("connect=reached") {
        return Err(format!(
            "a connect to {addr} outside the sandbox went through"
        ));
    }
    let refused_write = stdout.contains("write=refused")
        && ["Read-only file system", "Permission denied"]
            .iter()
            .any(|e| stderr.contains(e));
    if !refused_write {
        return Err(format!(
            "the forbidden write was not tried, or failed for another reason than being refused ({ran})"
        ));
    }
    if !stdout.contains("connect=refused") {
        return Err(format!("the forbidden connect was not tried ({ran})"));
    }
    Ok(())
}

/// `vouch sandbox-probe connect ADDR`, run inside the sandbox by [`Sandbox::prove`]: connects and prints
/// `connect=reached`, or `connect=refused: ERROR` when the connect was tried and refused (connection
/// refused, network unreachable, permission denied). Any other error is printed as `connect=error: ...`,
/// which the proof does not count as refused.
pub fn probe_connect(addr: &str) -> i32 {
    use std::io::ErrorKind;
    let Ok(addr) = addr.parse::<std::net::SocketAddr>() else {
        println!("connect=error: {addr:?} is not an address");
        return 2;
    };
    match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)) {
        Ok(_) => {
            println!("connect=reached");
            0
        }
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::NetworkUnreachable
                    | ErrorKind::HostUnreachable
                    | ErrorKind::PermissionDenied
                    | ErrorKind::AddrNotAvailable
            ) =>
        {
            println!("connect=refused: {e}");
            1
        }
        Err(e) => {
            println!("connect=error: {e}");
            1
        }
    }
}
