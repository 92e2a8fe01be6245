//! Building `llama-server` from the llama-cpp-python source package, which vendors the whole llama.cpp tree:
//! download it (sha256 checked), unpack it, configure with cmake, build only the `llama-server` target (through
//! ccache when there is one), install the binary into the cache.
//!
//! The build is portable on purpose (`GGML_NATIVE=OFF`, AVX2): a native build dies on AMX-capable Xeons at
//! its warm-up run (a general protection fault in `ggml_backend_amx_mul_mat`), and AVX-512 is no faster here.
//! Missing tools are named; as root, with `--install-tools` or a yes at the prompt, apt-get installs them.

use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::assemble::hash_file;
use super::pip;
use super::progress::{Phase, Unit};
use super::Cache;
use crate::error::VouchError;
use crate::process;
use crate::ui::Ui;

/// The source package and its sha256 (76.6 MB; llama.cpp at commit 0c1e570).
pub const SDIST_PACKAGE: &str = "llama-cpp-python";
pub const SDIST_VERSION: &str = "0.3.36";
pub const SDIST_SHA256: &str = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e";

/// Longest the configure and the build may take (a cold build is about 5.5 minutes on 2 idle cores).
const BUILD_TIMEOUT: Duration = Duration::from_secs(90 * 60);
/// Longest `--version`, tar or apt-get may take.
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);
const APT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often the build log is read for cmake's percentage.
const POLL: Duration = Duration::from_millis(500);

/// A tool the build needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Cmake,
    /// `c++`, `g++` or `clang++`.
    Compiler,
    Make,
    Python,
    Pip,
    Tar,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cmake => "cmake",
            Tool::Compiler => "a C++ compiler (g++)",
            Tool::Make => "make",
            Tool::Python => "python3",
            Tool::Pip => "pip (python3 -m pip)",
            Tool::Tar => "tar",
        }
    }

    /// The Debian package that brings it.
    pub fn apt_package(self) -> &'static str {
        match self {
            Tool::Cmake => "cmake",
            Tool::Compiler => "g++",
            Tool::Make => "make",
            Tool::Python => "python3",
            Tool::Pip => "python3-pip",
            Tool::Tar => "tar",
        }
    }
}

/// Whether to install missing tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallTools {
    /// `--install-tools`: install as root without asking.
    Yes,
    /// Ask on the terminal (no terminal: no).
    Ask,
    No,
}

fn on_path(program: &str) -> bool {
    process::find_program(program, None, Path::new(".")).is_some()
}

/// The tools the build lacks; `pip_works` says whether `python3 -m pip` answered.
pub fn missing_tools(pip_works: bool) -> Vec<Tool> {
    let mut missing = Vec::new();
    if !on_path("cmake") {
        missing.push(Tool::Cmake);
    }
    if !["c++", "g++", "clang++"].iter().any(|c| on_path(c)) {
        missing.push(Tool::Compiler);
    }
    if !on_path("make") {
        missing.push(Tool::Make);
    }
    if !on_path("python3") {
        missing.push(Tool::Python);
    }
    if !pip_works {
        missing.push(Tool::Pip);
    }
    if !on_path("tar") {
        missing.push(Tool::Tar);
    }
    missing
}

/// The apt-get command that installs `missing` (and ccache, which makes rebuilds take seconds).
pub fn apt_command(missing: &[Tool]) -> Vec<String> {
    let mut argv: Vec<String> = ["apt-get", "install", "-y", "--no-install-recommends"]
        .map(String::from)
        .to_vec();
    argv.extend(missing.iter().map(|t| t.apt_package().to_string()));
    if !on_path("ccache") {
        argv.push("ccache".into());
    }
    argv
}

fn is_root() -> bool {
    // SAFETY: geteuid only reads the process's effective user id.
    #[allow(unsafe_code, reason = "libc::geteuid has no safe wrapper in std")]
    unsafe {
        libc::geteuid() == 0
    }
}

fn spec(argv: Vec<String>, cwd: &Path, log: PathBuf, timeout: Duration) -> process::Spec {
    process::Spec {
        argv,
        cwd: cwd.to_path_buf(),
        env: vec![],
        timeout,
        stdout_path: log.clone(),
        log_path: log,
        merge_output: true,
        hold: Default::default(),
        caps: Default::default(),
    }
}

/// Runs `spec`; a failure is an infrastructure error with `what`, the output's tail and the log's path.
async fn run_step(what: &str, spec: &process::Spec, cancel: &CancellationToken) -> Result<()> {
    let out = process::run(spec, cancel)
        .await
        .with_context(|| format!("start {what}"))?;
    if out.cancelled {
        return Err(VouchError::Interrupted.into());
    }
    if !out.success() {
        return Err(VouchError::infra_hint(
            format!(
                "{what} failed{}:\n{}",
                if out.timed_out { " (timed out)" } else { "" },
                out.tail_lines(20)
            ),
            format!("the whole output is in {}", spec.log_path.display()),
        )
        .into());
    }
    Ok(())
}

