//! The only place that starts processes.
//!
//! Every child runs in its own process group with stdin closed. A timeout or a cancellation (Ctrl-C) kills the
//! whole group, first politely (SIGTERM), then for sure (SIGKILL); when the main process exits normally the group
//! is killed too, so a test that leaves a server or a `sleep` behind cannot outlive its step. Output is written in
//! full to disk (a combined log, and stdout alone for parsers) and kept in memory only as a capped head and tail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bytes of output kept in memory from the start of a run.
const HEAD_CAP: usize = 16 * 1024;
/// Bytes of output kept in memory from the end of a run.
const TAIL_CAP: usize = 48 * 1024;
/// How long a group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long we wait for pipes to close after the main process exited and its group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What to run.
#[derive(Clone, Debug)]
pub struct Spec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Where the combined stdout and stderr go, in full.
    pub log_path: PathBuf,
    /// Where stdout alone goes, in full (for parsers). With `merge_output`, everything goes there.
    pub stdout_path: PathBuf,
    /// Give the child one pipe for stdout and stderr, so their order is exactly the order of writes (cargo
    /// prints a test binary's name on stderr and its results on stdout; two pipes can reorder them).
    pub merge_output: bool,
}

/// How a run ended.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// The start of the combined output (capped).
    pub head: String,
    /// The end of the combined output (capped).
    pub tail: String,
    /// True when head and tail do not hold everything (the log file does).
    pub truncated: bool,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// The last `lines` lines of output.
    pub fn tail_lines(&self, lines: usize) -> String {
        let text = if self.truncated {
            &self.tail
        } else {
            &self.head_and_tail()
        };
        let all: Vec<&str> = text.lines().collect();
        let start = all.len().saturating_sub(lines);
        all[start..].join("\n")
    }

    /// Everything we kept in memory, in order.
    pub fn head_and_tail(&self) -> String {
        if self.truncated {
            format!(
                "{}\n[... output cut, see the log file ...]\n{}",
                self.head, self.tail
            )
        } else {
            format!("{}{}", self.head, self.tail)
        }
    }
}

/// The command as a person would type it, for logs and reports.
pub fn quote_argv(argv: &[String]) -> String {
    shell_words::join(argv)
}

/// Whether `program` can be found on `path` (a PATH value), or is an existing file when it has a slash.
pub fn find_program(program: &str, path: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return p.is_file().then_some(p);
    }
    let path = path
        .map(str::to_owned)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    which::which_in(program, Some(path), cwd).ok()
}

#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl Capture {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let room = HEAD_CAP.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        while self.tail.len() > TAIL_CAP {
            self.tail.pop_front();
        }
    }
}

/// Runs `spec` to the end, a timeout, or cancellation. An `Err` means the process could not be started.
pub async fn run(spec: &Spec, cancel: &CancellationToken) -> Result<Outcome> {
    let (program, args) = spec.argv.split_first().context("empty command line")?;
    let mut log = tokio::fs::File::create(&spec.log_path)
        .await
        .with_context(|| format!("create log file {}", spec.log_path.display()))?;
    let mut out = tokio::fs::File::create(&spec.stdout_path)
        .await
        .with_context(|| format!("create log file {}", spec.stdout_path.display()))?;

    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let merged = if spec.merge_output {
        let (reader, writer) = std::io::pipe().context("create an output pipe")?;
        cmd.stdout(writer.try_clone().context("share the output pipe")?)
            .stderr(writer);
        Some(reader)
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    tracing::info!(cwd = %spec.cwd.display(), "run {}", quote_argv(&spec.argv));
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("start `{}`", quote_argv(&spec.argv)))?;
    // The command holds our copies of the pipe's write end: drop it, or the reader never sees the end.
    drop(cmd);
    let pgid = child.id().map(|id| id as i32);
    let guard = GroupGuard(pgid);

    let (tx, mut rx) = mpsc::channel::<(bool, Vec<u8>)>(64);
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, true, tx.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, false, tx.clone())));
    }
    if let Some(reader) = merged {
        let tx = tx.clone();
        readers.push(tokio::task::spawn_blocking(move || {
            pump_blocking(reader, tx)
        }));
    }
    drop(tx);

    let writer = tokio::spawn(async move {
        let mut cap = Capture::default();
        while let Some((is_stdout, bytes)) = rx.recv().await {
            let _ = log.write_all(&bytes).await;
            if is_stdout {
                let _ = out.write_all(&bytes).await;
            }
            cap.push(&bytes);
        }
        let _ = log.flush().await;
        let _ = out.flush().await;
        cap
    });

    let mut outcome = Outcome::default();
    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let status = tokio::select! {
        status = child.wait() => Some(status),
        _ = &mut deadline => { outcome.timed_out = true; None }
        _ = cancel.cancelled() => { outcome.cancelled = true; None }
    };
    let status = match status {
        Some(status) => Some(status.context("wait for child")?),
        None => {
            guard.signal(libc::SIGTERM);
            match tokio::time::timeout(KILL_GRACE, child.wait()).await {
                Ok(status) => status.ok(),
                Err(_) => {
                    guard.signal(libc::SIGKILL);
                    child.wait().await.ok()
                }
            }
        }
    };
    // Whatever the main process left behind in its group goes with it.
    guard.signal(libc::SIGKILL);
    if let Some(status) = status {
        use std::os::unix::process::ExitStatusExt;
        outcome.exit_code = status.code();
        outcome.signal = status.signal();
    }
    for reader in readers {
        // A grandchild that left the group may hold a pipe open: do not wait for it forever.
        if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
            tracing::warn!(
                "output of `{}` still open after exit; stopped reading",
                program
            );
        }
    }
    let cap = writer.await.unwrap_or_default();
    outcome.duration = start.elapsed();
    outcome.truncated = cap.total > cap.head.len() + cap.tail.len();
    outcome.head = String::from_utf8_lossy(&cap.head).into_owned();
    let tail: Vec<u8> = cap.tail.iter().copied().collect();
    outcome.tail = String::from_utf8_lossy(&tail).into_owned();
    Ok(outcome)
}

