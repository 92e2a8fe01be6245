//! The only place that starts processes.
//!
//! Every child runs in its own process group with stdin closed. A timeout or a cancellation (Ctrl-C) kills the
//! whole group, first politely (SIGTERM), then for sure (SIGKILL); when the main process exits normally the group
//! is killed too, so a test that leaves a server or a `sleep` behind cannot outlive its step.
//!
//! Output goes straight from the child to files, never through vouch: the full log stays on disk, only its head
//! and tail are read back into memory, nothing can block on a pipe that a stray grandchild keeps open, and test
//! runners run as fast as they do with output redirected to a file (measurably faster than into a pipe).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

/// Bytes of output kept in memory from the start of a run.
const HEAD_CAP: u64 = 16 * 1024;
/// Bytes of output kept in memory from the end of a run.
const TAIL_CAP: u64 = 48 * 1024;
/// How long a group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// What to run.
#[derive(Clone, Debug)]
pub struct Spec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Where the combined stdout and stderr go, in full.
    pub log_path: PathBuf,
    /// Where stdout alone goes, in full (for parsers). With `merge_output` it is the combined log.
    pub stdout_path: PathBuf,
    /// stdout and stderr into one file, in the exact order of writes (cargo prints a test binary's name on
    /// stderr and its results on stdout). Without it, stdout and stderr go to files of their own and the log is
    /// stdout followed by stderr.
    pub merge_output: bool,
    /// What must stay alive while the command runs (the mounts of its places, see
    /// [`layered`](crate::gate::layered)).
    pub hold: Hold,
    /// The caps of a command under test (none for vouch's own helpers).
    pub caps: Caps,
}

/// Limits on what a command under test may use, each named in [`Outcome::hit`] when it was reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// Processes and threads at once: a pids cgroup of its own where vouch can make one (the sandbox also
    /// sets RLIMIT_NPROC inside its user namespace, see [`crate::sandbox`]).
    pub pids: Option<u64>,
    /// The largest file it may write (RLIMIT_FSIZE): past it a write fails (EFBIG) or kills (SIGXFSZ).
    pub file_size: Option<u64>,
    /// Bytes of the log kept from each end; the middle is dropped, with a line saying how much.
    pub log: Option<u64>,
}

/// A size for people: `4 GiB`, `512 MiB`, `100 KiB`, `17 bytes`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

/// Something kept alive for as long as a command runs; dropped with its [`Spec`].
#[derive(Clone, Default)]
pub struct Hold(Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>);

impl Hold {
    pub fn new(held: std::sync::Arc<dyn std::any::Any + Send + Sync>) -> Hold {
        Hold(Some(held))
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Hold(..)"
        } else {
            "Hold(none)"
        })
    }
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
    /// The caps the command reached, as the report names them ("hit the file-size cap (4 GiB)").
    pub hit: Vec<String>,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// The last `lines` lines of output.
    pub fn tail_lines(&self, lines: usize) -> String {
        let text = if self.truncated {
            self.tail.clone()
        } else {
            self.head_and_tail()
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

/// A step's log file, and its directory when that does not exist yet (a fresh cache has none).
fn create(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("create log directory {}", dir.display()))?;
    }
    File::create(path).with_context(|| format!("create log file {}", path.display()))
}

fn stderr_path(spec: &Spec) -> PathBuf {
    spec.stdout_path.with_extension("stderr")
}

/// Runs `spec` to the end, a timeout, or cancellation. An `Err` means the process could not be started.
pub async fn run(spec: &Spec, cancel: &CancellationToken) -> Result<Outcome> {
    run_with(spec, cancel, false).await
}

/// As [`run`], but the child gets only `spec.env`, none of vouch's own environment.
pub async fn run_clean_env(spec: &Spec, cancel: &CancellationToken) -> Result<Outcome> {
    run_with(spec, cancel, true).await
}