/// Whether `server` exists and answers `--version`.
pub async fn server_runs(server: &Path, logs: &Path, cancel: &CancellationToken) -> bool {
    if !server.is_file() || std::fs::create_dir_all(logs).is_err() {
        return false;
    }
    let spec = spec(
        vec![server.to_string_lossy().into_owned(), "--version".into()],
        logs,
        logs.join("llama-server-version.log"),
        SHORT_TIMEOUT,
    );
    process::run(&spec, cancel).await.is_ok_and(|o| o.success())
}

/// The tools are there, or installed now, or an error says what to run.
async fn ensure_tools(
    cache: &Cache,
    policy: InstallTools,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<()> {
    let logs = cache.logs();
    let pip_check = spec(
        ["python3", "-m", "pip", "--version"]
            .map(String::from)
            .to_vec(),
        &logs,
        logs.join("pip-version.log"),
        SHORT_TIMEOUT,
    );
    let pip_works = |cancel| {
        let pip_check = pip_check.clone();
        async move {
            process::run(&pip_check, &cancel)
                .await
                .is_ok_and(|o| o.success())
        }
    };
    let missing = missing_tools(pip_works(cancel.clone()).await);
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|t| t.name()).collect();
    let apt = apt_command(&missing);
    let command = format!("apt-get update && {}", process::quote_argv(&apt));
    let allowed = is_root()
        && match policy {
            InstallTools::Yes => true,
            InstallTools::No => false,
            InstallTools::Ask => ask(
                ui,
                &format!(
                    "llama-server needs {} to build. Install with `{command}` now? [y/N] ",
                    names.join(", ")
                ),
            ),
        };
    if !allowed {
        let how = if is_root() {
            format!("run `{command}`, or pass --install-tools")
        } else {
            format!("run `sudo sh -c '{command}'`")
        };
        return Err(VouchError::infra_hint(
            format!(
                "building llama-server needs {}, not found",
                names.join(", ")
            ),
            how,
        )
        .into());
    }
    let phase = Phase::spinner(ui, &format!("installing {}", names.join(", ")));
    let update = spec(
        ["apt-get", "update", "-qq"].map(String::from).to_vec(),
        &logs,
        logs.join("apt-update.log"),
        APT_TIMEOUT,
    );
    let mut install = spec(apt, &logs, logs.join("apt-install.log"), APT_TIMEOUT);
    install
        .env
        .push(("DEBIAN_FRONTEND".into(), "noninteractive".into()));
    let result = async {
        run_step("apt-get update", &update, cancel).await?;
        run_step("apt-get install", &install, cancel).await
    }
    .await;
    if let Err(e) = result {
        phase.abandon();
        return Err(e);
    }
    phase.done(&format!("installed {}", names.join(", ")));
    let still = missing_tools(pip_works(cancel.clone()).await);
    if !still.is_empty() {
        let names: Vec<&str> = still.iter().map(|t| t.name()).collect();
        return Err(VouchError::infra(format!(
            "still missing after apt-get install: {}",
            names.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// A yes/no question on the terminal; no terminal is a no.
fn ask(ui: &Ui, question: &str) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return false;
    }
    let mut answer = String::new();
    ui.line(question.trim_end());
    eprint!("> ");
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
}

/// Where the source package is unpacked.
fn source_dir(cache: &Cache) -> PathBuf {
    cache
        .root
        .join("src")
        .join(format!("llama_cpp_python-{SDIST_VERSION}"))
}

fn build_dir(cache: &Cache) -> PathBuf {
    cache.root.join("build")
}

/// The cmake configure command line; never a native build.
pub fn configure_argv(source: &Path, build: &Path, ccache: bool) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "cmake".into(),
        "-S".into(),
        source
            .join("vendor")
            .join("llama.cpp")
            .to_string_lossy()
            .into_owned(),
        "-B".into(),
        build.to_string_lossy().into_owned(),
    ];
    if ccache {
        argv.extend([
            "-DCMAKE_C_COMPILER_LAUNCHER=ccache".to_string(),
            "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache".to_string(),
        ]);
    }
    argv.extend(
        [
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF",
            "-DGGML_NATIVE=OFF",
            "-DLLAMA_BUILD_SERVER=ON",
            "-DLLAMA_BUILD_TESTS=OFF",
            "-DLLAMA_BUILD_EXAMPLES=OFF",
            "-DLLAMA_OPENSSL=OFF",
            "-DLLAMA_USE_PREBUILT_UI=OFF",
            "-DLLAMA_BUILD_UI=OFF",
        ]
        .map(String::from),
    );
    argv
}

/// The build command line: only the server's target, on every core.
pub fn build_argv(build: &Path, jobs: usize) -> Vec<String> {
    vec![
        "cmake".into(),
        "--build".into(),
        build.to_string_lossy().into_owned(),
        "--target".into(),
        "llama-server".into(),
        "-j".into(),
        jobs.to_string(),
    ]
}

/// The last percentage cmake printed (`[ 45%] Building CXX object ...`) in `log`.
pub fn last_percent(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|line| {
        let rest = line.trim_start().strip_prefix('[')?;
        let (num, _) = rest.split_once("%]")?;
        num.trim().parse::<u64>().ok().filter(|n| *n <= 100)
    })
}

