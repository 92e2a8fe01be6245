use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

fn repo() -> super::Fixture {
    fixture(&[
        (".gitignore", "target/\n"),
        ("src/a.rs", "fn alpha() {}\nfn beta() {}\n"),
        ("src/b.py", "def alpha():\n    pass\n"),
        ("target/x.rs", "fn alpha() {}\n"),
        ("logo.png", "\0\0alpha"),
    ])
}

#[test]
fn a_regex_finds_matching_lines_as_path_line_text() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": r"fn \w+\("})),
        "2 matches in 1 file:\nsrc/a.rs:1: fn alpha() {}\nsrc/a.rs:2: fn beta() {}"
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "alpha"})),
        "2 matches in 2 files:\nsrc/a.rs:1: fn alpha() {}\nsrc/b.py:1: def alpha():"
    );
}

#[test]
fn an_invalid_regex_is_searched_as_literal_text_and_says_so() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": "alpha("})),
        "`alpha(` is not a valid regular expression (unclosed group), so it was searched as literal text.\n\
         2 matches in 2 files:\nsrc/a.rs:1: fn alpha() {}\nsrc/b.py:1: def alpha():"
    );
}

#[test]
fn a_glob_or_a_path_narrows_the_search() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": "alpha", "glob": "*.py"})),
        "1 match in 1 file (files matching `*.py`):\nsrc/b.py:1: def alpha():"
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "alpha", "path": "src/a.rs"})),
        "1 match in 1 file in `src/a.rs`:\nsrc/a.rs:1: fn alpha() {}"
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "gamma"})),
        "No matches for `gamma`."
    );
}

#[test]
fn many_matches_are_capped_and_long_lines_cut_around_the_match() {
    let many: String = (1..=250).map(|n| format!("hit {n}\n")).collect();
    let long = format!("{}NEEDLE{}\n", "a".repeat(500), "b".repeat(500));
    let f = fixture(&[("many.txt", &many), ("long.txt", &long)]);
    let out = f.ok("search", json!({"pattern": "hit", "path": "many.txt"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 200 + 1);
    assert_eq!(lines[0], "250 matches in 1 file in `many.txt`:");
    assert_eq!(lines[200], "many.txt:200: hit 200");
    assert_eq!(
        lines[201],
        "[50 more matches not shown; narrow the search with path, glob or a more specific pattern]"
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "NEEDLE"})),
        format!(
            "1 match in 1 file:\nlong.txt:1: …{}NEEDLE{}…",
            "a".repeat(100),
            "b".repeat(194)
        )
    );
}

#[test]
fn git_and_binary_files_are_not_searched() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": "core"})),
        "No matches for `core`."
    );
    assert_eq!(
        f.ok("search", json!({"pattern": "alpha", "glob": "*.png"})),
        "No matches for `alpha` (files matching `*.png`)."
    );
}

#[test]
fn a_search_that_finds_nothing_is_tried_again_with_the_name_in_it() {
    let f = repo();
    assert_eq!(
        f.ok("search", json!({"pattern": r"alpha\(x\)", "glob": "*.py"})),
        "No matches for `alpha\\(x\\)` (files matching `*.py`). Searched for `alpha` instead: 1 match in 1 \
         file (files matching `*.py`):\nsrc/b.py:1: def alpha():"
    );
    // A name that is nowhere: one answer, no second search named.
    assert_eq!(
        f.ok("search", json!({"pattern": "gamma\\("})),
        "No matches for `gamma\\(`."
    );
}

#[test]
fn a_glob_that_leaves_no_file_of_the_path_is_left_out() {
    // The 1.5B coder's search on the quick start's task: the task's scope as the glob, a test file as the path.
    let f = fixture(&[
        ("src/lib.rs", "pub fn word_count() {}\n"),
        ("tests/words.rs", "use textstats::word_count;\n"),
    ]);
    assert_eq!(
        f.ok(
            "search",
            json!({"pattern": "word_count", "path": "tests/words.rs", "glob": "src/**"})
        ),
        "No file of `tests/words.rs` matches the glob `src/**`, so the glob was left out.\n1 match in 1 \
         file in `tests/words.rs`:\ntests/words.rs:1: use textstats::word_count;"
    );
    // A glob that keeps some file of the path still filters.
    let out = f.ok("search", json!({"pattern": "word_count", "glob": "src/**"}));
    assert!(
        out.ends_with(":\nsrc/lib.rs:1: pub fn word_count() {}"),
        "{out}"
    );
}