async fn run_with(spec: &Spec, cancel: &CancellationToken, clear_env: bool) -> Result<Outcome> {
    let (program, args) = spec.argv.split_first().context("empty command line")?;
    let mut cmd = tokio::process::Command::new(program);
    if clear_env {
        cmd.env_clear();
    }
    cmd.args(args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if spec.merge_output {
        let log = create(&spec.log_path)?;
        cmd.stdout(log.try_clone().context("share the log file")?)
            .stderr(log);
    } else {
        cmd.stdout(create(&spec.stdout_path)?)
            .stderr(create(&stderr_path(spec))?);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let cgroup = spec.caps.pids.and_then(PidsCgroup::new);
    limit(&mut cmd, spec.caps.file_size, cgroup.as_ref());
    tracing::info!(cwd = %spec.cwd.display(), "run {}", quote_argv(&spec.argv));
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("start `{}`", quote_argv(&spec.argv)))?;
    drop(cmd);
    let guard = GroupGuard(child.id().map(|id| id as i32));

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
    outcome.duration = start.elapsed();
    if spec.merge_output {
        if spec.stdout_path != spec.log_path {
            let _ = std::fs::remove_file(&spec.stdout_path);
            std::fs::hard_link(&spec.log_path, &spec.stdout_path)
                .or_else(|_| std::fs::copy(&spec.log_path, &spec.stdout_path).map(|_| ()))
                .context("write the stdout log")?;
        }
    } else {
        let mut log = create(&spec.log_path)?;
        let mut ends_with_newline = true;
        for part in [spec.stdout_path.clone(), stderr_path(spec)] {
            if let Ok(mut f) = File::open(&part) {
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                if len == 0 {
                    continue;
                }
                if !ends_with_newline {
                    std::io::Write::write_all(&mut log, b"\n")?;
                }
                std::io::copy(&mut f, &mut log).context("write the combined log")?;
                let mut last = [0u8; 1];
                f.seek(SeekFrom::Start(len - 1))?;
                f.read_exact(&mut last)?;
                ends_with_newline = last[0] == b'\n';
            }
        }
    }
    if let (Some(group), Some(max)) = (cgroup, spec.caps.pids) {
        if group.finish() {
            outcome
                .hit
                .push(format!("hit the process cap ({max} processes and threads)"));
        }
    }
    if let Some(max) = spec.caps.file_size {
        if outcome.signal == Some(libc::SIGXFSZ) || mentions_file_size_limit(&spec.log_path) {
            outcome
                .hit
                .push(format!("hit the file-size cap ({})", human_size(max)));
        }
    }
    if let Some(keep) = spec.caps.log {
        let mut dropped = 0;
        for path in [&spec.log_path, &spec.stdout_path] {
            // The stdout log of merged output is a hard link of the log: compacted once.
            match compact(path, keep) {
                Ok(n) => dropped = dropped.max(n),
                Err(e) => tracing::warn!("cap the log {}: {e:#}", path.display()),
            }
        }
        if dropped > 0 {
            outcome.hit.push(format!(
                "hit the log cap: kept the first and last {} of the output, dropped {dropped} bytes between",
                human_size(keep)
            ));
        }
    }
    // The log's ends go into reports, clipped: a secret the command printed goes before it could be cut in
    // two (the gate redacts every other file it leaves once its steps have ended). After the log cap, so a
    // gigabyte of output is not read whole.
    if let Err(e) = crate::secret::known().file(&spec.log_path) {
        tracing::warn!("redact {}: {e}", spec.log_path.display());
    }
    let (head, tail, truncated) = read_ends(&spec.log_path)?;
    outcome.head = head;
    outcome.tail = tail;
    outcome.truncated = truncated;
    Ok(outcome)
}

/// Sets the file-size limit and joins the pids cgroup in the child, before it runs anything.
fn limit(cmd: &mut tokio::process::Command, file_size: Option<u64>, cgroup: Option<&PidsCgroup>) {
    if file_size.is_none() && cgroup.is_none() {
        return;
    }
    let procs = cgroup.map(|g| std::os::fd::AsRawFd::as_raw_fd(&g.procs));
    // SAFETY: setrlimit and write are async-signal-safe; the closure allocates nothing and touches only the
    // child's own limits and an already open file.
    #[allow(
        unsafe_code,
        reason = "pre_exec is how a command gets its file-size limit and its pids cgroup before it starts"
    )]
    unsafe {
        cmd.pre_exec(move || {
            if let Some(max) = file_size {
                let lim = libc::rlimit {
                    rlim_cur: max,
                    rlim_max: max,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(fd) = procs {
                // "0" is the writing process itself.
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Whether a log says a write failed on the file-size limit (EFBIG from a runtime that ignores SIGXFSZ, like
/// Python's, or a runner reporting its child's SIGXFSZ). Only the ends are read.
fn mentions_file_size_limit(log: &Path) -> bool {
    let Ok((head, tail, _)) = read_ends(log) else {
        return false;
    };
    ["File too large", "SIGXFSZ", "File size limit exceeded"]
        .iter()
        .any(|needle| head.contains(needle) || tail.contains(needle))
}

/// Cuts `path` down to its first and last `keep` bytes, with a line in between saying how many were dropped;
/// returns that number (0 when the file was small enough or is gone).
fn compact(path: &Path, keep: u64) -> Result<u64> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(0);
    };
    let len = meta.len();
    if !meta.is_file() || len <= 2 * keep {
        return Ok(0);
    }
    let dropped = len - 2 * keep;
    let mut f = File::options()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    let mut tail = Vec::with_capacity(keep as usize);
    f.seek(SeekFrom::Start(len - keep))?;
    (&mut f).take(keep).read_to_end(&mut tail)?;
    let note = format!(
        "\n[vouch: {dropped} bytes of output dropped here, the log keeps the first and last {}]\n",
        human_size(keep)
    );
    f.seek(SeekFrom::Start(keep))?;
    std::io::Write::write_all(&mut f, note.as_bytes())?;
    std::io::Write::write_all(&mut f, &tail)?;
    f.set_len(keep + note.len() as u64 + tail.len() as u64)?;
    Ok(dropped)
}

/// A pids cgroup of one command's own, where the machine lets vouch make one (cgroup v2 or v1's `pids`
/// hierarchy, under vouch's own cgroup): unlike RLIMIT_NPROC it counts only the command's processes, and
/// holds for root too.
struct PidsCgroup {
    dir: PathBuf,
    procs: File,
}

impl PidsCgroup {
    /// A new cgroup allowing `max` tasks, or None where none can be made.
    fn new(max: u64) -> Option<PidsCgroup> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let base = cgroup_base()?;
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = base.join(format!("vouch-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let made = std::fs::write(dir.join("pids.max"), max.to_string())
            .and_then(|()| File::options().write(true).open(dir.join("cgroup.procs")));
        match made {
            Ok(procs) => Some(PidsCgroup { dir, procs }),
            Err(e) => {
                tracing::debug!("pids cgroup {}: {e}", dir.display());
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// Removes the cgroup once its processes are gone; whether the cap refused a fork.
    fn finish(self) -> bool {
        let hit = std::fs::read_to_string(self.dir.join("pids.events"))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("max ")
                        .and_then(|n| n.trim().parse::<u64>().ok())
                })
            })
            .is_some_and(|n| n > 0);
        drop(self.procs);
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        hit
    }
}

/// Removes the empty cgroups earlier vouch processes that are gone left in `base` (a command whose last
/// processes took longer to go than [`PidsCgroup::finish`] waits); one still in use is not empty and stays.
fn remove_stale_cgroups(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("vouch-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Where vouch may make pids cgroups: its own cgroup in the v2 hierarchy when it has the pids controller,
/// else its cgroup in v1's pids hierarchy; tried once per process (a directory made and removed).
fn cgroup_base() -> Option<PathBuf> {
    static BASE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let candidates = own.lines().filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            match controllers {
                "" => Some(Path::new("/sys/fs/cgroup").join(path)),
                c if c.split(',').any(|c| c == "pids") => {
                    Some(Path::new("/sys/fs/cgroup/pids").join(path))
                }
                _ => None,
            }
        });
        for base in candidates {
            let probe = base.join(format!("vouch-probe-{}", std::process::id()));
            if std::fs::create_dir(&probe).is_err() {
                continue;
            }
            let works = probe.join("pids.max").exists();
            let _ = std::fs::remove_dir(&probe);
            if works {
                remove_stale_cgroups(&base);
                return Some(base);
            }
        }
        None
    })
    .clone()
}

/// What to start in the background: a server that runs until it is stopped.
#[derive(Clone, Debug)]
pub struct ServiceSpec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Where the combined stdout and stderr go.
    pub log_path: PathBuf,
}

/// A process started with [`spawn_service`]. Dropping it kills its process group; [`Service::stop`] asks
/// first. The child also gets SIGKILL when the thread that started it dies (`PR_SET_PDEATHSIG`), so a vouch
/// killed with SIGKILL leaves no server behind: start services from the command's main future, not from a
/// blocking-pool thread (those come and go).
pub struct Service {
    child: tokio::process::Child,
    group: GroupGuard,
}

/// Starts `spec` in its own process group with stdin closed, output to its log file.
pub fn spawn_service(spec: &ServiceSpec) -> Result<Service> {
    let (program, args) = spec.argv.split_first().context("empty command line")?;
    let log = create(&spec.log_path)?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("share the log file")?)
        .stderr(log)
        .process_group(0)
        .kill_on_drop(true);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    // SAFETY: prctl is async-signal-safe and touches nothing of the parent's.
    #[allow(
        unsafe_code,
        reason = "pre_exec is how a service learns to die with vouch (PR_SET_PDEATHSIG)"
    )]
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    tracing::info!(cwd = %spec.cwd.display(), "start {}", quote_argv(&spec.argv));
    let child = cmd
        .spawn()
        .with_context(|| format!("start `{}`", quote_argv(&spec.argv)))?;
    let group = GroupGuard(child.id().map(|id| id as i32));
    Ok(Service { child, group })
}

