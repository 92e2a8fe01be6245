//! No tool reads or writes outside the workspace or inside `.git`, whatever path it is given.

use std::fs;
use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::{fixture, snapshot, Fixture};

/// Every way a path can reach a file: read, edit, write, list and search.
fn every_tool(path: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read_file", json!({"path": path})),
        (
            "edit",
            json!({"path": path, "old_string": "secret", "new_string": "changed"}),
        ),
        ("write_file", json!({"path": path, "content": "changed\n"})),
        ("list_files", json!({"path": path})),
        ("search", json!({"pattern": "secret", "path": path})),
    ]
}

/// Asserts that every tool refuses `path` with `message`, and that nothing outside the repository and
/// nothing in `.git` changed.
fn refused_everywhere(f: &Fixture, path: &str, message: &str) {
    let outside = snapshot(&f.outside());
    let git = snapshot(&f.repo().join(".git"));
    for (tool, args) in every_tool(path) {
        assert_eq!(f.err(tool, args), message, "{tool} {path}");
    }
    assert_eq!(snapshot(&f.outside()), outside, "outside changed");
    assert_eq!(snapshot(&f.repo().join(".git")), git, ".git changed");
}

#[test]
fn a_parent_directory_escape_is_refused() {
    let f = fixture(&[("a.txt", "a\n")]);
    refused_everywhere(
        &f,
        "../outside/secret.txt",
        "`../outside/secret.txt` leads outside the repository; only files inside it can be read or written.",
    );
    refused_everywhere(
        &f,
        "a/../../x",
        "`a/../../x` leads outside the repository; only files inside it can be read or written.",
    );
    assert!(!f.dir.path().join("x").exists());
}

#[test]
fn an_absolute_path_is_refused() {
    let f = fixture(&[]);
    refused_everywhere(
        &f,
        "/etc/passwd",
        "`/etc/passwd` is an absolute path; give a path relative to the repository root, such as \
         `src/main.rs`.",
    );
    let inside = f.repo().join("a.txt").display().to_string();
    assert_eq!(
        f.err("write_file", json!({"path": inside, "content": "x"})),
        format!(
            "`{inside}` is an absolute path; give a path relative to the repository root, such as \
             `src/main.rs`."
        )
    );
}

#[test]
fn a_symlinked_directory_leading_outside_is_refused_for_reads_and_writes() {
    let f = fixture(&[]);
    symlink(f.outside(), f.repo().join("link")).unwrap();
    for path in [
        "link/secret.txt",
        "link/new.txt",
        "link/deeper/new.txt",
        "link",
    ] {
        refused_everywhere(
            &f,
            path,
            &format!(
                "`{path}` goes through a symbolic link that leads outside the workspace; only files inside \
                 the repository can be read or written."
            ),
        );
    }
    assert_eq!(
        snapshot(&f.outside()),
        vec![("secret.txt".to_string(), b"secret\n".to_vec())]
    );
}

#[test]
fn a_symlinked_file_leading_outside_is_refused_and_never_searched() {
    let f = fixture(&[("a.txt", "a\n")]);
    symlink(f.outside().join("secret.txt"), f.repo().join("passwords")).unwrap();
    refused_everywhere(
        &f,
        "passwords",
        "`passwords` goes through a symbolic link that leads outside the workspace; only files inside the \
         repository can be read or written.",
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "secret"})),
        "No matches for `secret`."
    );
    assert_eq!(
        f.ok("list_files", json!({})),
        "1 file in the repository:\na.txt"
    );
    assert_eq!(
        fs::read_to_string(f.outside().join("secret.txt")).unwrap(),
        "secret\n"
    );
}

#[test]
fn a_dangling_symlink_is_not_written_through() {
    let f = fixture(&[]);
    symlink(f.outside().join("created.txt"), f.repo().join("dangling")).unwrap();
    assert_eq!(
        f.err("write_file", json!({"path": "dangling", "content": "x"})),
        "`dangling` goes through a symbolic link that points to nothing; use another path."
    );
    assert!(!f.outside().join("created.txt").exists());
}

