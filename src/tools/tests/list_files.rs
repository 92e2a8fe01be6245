use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

fn repo() -> super::Fixture {
    fixture(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/lib.rs", ""),
        ("src/main.rs", ""),
        ("target/debug/out", ""),
        ("app.log", ""),
        (".github/ci.yml", ""),
        ("README.md", ""),
    ])
}

#[test]
fn the_listing_respects_gitignore_shows_hidden_files_and_hides_git() {
    let f = repo();
    assert_eq!(
        f.ok("list_files", json!({})),
        "5 files in the repository:\n.github/ci.yml\n.gitignore\nREADME.md\nsrc/lib.rs\nsrc/main.rs"
    );
}

#[test]
fn a_path_and_a_glob_narrow_the_listing() {
    let f = repo();
    assert_eq!(
        f.ok("list_files", json!({"path": "src"})),
        "2 files in `src`:\nsrc/lib.rs\nsrc/main.rs"
    );
    assert_eq!(
        f.ok("list_files", json!({"glob": "*.rs"})),
        "2 files in the repository matching `*.rs`:\nsrc/lib.rs\nsrc/main.rs"
    );
    assert_eq!(
        f.ok("list_files", json!({"glob": "src/m*"})),
        "1 file in the repository matching `src/m*`:\nsrc/main.rs"
    );
    assert_eq!(
        f.ok("list_files", json!({"glob": "*.go"})),
        "No files in the repository matching `*.go`."
    );
}

#[test]
fn a_glob_given_as_the_path_is_used_as_the_glob() {
    let f = repo();
    assert_eq!(
        f.ok("list_files", json!({"path": "src/**"})),
        "2 files in the repository matching `src/**` (`src/**` is a glob, not a directory: pass it as \
         glob):\nsrc/lib.rs\nsrc/main.rs"
    );
    assert_eq!(
        f.ok("list_files", json!({"path": "tests/**"})),
        "No files in the repository matching `tests/**` (`tests/**` is a glob, not a directory: pass it \
         as glob)."
    );
}

#[test]
fn a_long_listing_is_capped_and_says_how_many_more() {
    let names: Vec<String> = (0..510).map(|n| format!("many/f{n:03}.txt")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
    let f = fixture(&files);
    let out = f.ok("list_files", json!({"path": "many"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 500 + 1);
    assert_eq!(lines[0], "510 files in `many`:");
    assert_eq!(lines[500], "many/f499.txt");
    assert_eq!(
        lines[501],
        "[10 more files not shown; narrow the list with path or glob]"
    );
}

#[test]
fn a_missing_directory_lists_the_whole_repository_and_says_so() {
    let f = repo();
    assert_eq!(
        f.ok("list_files", json!({"path": "./lib"})),
        "5 files in the repository (`lib` does not exist, so the whole repository is listed):\n\
         .github/ci.yml\n.gitignore\nREADME.md\nsrc/lib.rs\nsrc/main.rs"
    );
    let found = f.ok("search", json!({"pattern": "x", "path": "nope"}));
    assert!(
        found.starts_with("`nope` does not exist, so the whole repository was searched.\n"),
        "{found}"
    );
}

#[test]
fn a_bad_glob_is_an_error() {
    let f = repo();
    let out = f.err("list_files", json!({"glob": "a[b"}));
    assert!(out.starts_with("The glob `a[b` is not valid ("), "{out}");
    assert!(out.ends_with("); use a glob such as `**/*.rs`."), "{out}");
}

#[test]
fn a_worktrees_git_file_is_hidden_too() {
    let f = fixture(&[("a.txt", "")]);
    std::fs::remove_dir_all(f.repo().join(".git")).unwrap();
    std::fs::write(
        f.repo().join(".git"),
        "gitdir: /elsewhere/.git/worktrees/w\n",
    )
    .unwrap();
    assert_eq!(
        f.ok("list_files", json!({})),
        "1 file in the repository:\na.txt"
    );
    assert_eq!(
        f.err("read_file", json!({"path": ".git"})),
        "`.git` is inside `.git`, which is off limits; the agent works on the files of the worktree only."
    );
}