impl Service {
    /// The process id (also its process group's).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM to the group, SIGKILL after a grace period, and whatever is left of the group goes too.
    pub async fn stop(mut self) {
        self.group.signal(libc::SIGTERM);
        if tokio::time::timeout(KILL_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.group.signal(libc::SIGKILL);
            let _ = self.child.wait().await;
        }
        self.group.signal(libc::SIGKILL);
    }
}

/// The first HEAD_CAP and last TAIL_CAP bytes of a file (all of it when small), lossily as text.
fn read_ends(path: &Path) -> Result<(String, String, bool)> {
    let mut f = File::open(path).with_context(|| format!("read {}", path.display()))?;
    let len = f.metadata()?.len();
    if len <= HEAD_CAP + TAIL_CAP {
        let mut all = Vec::new();
        f.read_to_end(&mut all)?;
        return Ok((
            String::from_utf8_lossy(&all).into_owned(),
            String::new(),
            false,
        ));
    }
    let mut head = vec![0u8; HEAD_CAP as usize];
    f.read_exact(&mut head)?;
    f.seek(SeekFrom::Start(len - TAIL_CAP))?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail)?;
    Ok((
        String::from_utf8_lossy(&head).into_owned(),
        String::from_utf8_lossy(&tail).into_owned(),
        true,
    ))
}