/// The last few kilobytes of a file.
fn read_tail(path: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(4096)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The server binary, built unless the installed one answers `--version`.
pub async fn ensure_server(
    cache: &Cache,
    policy: InstallTools,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<PathBuf> {
    let server = cache.server();
    let logs = cache.logs();
    if server_runs(&server, &logs, cancel).await {
        ui.line(&format!("  llama-server ready: {}", server.display()));
        return Ok(server);
    }
    ensure_tools(cache, policy, ui, cancel).await?;
    let sdist = fetch_sdist(cache, ui, cancel).await?;
    unpack(cache, &sdist, ui, cancel).await?;
    compile(cache, ui, cancel).await?;
    let built = build_dir(cache).join("bin").join("llama-server");
    let bin = cache.root.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("create {}", bin.display()))?;
    let tmp = server.with_extension("tmp");
    std::fs::copy(&built, &tmp)
        .with_context(|| format!("copy {} to {}", built.display(), tmp.display()))?;
    std::fs::rename(&tmp, &server).with_context(|| format!("install {}", server.display()))?;
    if !server_runs(&server, &logs, cancel).await {
        return Err(VouchError::infra_hint(
            format!("the built {} does not run", server.display()),
            format!("see {}", logs.join("llama-server-version.log").display()),
        )
        .into());
    }
    ui.line(&format!("  llama-server installed: {}", server.display()));
    Ok(server)
}

/// The source package in the cache, downloaded unless its sha256 is right already.
async fn fetch_sdist(cache: &Cache, ui: &Ui, cancel: &CancellationToken) -> Result<PathBuf> {
    let dir = cache.downloads();
    let sdist = dir.join(format!("llama_cpp_python-{SDIST_VERSION}.tar.gz"));
    if sdist.is_file() && hash_file(&sdist, &mut |_| {})? == SDIST_SHA256 {
        return Ok(sdist);
    }
    let _ = std::fs::remove_file(&sdist);
    let mut phase = Phase::start(
        ui,
        &format!("downloading {SDIST_PACKAGE}=={SDIST_VERSION} (source)"),
        Unit::Bytes,
        Some(76_589_250),
    );
    let download = pip::Download {
        requirement: format!("{SDIST_PACKAGE}=={SDIST_VERSION}"),
        source_of: Some(SDIST_PACKAGE.into()),
        dest: dir,
        scratch: cache.scratch().join("pip"),
        log: cache.logs().join("pip-llama-cpp-python.log"),
    };
    if let Err(e) = download.run(&mut phase, 0, cancel).await {
        phase.abandon();
        return Err(e);
    }
    let got = hash_file(&sdist, &mut |_| {})?;
    if got != SDIST_SHA256 {
        phase.abandon();
        let _ = std::fs::remove_file(&sdist);
        return Err(VouchError::infra(format!(
            "{} has sha256 {got}, expected {SDIST_SHA256}; removed it, the next setup downloads it again",
            sdist.display()
        ))
        .into());
    }
    phase.done(&format!("downloaded {SDIST_PACKAGE}=={SDIST_VERSION}"));
    Ok(sdist)
}

/// The source tree, unpacked unless it is there.
async fn unpack(cache: &Cache, sdist: &Path, ui: &Ui, cancel: &CancellationToken) -> Result<()> {
    let src = source_dir(cache);
    if src.join("vendor/llama.cpp/CMakeLists.txt").is_file() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&src);
    let parent = cache.root.join("src");
    std::fs::create_dir_all(&parent).with_context(|| format!("create {}", parent.display()))?;
    let phase = Phase::spinner(ui, "unpacking the llama.cpp source");
    let tar = spec(
        vec![
            "tar".into(),
            "-xzf".into(),
            sdist.to_string_lossy().into_owned(),
            "-C".into(),
            parent.to_string_lossy().into_owned(),
        ],
        &parent,
        cache.logs().join("tar.log"),
        SHORT_TIMEOUT * 5,
    );
    match run_step("unpacking the source", &tar, cancel).await {
        Ok(()) => phase.done("unpacked the llama.cpp source"),
        Err(e) => {
            phase.abandon();
            let _ = std::fs::remove_dir_all(&src);
            return Err(e);
        }
    }
    Ok(())
}

