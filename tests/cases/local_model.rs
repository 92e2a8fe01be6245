//! `vouch model setup | list | serve` on the cache `tests/llama/build.sh` fills: setup takes the fast path
//! (nothing is built or downloaded), serve answers `/health` and `/v1/models` and stops on SIGINT.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::llama;

fn vouch_model(cache: &PathBuf, args: &[&str]) -> crate::util::Run {
    let out = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .arg("model")
        .args(args)
        .arg("--cache")
        .arg(cache)
        .stdin(Stdio::null())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    crate::util::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_on_a_built_cache_only_checks_and_prints_the_paths() {
    let _turn = llama::turn().await;
    let cache = tokio::task::spawn_blocking(llama::cache_dir).await.unwrap();
    let c = cache.clone();
    let first =
        tokio::task::spawn_blocking(move || vouch_model(&c, &["setup", "--model", "smollm2"]))
            .await
            .unwrap();
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    // The second run is the fast path whatever the first found (build.sh leaves no sha256 marker).
    let started = Instant::now();
    let c = cache.clone();
    let second =
        tokio::task::spawn_blocking(move || vouch_model(&c, &["setup", "--model", "smollm2"]))
            .await
            .unwrap();
    let took = started.elapsed();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(
        second.stdout,
        format!(
            "server={}\nmodel={}\n",
            cache.join("bin/llama-server").display(),
            cache
                .join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
                .display()
        )
    );
    assert!(
        second.stderr.contains("llama-server ready"),
        "{}",
        second.stderr
    );
    assert!(second.stderr.contains("smollm2 ready"), "{}", second.stderr);
    for slow in [
        "building",
        "downloading",
        "assembling",
        "checking the sha256",
    ] {
        assert!(!second.stderr.contains(slow), "{slow}: {}", second.stderr);
    }
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(cache.join("templates/chatml-smol-tools.jinja").is_file());

    let list = vouch_model(&cache, &["list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let smol = list
        .stdout
        .lines()
        .find(|l| l.starts_with("smollm2 "))
        .unwrap_or_else(|| panic!("{}", list.stdout));
    assert!(smol.contains(" ready "), "{smol}");
    assert!(
        list.stdout.contains("llama-server: built"),
        "{}",
        list.stdout
    );
}

#[test]
fn an_unknown_model_is_a_usage_error_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let run = vouch_model(&dir.path().to_path_buf(), &["setup", "--model", "qwen-70b"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown model `qwen-70b`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("qwen-1.5b, qwen-0.5b, smollm2"),
        "{}",
        run.stderr
    );
    // Nothing was built or written for it.
    assert!(!dir.path().join("bin").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_health_and_models_and_stops_on_sigint() {
    let _turn = llama::turn().await;
    let cache = tokio::task::spawn_blocking(llama::cache_dir).await.unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["model", "serve", "--model", "smollm2", "--context", "4096"])
        .args(["--port", &port.to_string()])
        .arg("--cache")
        .arg(&cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("RUST_LOG")
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let first_line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    });
    let line = tokio::time::timeout(Duration::from_secs(120), first_line)
        .await
        .expect("no endpoint line within 120 s")
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    assert!(
        line.starts_with(&format!(
            "serving smollm2 at {url} (OpenAI-compatible: {url}/v1;"
        )),
        "{line}"
    );
    let http = reqwest::Client::new();
    let health = http.get(format!("{url}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let models: serde_json::Value = http
        .get(format!("{url}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "smollm2", "{models}");
    let props: serde_json::Value = http
        .get(format!("{url}/props"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // One slot with the whole context, and the corrected template that lets SmolLM2 take tools.
    assert_eq!(props["total_slots"], 1, "{props}");
    assert_eq!(
        props["default_generation_settings"]["n_ctx"], 4096,
        "{props}"
    );
    assert_eq!(
        props["chat_template_caps"]["supports_tools"], true,
        "{props}"
    );

    // SAFETY: a signal to the child we started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "vouch did not stop"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("llama-server stopped"), "{stderr}");
    let gone = http
        .get(format!("{url}/health"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(
        gone.is_err(),
        "the server still answers after vouch stopped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_without_an_endpoint_serves_the_model_itself_and_stops_it_afterwards() {
    let _turn = llama::turn().await;
    let cache = tokio::task::spawn_blocking(llama::cache_dir).await.unwrap();
    let repo = crate::util::Repo::with_files(&[("notes.txt", "hello\n")]);
    let config = repo.tmp.path().join("config");
    let dir = repo.dir.to_string_lossy().into_owned();
    let cache_s = cache.to_string_lossy().into_owned();
    let config_s = config.to_string_lossy().into_owned();
    let run = tokio::task::spawn_blocking(move || repo_run(&repo, &dir, &cache_s, &config_s))
        .await
        .unwrap();
    let (run, records) = run;
    assert!(
        run.stderr
            .contains("no model endpoint configured: vouch serves smollm2 itself"),
        "{}",
        run.stderr
    );
    let url = run
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("llama-server with smollm2 at "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no server line:\n{}", run.stderr))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // The run talked to the model: it ended on its turn budget, not on a model error.
    let report: serde_json::Value = serde_json::from_str(&records).unwrap();
    assert_eq!(
        report["stop_reason"], "max-turns",
        "{report}\n{}",
        run.stderr
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let gone = reqwest::Client::new()
        .get(format!("{url}/health"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(gone.is_err(), "the managed server outlived the run");
}

/// `vouch run` with one turn and no endpoint anywhere (an empty user config), SmolLM2 named by VOUCH_MODEL.
fn repo_run(
    repo: &crate::util::Repo,
    dir: &str,
    cache: &str,
    config: &str,
) -> (crate::util::Run, String) {
    let run = repo.vouch_env(
        &[
            "run",
            "--repo",
            dir,
            "--prompt",
            "say hello",
            "--max-turns",
            "1",
        ],
        &[
            ("VOUCH_LLAMA_CACHE", cache),
            ("VOUCH_MODEL", "smollm2"),
            ("VOUCH_ENDPOINT", ""),
            ("XDG_CONFIG_HOME", config),
        ],
    );
    // The records are under $VOUCH_DATA/runs/<repo-key>/<task>/ (the test's one repository key).
    let runs = repo.data().join("runs");
    let report = std::fs::read_dir(&runs)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("say-hello/report.json"))
        .unwrap_or_else(|| runs.join("none"));
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", report.display(), run.stderr));
    (run, text)
}
