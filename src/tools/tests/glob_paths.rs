//! A task's scope (`src/**`, `tests/*.py`) passed where one file's path belongs: small models do it often.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{fixture, snapshot};

fn repo() -> super::Fixture {
    fixture(&[
        (
            "src/stats.py",
            "def mean(xs):\n    return sum(xs) / len(xs)\n",
        ),
        ("tests/test_stats.py", "from src.stats import mean\n"),
        ("tests/conftest.py", ""),
    ])
}

#[test]
fn read_file_reads_the_one_file_a_glob_matches() {
    let f = repo();
    assert_eq!(
        f.ok("read_file", json!({"path": "src/**"})),
        concat!(
            "`src/**` is a glob; the one file it matches is shown.\nsrc/stats.py (2 lines)\n",
            "     1\tdef mean(xs):\n     2\t    return sum(xs) / len(xs)"
        )
    );
}

#[test]
fn read_file_refuses_a_glob_of_many_files_and_names_them() {
    let f = repo();
    assert_eq!(
        f.err("read_file", json!({"path": "tests/**"})),
        "`tests/**` is a glob pattern, not a file path: read_file takes the path of one file. Files \
         matching it: tests/conftest.py, tests/test_stats.py. Call read_file again with one of these paths."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "docs/*.md"})),
        "`docs/*.md` is a glob pattern, not a file path, and no file matches it. read_file takes the path \
         of one file; call list_files to see the files."
    );
}

#[test]
fn write_file_never_creates_a_file_named_after_a_glob() {
    let f = repo();
    let before = snapshot(&f.repo());
    let err = f.err(
        "write_file",
        json!({"path": "src/**", "content": "x = 1\n"}),
    );
    assert!(err.starts_with("`src/**` is a glob pattern"), "{err}");
    assert!(err.contains("src/stats.py"), "{err}");
    assert_eq!(snapshot(&f.repo()), before);
}

#[test]
fn edit_applies_to_the_one_file_a_glob_matches_and_refuses_more() {
    let f = repo();
    let err = f.err(
        "edit",
        json!({"path": "tests/*.py", "old_string": "x", "new_string": "y"}),
    );
    assert!(
        err.contains("tests/conftest.py, tests/test_stats.py"),
        "{err}"
    );
    f.ok(
        "edit",
        json!({"path": "src/*.py", "old_string": "sum(xs) / len(xs)", "new_string": "sum(xs) / max(len(xs), 1)"}),
    );
    assert!(f.read("src/stats.py").contains("max(len(xs), 1)"));
}

#[test]
fn search_takes_a_glob_path_as_its_filter() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": "mean", "path": "tests/**"})),
        f.ok("search", json!({"pattern": "mean", "glob": "tests/**"})),
    );
    let found = f.ok("search", json!({"pattern": "mean", "path": "tests/**"}));
    assert!(found.contains("tests/test_stats.py"), "{found}");
    assert!(!found.contains("src/stats.py"), "{found}");
}

#[test]
fn a_file_whose_name_has_glob_characters_is_still_read_as_a_path() {
    let f = fixture(&[("docs/[draft].md", "draft\n")]);
    assert_eq!(
        f.ok("read_file", json!({"path": "docs/[draft].md"})),
        "docs/[draft].md (1 line)\n     1\tdraft"
    );
}