async fn pump<R: tokio::io::AsyncRead + Unpin>(
    mut reader: R,
    is_stdout: bool,
    tx: mpsc::Sender<(bool, Vec<u8>)>,
) {
    // Whole lines only (except a last unterminated one), so the combined log interleaves the two streams
    // line by line and parsers reading it never see a line cut in two by the other stream.
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                let cut = match pending.iter().rposition(|b| *b == b'\n') {
                    Some(i) => i + 1,
                    // A very long line without a newline is sent as it is, not held forever.
                    None if pending.len() > 64 * 1024 => pending.len(),
                    None => continue,
                };
                let rest = pending.split_off(cut);
                let line = std::mem::replace(&mut pending, rest);
                if tx.send((is_stdout, line)).await.is_err() {
                    return;
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = tx.send((is_stdout, pending)).await;
    }
}

/// [`pump`] for a blocking reader (the merged pipe), on a blocking thread.
fn pump_blocking(mut reader: std::io::PipeReader, tx: mpsc::Sender<(bool, Vec<u8>)>) {
    use std::io::Read;
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                let cut = match pending.iter().rposition(|b| *b == b'\n') {
                    Some(i) => i + 1,
                    None if pending.len() > 64 * 1024 => pending.len(),
                    None => continue,
                };
                let rest = pending.split_off(cut);
                let line = std::mem::replace(&mut pending, rest);
                if tx.blocking_send((true, line)).is_err() {
                    return;
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = tx.blocking_send((true, pending));
    }
}

/// Kills the process group when dropped, so an early return or a panic cannot leak children.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn signal(&self, sig: i32) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; a group that is gone returns ESRCH, which we ignore.
            unsafe {
                libc::killpg(pgid, sig);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, argv: &[&str], timeout: Duration) -> Spec {
        Spec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: dir.to_path_buf(),
            env: vec![],
            timeout,
            log_path: dir.join("log"),
            stdout_path: dir.join("stdout"),
            merge_output: false,
        }
    }

    #[tokio::test]
    async fn output_goes_to_disk_in_full_and_to_memory_capped() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(
            dir.path(),
            &["sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done; echo err >&2; exit 3"],
            Duration::from_secs(30),
        );
        let o = run(&s, &CancellationToken::new()).await.unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert!(o.truncated);
        assert!(o.head.starts_with("line0\n"));
        assert!(o.tail.trim_end().ends_with("err"));
        let stdout = std::fs::read_to_string(dir.path().join("stdout")).unwrap();
        assert_eq!(stdout.lines().count(), 20000);
        assert!(!stdout.contains("err"));
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        assert_eq!(log.lines().count(), 20001);
    }

    #[tokio::test]
    async fn merged_output_keeps_the_order_of_writes_across_stdout_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(
            dir.path(),
            &[
                "sh",
                "-c",
                "i=0; while [ $i -lt 300 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done",
            ],
            Duration::from_secs(30),
        );
        s.merge_output = true;
        let o = run(&s, &CancellationToken::new()).await.unwrap();
        assert_eq!(o.exit_code, Some(0));
        let want: Vec<String> = (0..300)
            .flat_map(|i| [format!("out{i}"), format!("err{i}")])
            .collect();
        let got = std::fs::read_to_string(dir.path().join("stdout")).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("vouch-proc-test-{}", std::process::id());
        let script = format!("sleep 1000 & exec -a {marker} sleep 1000");
        let s = spec(
            dir.path(),
            &["bash", "-c", &script],
            Duration::from_millis(300),
        );
        let o = run(&s, &CancellationToken::new()).await.unwrap();
        assert!(o.timed_out);
        assert!(!o.success());
        std::thread::sleep(Duration::from_millis(200));
        let alive = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        assert!(alive.stdout.is_empty(), "left behind: {:?}", alive);
    }

    #[tokio::test]
    async fn cancellation_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path(), &["sleep", "1000"], Duration::from_secs(600));
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c2.cancel();
        });
        let o = run(&s, &cancel).await.unwrap();
        assert!(o.cancelled);
        assert!(o.duration < Duration::from_secs(10));
    }

    #[test]
    fn a_missing_program_is_not_found() {
        assert!(find_program("surely-no-such-tool-vouch", None, Path::new(".")).is_none());
        assert!(find_program("sh", None, Path::new(".")).is_some());
    }
}