/// Sends `sig` to the process group `pgid` (a child started in its own group: its pid); a group that is
/// gone is ignored. For callers that own a child's group, e.g. to forward Ctrl-C as SIGINT.
pub fn signal_group(pgid: u32, sig: i32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let group = GroupGuard(Some(pgid));
        group.signal(sig);
        // The guard kills the group on drop: this one only signals.
        std::mem::forget(group);
    }
}

/// Kills the process group when dropped, so an early return or a panic cannot leak children.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn signal(&self, sig: i32) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; a group that is gone returns ESRCH, which we ignore.
            #[allow(
                unsafe_code,
                reason = "libc::killpg is the one call that signals a whole process group"
            )]
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
            hold: Default::default(),
            caps: Caps::default(),
        }
    }

    #[tokio::test]
    async fn a_capped_command_keeps_its_logs_ends_and_names_the_caps_it_hit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(
            dir.path(),
            &[
                "sh",
                "-c",
                "echo first; i=0; while [ $i -lt 5000 ]; do echo middle$i; i=$((i+1)); done; echo last; \
                 head -c 100000 /dev/zero > big",
            ],
            Duration::from_secs(30),
        );
        s.merge_output = true;
        s.stdout_path = s.log_path.clone();
        s.caps = Caps {
            pids: None,
            file_size: Some(64 << 10),
            log: Some(1 << 10),
        };
        let o = run(&s, &CancellationToken::new()).await.unwrap();
        let log = std::fs::read_to_string(&s.log_path).unwrap();
        assert!(log.starts_with("first\n"), "{log}");
        assert!(log.contains("last\n"), "{log}");
        assert!(log.contains("bytes of output dropped here"), "{log}");
        assert!(log.len() < 3 << 10, "{}", log.len());
        assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 64 << 10);
        assert_eq!(o.hit.len(), 2, "{:?}", o.hit);
        assert!(o.hit[0].contains("file-size cap (64 KiB)"), "{:?}", o.hit);
        assert!(o.hit[1].contains("log cap"), "{:?}", o.hit);
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
    async fn logs_go_into_a_directory_that_does_not_exist_yet() {
        // A fresh cache has no logs/ directory: `vouch model setup` failed its very first step on it.
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("cache/logs");
        let mut s = spec(
            dir.path(),
            &["sh", "-c", "echo hi"],
            Duration::from_secs(30),
        );
        s.log_path = logs.join("step.log");
        s.stdout_path = logs.join("step.stdout");
        let o = run(&s, &CancellationToken::new()).await.unwrap();
        assert_eq!(o.exit_code, Some(0));
        assert_eq!(
            std::fs::read_to_string(logs.join("step.log")).unwrap(),
            "hi\n"
        );
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

    #[tokio::test]
    async fn a_service_runs_until_stopped_and_its_group_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("vouch-service-test-{}", std::process::id());
        let spec = ServiceSpec {
            argv: [
                "bash",
                "-c",
                &format!("sleep 1000 & exec -a {marker} sleep 1000"),
            ]
            .map(String::from)
            .to_vec(),
            cwd: dir.path().to_path_buf(),
            env: vec![],
            log_path: dir.path().join("service.log"),
        };
        let alive = |m: &str| {
            !std::process::Command::new("pgrep")
                .args(["-f", m])
                .output()
                .unwrap()
                .stdout
                .is_empty()
        };
        let mut service = spawn_service(&spec).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(service.exited().is_none());
        assert!(alive(&marker));
        service.stop().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!alive(&marker), "left behind after stop");

        let marker2 = format!("{marker}-drop");
        let spec = ServiceSpec {
            argv: ["bash", "-c", &format!("exec -a {marker2} sleep 1000")]
                .map(String::from)
                .to_vec(),
            ..spec
        };
        let service = spawn_service(&spec).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(service);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!alive(&marker2), "left behind after drop");
    }

    #[test]
    fn a_missing_program_is_not_found() {
        assert!(find_program("surely-no-such-tool-vouch", None, Path::new(".")).is_none());
        assert!(find_program("sh", None, Path::new(".")).is_some());
    }
}
