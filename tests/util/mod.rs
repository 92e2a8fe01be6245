//! Shared helpers for the integration tests: hermetic fixture repositories and running the real binary.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A git repository in a temporary directory, with git configured hermetically.
pub struct Repo {
    pub tmp: TempDir,
    pub dir: PathBuf,
    /// The vouch cache for this test (rooms, baselines, logs).
    pub cache: PathBuf,
}

/// Environment that keeps git away from the user's and the system's configuration.
pub fn git_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "Fixture Author"),
        ("GIT_AUTHOR_EMAIL", "author@example.com"),
        ("GIT_COMMITTER_NAME", "Fixture Author"),
        ("GIT_COMMITTER_EMAIL", "author@example.com"),
        ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
    ]
}

impl Repo {
    /// An empty repository on branch `main`.
    pub fn new() -> Repo {
        Repo::new_in(&std::env::temp_dir())
    }

    /// [`Repo::new`] under `parent` (a checkout outside `$HOME` and `/tmp`, as in a container CI job).
    pub fn new_in(parent: &Path) -> Repo {
        std::fs::create_dir_all(parent).unwrap();
        let tmp = tempfile::Builder::new()
            .prefix("vouch-test-")
            .tempdir_in(parent)
            .unwrap();
        let dir = tmp.path().join("repo");
        std::fs::create_dir_all(&dir).unwrap();
        let cache = tmp.path().join("cache");
        let repo = Repo { tmp, dir, cache };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// A repository whose first commit holds `files`.
    pub fn with_files(files: &[(&str, &str)]) -> Repo {
        let repo = Repo::new();
        repo.write_all(files);
        repo.commit("initial");
        repo
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .envs(git_env())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    pub fn write(&self, path: &str, text: &str) {
        let p = self.dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn write_all(&self, files: &[(&str, &str)]) {
        for (p, t) in files {
            self.write(p, t);
        }
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.join(path)).unwrap();
    }

    /// Commits everything; returns the sha.
    pub fn commit(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Runs `vouch ARGS` with this repo's cache, from the temp dir (so `workspaces/` lands there).
    pub fn vouch(&self, args: &[&str]) -> Run {
        self.vouch_env(args, &[])
    }

    pub fn vouch_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.vouch_exe(&vouch_bin(), args, env)
    }

    /// Runs the vouch binary `exe` (a copy, an older build) as [`Repo::vouch_env`] does.
    pub fn vouch_exe(&self, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
        let out = Command::new(exe)
            .args(args)
            .current_dir(self.tmp.path())
            .env("VOUCH_CACHE", &self.cache)
            .env("VOUCH_DATA", self.data())
            .env_remove("RUST_LOG")
            .envs(git_env())
            .envs(env.iter().copied())
            .output()
            .unwrap();
        Run::new(out)
    }

    /// `vouch gate --repo DIR --json FILE ARGS`, with the JSON report parsed.
    pub fn gate(&self, args: &[&str]) -> Gate {
        self.gate_env(args, &[])
    }

    pub fn gate_env(&self, args: &[&str], env: &[(&str, &str)]) -> Gate {
        self.gate_exe(&vouch_bin(), args, env)
    }

    /// [`Repo::gate_env`] with the vouch binary `exe`.
    pub fn gate_exe(&self, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Gate {
        let json = self.tmp.path().join("gate.json");
        let _ = std::fs::remove_file(&json);
        let repo = self.dir.to_string_lossy().into_owned();
        let json_s = json.to_string_lossy().into_owned();
        let mut full = vec!["gate", "--repo", &repo, "--json", &json_s];
        full.extend_from_slice(args);
        let run = self.vouch_exe(exe, &full, env);
        let report = std::fs::read_to_string(&json)
            .ok()
            .map(|t| serde_json::from_str(&t).unwrap());
        Gate { run, report }
    }

    /// vouch's data directory for this repository's runs (`$VOUCH_DATA`: records and worktrees).
    pub fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    /// Every file under the repository (the .git directory included) with its bytes: for "untouched" checks.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        snapshot_dir(&self.dir)
    }
}

pub fn snapshot_dir(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_symlink() {
                out.insert(
                    p.clone(),
                    std::fs::read_link(&p)
                        .unwrap()
                        .to_string_lossy()
                        .as_bytes()
                        .to_vec(),
                );
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A finished run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn new(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A gate run and its JSON report.
pub struct Gate {
    pub run: Run,
    pub report: Option<serde_json::Value>,
}

impl Gate {
    pub fn report(&self) -> &serde_json::Value {
        self.report.as_ref().unwrap_or_else(|| {
            panic!(
                "no JSON report; exit {}\nstderr:\n{}",
                self.run.code, self.run.stderr
            )
        })
    }

    pub fn verdict(&self) -> &str {
        self.report()["verdict"].as_str().unwrap()
    }

    pub fn reasons(&self) -> Vec<String> {
        strings(&self.report()["reasons"])
    }

    pub fn step(&self, name: &str) -> &serde_json::Value {
        self.report()["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no step {name} in {}", self.report()))
    }

    pub fn tests(&self, field: &str) -> Vec<String> {
        strings(&self.report()["tests"][field])
    }

    /// `(a, b)` of every entry of the bite report's list `list` (`tests`, `hunks`); panics without the list.
    pub fn bite_pairs(&self, list: &str, a: &str, b: &str) -> Vec<(String, String)> {
        self.report()["bite"][list]
            .as_array()
            .unwrap_or_else(|| panic!("no bite {list}: {}", self.explain()))
            .iter()
            .map(|t| {
                let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
                (field(a), field(b))
            })
            .collect()
    }

    /// `(id, outcome)` of every test the bite check ran.
    pub fn bite_outcomes(&self) -> Vec<(String, String)> {
        self.bite_pairs("tests", "id", "outcome")
    }

    /// Everything a person would read when the assertion fails.
    pub fn explain(&self) -> String {
        format!(
            "exit {}\nstderr:\n{}\nreport:\n{}",
            self.run.code,
            self.run.stderr,
            self.report
                .as_ref()
                .map(|r| serde_json::to_string_pretty(r).unwrap())
                .unwrap_or_default()
        )
    }
}

pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The vouch binary the tests run: this build, or `$VOUCH_TEST_EXE` (an older build, to show that a test
/// fails there).
pub fn vouch_bin() -> PathBuf {
    std::env::var_os("VOUCH_TEST_EXE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_vouch")))
}

/// The text of a shipped preset, from `vouch profile --name NAME`.
pub fn preset(name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["profile", "--name", name])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}
pub mod llama;
pub mod model_server;
pub mod pty;
pub mod tls;

/// Serves `app` on a free loopback port; returns its base URL and the server task (abort it when done).
pub async fn serve(app: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, task)
}
