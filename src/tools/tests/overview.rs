//! The first message's view of the repository: which files it shows, and that they are shown as read_file
//! shows them.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;
use crate::tools::overview;

const STATS: &str = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(xs):\n    return sorted(xs)[len(xs) // 2]\n";
const TESTS: &str =
    "from stats import median\n\n\ndef test_median():\n    assert median([3, 1, 2]) == 2\n";

#[test]
fn a_small_repository_is_shown_whole_with_the_files_the_task_is_about_first() {
    let f = fixture(&[
        ("stats.py", STATS),
        ("tests/test_stats.py", TESTS),
        ("pyproject.toml", "[project]\nname = \"stats\"\n"),
        (".gitignore", "__pycache__/\n"),
        ("Cargo.lock", "# lock\n"),
    ]);
    let view = overview(
        &f.workspace,
        "# Task: median of no values\n\n`median([])` raises IndexError.\n",
        10_000,
    )
    .unwrap();
    assert_eq!(
        view.shown,
        ["stats.py", "tests/test_stats.py", "pyproject.toml"]
    );
    assert_eq!(view.files, 5);
    // Exactly what read_file answers, so that the model's edit can quote it.
    let read = f.ok("read_file", json!({"path": "stats.py"}));
    assert!(view.text.contains(&format!("\n{read}\n")), "{}", view.text);
    assert!(
        view.text.starts_with(
            "\nThe repository's files (5):\n.gitignore\nCargo.lock\npyproject.toml\nstats.py\n\
             tests/test_stats.py\n\nThe 3 files the task is about as read_file shows them"
        ),
        "{}",
        view.text
    );
    assert!(f.workspace.was_seen("stats.py") && !f.workspace.was_seen("Cargo.lock"));
}

#[test]
fn past_the_budget_only_the_files_the_task_is_about_are_shown() {
    let filler = "x = 1\n".repeat(400);
    let f = fixture(&[
        ("stats.py", STATS),
        ("tests/test_stats.py", TESTS),
        ("report.py", &filler),
        ("util.py", &filler),
    ]);
    let view = overview(&f.workspace, "`median` of an empty list", 1_000).unwrap();
    assert_eq!(view.shown, ["stats.py", "tests/test_stats.py"]);
    assert!(view.bytes <= 1_000, "{}", view.bytes);
    assert!(!view.text.contains("x = 1"));
    assert!(
        view.text.contains("report.py\n"),
        "the list names every file"
    );
}

#[test]
fn a_path_the_task_names_comes_first_and_a_plain_word_counts_where_code_defines_it() {
    let f = fixture(&[
        ("src/lib.rs", "pub fn window_max(xs: &[i32]) -> i32 { 0 }\n"),
        ("src/other.rs", "pub fn unrelated() {}\n"),
        ("docs/notes.md", "window_max is documented here\n"),
    ]);
    let view = overview(
        &f.workspace,
        "The window_max function panics; see docs/notes.md",
        80,
    )
    .unwrap_or_else(|| panic!("an overview"));
    // Only the named path fits 80 bytes; the definition comes next when there is room.
    assert_eq!(view.shown, ["docs/notes.md"]);
    let view = overview(
        &f.workspace,
        "The window_max function panics; see docs/notes.md",
        1_000,
    )
    .unwrap();
    assert_eq!(view.shown, ["docs/notes.md", "src/lib.rs", "src/other.rs"]);
    let view = overview(&f.workspace, "The window_max function panics", 150).unwrap();
    assert_eq!(view.shown, ["src/lib.rs"]);
}

#[test]
fn a_large_file_is_shown_around_the_definition() {
    let mut big = "// filler\n".repeat(500);
    big.push_str("pub fn parse_ports(s: &str) -> Vec<u16> {\n    todo!()\n}\n");
    big.push_str(&"// more\n".repeat(500));
    let f = fixture(&[("src/ports.rs", &big)]);
    let view = overview(&f.workspace, "`parse_ports(\"\")` panics", 2_000).unwrap();
    assert_eq!(view.shown, ["src/ports.rs"]);
    assert!(
        view.text
            .contains("src/ports.rs (lines 491-541 of 1003)\n   491\t// filler\n"),
        "{}",
        view.text
    );
    assert!(view.text.contains("   501\tpub fn parse_ports("));
}

#[test]
fn no_budget_no_overview() {
    let f = fixture(&[("stats.py", STATS)]);
    assert!(overview(&f.workspace, "`median`", 0).is_none());
}

#[test]
fn the_task_patterns_compile() {
    let f = fixture(&[("src/ports.rs", "pub fn parse_ports() {}\n")]);
    // Each pattern finds what it is for: a name in backticks, and a path.
    let view = overview(&f.workspace, "`parse_ports` fails", 10).unwrap();
    assert!(view.shown.is_empty());
    let big = "// x\n".repeat(100) + "pub fn parse_ports() {}\n";
    let f = fixture(&[
        ("src/ports.rs", &big),
        ("src/other.rs", &"// y\n".repeat(100)),
    ]);
    assert_eq!(
        overview(&f.workspace, "`parse_ports` fails", 600)
            .unwrap()
            .shown,
        ["src/ports.rs"]
    );
    assert_eq!(
        overview(&f.workspace, "see src/other.rs", 600)
            .unwrap()
            .shown,
        ["src/other.rs"]
    );
}