/// Configure and build, the build's percentage shown as cmake prints it.
async fn compile(cache: &Cache, ui: &Ui, cancel: &CancellationToken) -> Result<()> {
    let ccache = on_path("ccache");
    let build = build_dir(cache);
    let mut env = vec![];
    if ccache {
        env.push((
            "CCACHE_DIR".to_string(),
            cache.root.join("ccache").to_string_lossy().into_owned(),
        ));
    }
    let mut configure = spec(
        configure_argv(&source_dir(cache), &build, ccache),
        &cache.root,
        cache.root.join("configure.log"),
        BUILD_TIMEOUT,
    );
    configure.env = env.clone();
    let phase = Phase::spinner(ui, "configuring llama.cpp (cmake)");
    if let Err(e) = run_step("cmake configure", &configure, cancel).await {
        phase.abandon();
        return Err(e);
    }
    phase.done("configured llama.cpp");

    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let log = cache.root.join("build.log");
    let mut make = spec(
        build_argv(&build, jobs),
        &cache.root,
        log.clone(),
        BUILD_TIMEOUT,
    );
    make.env = env;
    let label = format!(
        "building llama-server{}",
        if ccache {
            " (with ccache)"
        } else {
            " (no ccache: about 5 minutes on 2 cores)"
        }
    );
    let mut phase = Phase::start(ui, &label, Unit::Percent, None);
    let run = run_step("building llama-server", &make, cancel);
    tokio::pin!(run);
    let mut tick = tokio::time::interval(POLL);
    let result = loop {
        tokio::select! {
            out = &mut run => break out,
            _ = tick.tick() => {
                if let Some(p) = last_percent(&read_tail(&log)) {
                    phase.set(p);
                }
            }
        }
    };
    match result {
        Ok(()) => {
            phase.set(100);
            phase.done("built llama-server");
            Ok(())
        }
        Err(e) => {
            phase.abandon();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_is_portable_and_only_builds_the_server() {
        let argv = configure_argv(Path::new("/c/src/l"), Path::new("/c/build"), true);
        let line = process::quote_argv(&argv);
        assert!(
            line.starts_with("cmake -S /c/src/l/vendor/llama.cpp -B /c/build "),
            "{line}"
        );
        assert!(argv.contains(&"-DGGML_NATIVE=OFF".to_string()));
        assert!(!line.contains("GGML_NATIVE=ON"));
        assert!(line.contains("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"));
        for flag in [
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=OFF",
            "-DLLAMA_BUILD_SERVER=ON",
            "-DLLAMA_BUILD_TESTS=OFF",
            "-DLLAMA_BUILD_EXAMPLES=OFF",
            "-DLLAMA_OPENSSL=OFF",
            "-DLLAMA_USE_PREBUILT_UI=OFF",
            "-DLLAMA_BUILD_UI=OFF",
        ] {
            assert!(argv.contains(&flag.to_string()), "{flag}");
        }
        let plain = configure_argv(Path::new("/s"), Path::new("/b"), false);
        assert!(!process::quote_argv(&plain).contains("ccache"));
        assert_eq!(
            process::quote_argv(&build_argv(Path::new("/c/build"), 2)),
            "cmake --build /c/build --target llama-server -j 2"
        );
    }

    #[test]
    fn the_percentage_is_the_last_one_cmake_printed() {
        let log = "[  1%] Building C object ggml.c.o\n[ 45%] Building CXX object a.o\nIn file included from x.h\n";
        assert_eq!(last_percent(log), Some(45));
        assert_eq!(
            last_percent("[100%] Built target llama-server\n"),
            Some(100)
        );
        assert_eq!(last_percent("-- Configuring done\n"), None);
        assert_eq!(last_percent("[ 99%"), None);
    }

    #[test]
    fn missing_tools_name_their_debian_packages() {
        let apt = apt_command(&[Tool::Cmake, Tool::Compiler, Tool::Pip]);
        let line = process::quote_argv(&apt);
        assert!(
            line.starts_with("apt-get install -y --no-install-recommends cmake g++ python3-pip"),
            "{line}"
        );
        assert_eq!(Tool::Compiler.name(), "a C++ compiler (g++)");
        // pip's answer decides the pip entry alone.
        assert!(missing_tools(false).contains(&Tool::Pip));
        assert!(!missing_tools(true).contains(&Tool::Pip));
    }
}