#[test]
fn a_symlink_inside_the_workspace_is_followed() {
    let f = fixture(&[("src/real.rs", "real\n")]);
    symlink(f.repo().join("src"), f.repo().join("alias")).unwrap();
    assert_eq!(
        f.ok("read_file", json!({"path": "alias/real.rs"})),
        "alias/real.rs (1 line)\n     1\treal"
    );
    f.ok(
        "write_file",
        json!({"path": "alias/new.rs", "content": "fn new() {}\n"}),
    );
    assert_eq!(f.read("src/new.rs"), "fn new() {}\n");
}

#[test]
fn git_is_off_limits_by_any_path() {
    let f = fixture(&[]);
    for path in [
        ".git/config",
        ".git",
        "src/../.git/config",
        ".GIT/config",
        "./.git/hooks/pre-commit",
    ] {
        refused_everywhere(
            &f,
            path,
            &format!(
                "`{path}` is inside `.git`, which is off limits; the agent works on the files of the worktree \
                 only."
            ),
        );
    }
    symlink(f.repo().join(".git"), f.repo().join("gitlink")).unwrap();
    refused_everywhere(
        &f,
        "gitlink/config",
        "`gitlink/config` is inside `.git`, which is off limits; the agent works on the files of the \
         worktree only.",
    );
}

#[test]
fn names_another_file_system_takes_for_git_are_refused() {
    let f = fixture(&[]);
    for path in [
        "GIT~1/config",
        "git~12/hooks/x",
        ".git./config",
        ".git /config",
        ".git. . /config",
        ".g\u{200d}it/hooks/pre-commit",
        "\u{feff}.git/config",
        ".GiT/config",
        ".git\\hooks\\pre-commit",
        "src\\.git\\config",
    ] {
        for (tool, args) in every_tool(path) {
            let err = f.err(tool, args);
            assert!(err.contains("inside `.git`"), "{tool} {path}: {err}");
        }
    }
    assert_eq!(
        fs::read_dir(f.repo()).unwrap().count(),
        1,
        "only .git is in the repository"
    );
    // Names that merely look alike stay ordinary files.
    f.ok("write_file", json!({"path": "git~x/a", "content": "a\n"}));
    f.ok("write_file", json!({"path": ".gitx/a", "content": "a\n"}));
    f.ok("write_file", json!({"path": ".github/a", "content": "a\n"}));
}

#[test]
fn vouch_is_off_limits_to_every_tool() {
    let f = fixture(&[(".vouch/gate.toml", "[[steps]]\n")]);
    for path in [
        ".vouch/report.json/x",
        ".vouch",
        ".VOUCH./gate.toml",
        "a/../.vouch/transcript.jsonl",
    ] {
        for (tool, args) in every_tool(path) {
            let err = f.err(tool, args);
            assert!(err.contains("inside `.vouch`"), "{tool} {path}: {err}");
        }
    }
    assert!(!f.repo().join(".vouch/report.json").exists());
    // A walk from the root does not show it either.
    let listed = f.ok("list_files", json!({}));
    assert!(!listed.contains(".vouch"), "{listed}");
}

#[test]
fn a_file_with_another_hard_link_is_not_written_through() {
    let f = fixture(&[]);
    let outside = f.outside().join("secret.txt");
    fs::hard_link(&outside, f.repo().join("linked.txt")).unwrap();
    let write = f.err(
        "write_file",
        json!({"path": "linked.txt", "content": "changed\n"}),
    );
    assert!(write.contains("2 hard links"), "{write}");
    let edit = f.err(
        "edit",
        json!({"path": "linked.txt", "old_string": "secret", "new_string": "changed"}),
    );
    assert!(edit.contains("2 hard links"), "{edit}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "secret\n");
}

#[test]
fn a_fifo_is_refused_without_opening_it() {
    // Each of these would block for ever if it opened the FIFO, so they run on a thread of their own.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let f = fixture(&[("a.txt", "a\n")]);
        let made = std::process::Command::new("mkfifo")
            .arg(f.repo().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let read = f.err("read_file", json!({"path": "pipe"}));
        let write = f.err("write_file", json!({"path": "pipe", "content": "x"}));
        let edit = f.err(
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        );
        let search = f.ok("search", json!({"pattern": "a"}));
        tx.send((read, write, edit, search)).unwrap();
    });
    let (read, write, edit, search) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a tool opened the FIFO and hung");
    for err in [read, write, edit] {
        assert!(err.contains("not a regular file"), "{err}");
    }
    assert!(search.contains("a.txt"), "{search}");
}
