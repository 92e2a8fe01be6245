//! Tests of the agent's tools, each in a fresh repository in a temporary directory, called through
//! [`Registry::dispatch`] as the agent loop calls them. Every test compares whole outputs.

mod confinement;
mod dispatch;
mod edit;
mod glob_paths;
mod list_files;
mod overview;
mod read_file;
mod search;
mod syntax_guard;
mod write_file;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use tokio_util::sync::CancellationToken;

use super::{Context, Registry, Settings, Workspace};

/// A repository (`repo/`, with a `.git` directory) and a sibling directory `outside/` in one temporary
/// directory, and the standard tools of the repository.
struct Fixture {
    dir: TempDir,
    tools: Registry,
    workspace: Workspace,
    settings: Settings,
}

/// What a call returned: `ok: false` for a failed call.
struct Out {
    ok: bool,
    text: String,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join(".git/config"), "[core]\n").unwrap();
    fs::create_dir_all(dir.path().join("outside")).unwrap();
    fs::write(dir.path().join("outside/secret.txt"), "secret\n").unwrap();
    for (path, content) in files {
        let path = repo.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    Fixture {
        dir,
        tools: Registry::standard(),
        workspace: Workspace::new(&repo).unwrap(),
        settings: Settings::default(),
    }
}

impl Fixture {
    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn call(&self, name: &str, args: Value) -> Out {
        let cancel = CancellationToken::new();
        let mut ctx = Context::new(&self.workspace, &cancel, &self.settings);
        match futures::executor::block_on(self.tools.dispatch(&mut ctx, name, &args)) {
            Ok(text) => Out { ok: true, text },
            Err(e) => Out {
                ok: false,
                text: e.to_string(),
            },
        }
    }

    /// The text of a call that must succeed.
    fn ok(&self, name: &str, args: Value) -> String {
        let out = self.call(name, args);
        assert!(out.ok, "{name} failed: {}", out.text);
        out.text
    }

    /// The text of a call that must fail.
    fn err(&self, name: &str, args: Value) -> String {
        let out = self.call(name, args);
        assert!(!out.ok, "{name} succeeded: {}", out.text);
        out.text
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.repo().join(path)).unwrap()
    }
}

/// Every file under `dir` with its content, sorted: what a test compares to prove nothing changed.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else {
                let content = fs::read(&path).unwrap_or_default();
                out.push((
                    path.strip_prefix(dir).unwrap().display().to_string(),
                    content,
                ));
            }
        }
    }
    out.sort();
    out
}
