use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

#[test]
fn a_new_file_is_created_with_its_parent_directories() {
    let f = fixture(&[]);
    assert_eq!(
        f.ok(
            "write_file",
            json!({"path": "src/deep/new.rs", "content": "fn a() {}\n\n"})
        ),
        "Created src/deep/new.rs: 11 bytes, 2 lines."
    );
    assert_eq!(f.read("src/deep/new.rs"), "fn a() {}\n\n");
}

#[test]
fn an_existing_file_is_replaced() {
    let f = fixture(&[("a.txt", "old\ncontent\n")]);
    assert_eq!(
        f.ok("write_file", json!({"path": "a.txt", "content": "x\n"})),
        "Replaced a.txt: 2 bytes, 1 line."
    );
    assert_eq!(f.read("a.txt"), "x\n");
}

#[test]
fn replacing_a_crlf_file_keeps_crlf() {
    let f = fixture(&[("w.txt", "a\r\nb\r\n")]);
    assert_eq!(
        f.ok("write_file", json!({"path": "w.txt", "content": "c\nd\n"})),
        "Replaced w.txt: 6 bytes, 2 lines, CRLF line endings kept."
    );
    assert_eq!(f.read("w.txt"), "c\r\nd\r\n");
}

#[test]
fn a_directory_or_the_root_cannot_be_written() {
    let f = fixture(&[("src/a.rs", "")]);
    assert_eq!(
        f.err("write_file", json!({"path": "src", "content": "x"})),
        "`src` is a directory; give the path of a file inside it."
    );
    assert_eq!(
        f.err("write_file", json!({"path": ".", "content": "x"})),
        "write_file needs the path of a file, such as `src/new.rs`."
    );
}

const LIB: &str = "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\nfn e() {}\n";
/// Lines that define nothing the definitions guard names, for the rules about lines.
const CONSTS: &str =
    "const A: u8 = 1;\nconst B: u8 = 2;\nconst C: u8 = 3;\nconst D: u8 = 4;\nconst E: u8 = 5;\n";

#[test]
fn a_write_that_removes_most_of_an_unread_file_is_refused_and_allowed_once_read() {
    let f = fixture(&[("src/lib.rs", CONSTS)]);
    let short = json!({"path": "src/lib.rs", "content": "const A: u8 = 1;\nconst Z: u8 = 9;\n"});
    assert_eq!(
        f.err("write_file", short.clone()),
        "Not written: this would remove 4 of the 5 lines of `src/lib.rs`, which you have not read. Use \
         edit to change part of a file (read_file shows its lines first); write_file replaces a whole file."
    );
    assert_eq!(f.read("src/lib.rs"), CONSTS);
    // After a read, the whole file may go.
    f.ok("read_file", json!({"path": "src/lib.rs"}));
    assert_eq!(
        f.ok("write_file", short),
        "Replaced src/lib.rs: 34 bytes, 2 lines."
    );
}

#[test]
fn a_write_that_keeps_most_lines_of_an_unread_file_is_allowed() {
    let f = fixture(&[("src/lib.rs", CONSTS)]);
    let most = json!({"path": "src/lib.rs", "content": "const A: u8 = 1;\nconst B: u8 = 2;\nconst C: u8 = 3;\nconst X: u8 = 9;\n"});
    assert_eq!(
        f.ok("write_file", most),
        "Replaced src/lib.rs: 68 bytes, 4 lines."
    );
}

#[test]
fn a_tool_call_as_content_is_refused_even_for_a_new_file() {
    let f = fixture(&[("src/lib.rs", LIB)]);
    let call = r#"{"name": "edit", "arguments": {"path": "src/lib.rs", "old_string": "a", "new_string": "b"}}"#;
    for path in ["src/lib.rs", "src/new.rs"] {
        assert_eq!(
            f.err("write_file", json!({"path": path, "content": call})),
            format!(
                "Not written: the content is a tool call, not the text of `{path}`. Call the tool itself; \
                 to change part of a file, use edit."
            )
        );
    }
    assert_eq!(f.read("src/lib.rs"), LIB);
    assert!(!f.repo().join("src/new.rs").exists());
    // JSON that is not a call is written.
    assert_eq!(
        f.ok(
            "write_file",
            json!({"path": "data.json", "content": "{\"name\": \"x\"}\n"})
        ),
        "Created data.json: 14 bytes, 1 line."
    );
}

#[test]
fn writing_the_same_content_says_unchanged_and_records_no_change() {
    let f = fixture(&[("src/lib.rs", LIB)]);
    assert_eq!(
        f.ok("write_file", json!({"path": "src/lib.rs", "content": LIB})),
        "Unchanged: `src/lib.rs` already has this content; nothing was written."
    );
    assert!(f.workspace.changed().paths.is_empty());
}

#[test]
fn a_rewrite_that_deletes_tests_or_functions_is_refused_with_their_names() {
    let tests = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n\n\ndef test_mean_of_one():\n    assert mean([4]) == 4\n";
    let words = "package words\n\nfunc Count(s string) map[string]int { return nil }\n\nfunc Format(m map[string]int) string { return \"\" }\n";
    let f = fixture(&[("tests/test_stats.py", tests), ("words.go", words)]);
    f.ok("read_file", json!({"path": "tests/test_stats.py"}));
    f.ok("read_file", json!({"path": "words.go"}));
    // A test module that is a script: a statement at the top is no part of a file, so nothing merges.
    let out = f.err(
        "write_file",
        json!({"path": "tests/test_stats.py", "content": "def test_median():\n    assert median([3, 1, 2]) == 2\n\n\ntest_median()\n"}),
    );
    assert_eq!(
        out,
        "Not written: this would delete definitions from `tests/test_stats.py` (`test_mean`, \
         `test_mean_of_one`). write_file replaces the whole file: to change part of it use edit; to add a \
         test, add it beside the existing ones. Do not delete tests."
    );
    assert_eq!(f.read("tests/test_stats.py"), tests);
    // The program's expected output written over its Go source.
    let out = f.err(
        "write_file",
        json!({"path": "words.go", "content": "apple: 1\nfig: 2\npear: 1\n"}),
    );
    assert!(out.contains("(`Count`, `Format`)"), "{out}");
    assert_eq!(f.read("words.go"), words);
    // The whole file with one more test is written.
    let more = format!("{tests}\n\ndef test_median():\n    assert median([3, 1, 2]) == 2\n");
    f.ok(
        "write_file",
        json!({"path": "tests/test_stats.py", "content": more}),
    );
    assert_eq!(f.read("tests/test_stats.py"), more);
}

#[test]
fn a_write_of_part_of_a_file_merges_its_definitions_and_keeps_the_rest() {
    // The 1.5B coder's write over a test module: only its own new test, and the imports it needs.
    let tests = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n";
    let f = fixture(&[("tests/test_stats.py", tests)]);
    let out = f.ok(
        "write_file",
        json!({"path": "tests/test_stats.py", "content": "import pytest\nfrom stats import median\n\n\ndef test_median_empty():\n    with pytest.raises(ValueError):\n        median([])\n"}),
    );
    assert_eq!(
        out,
        "Merged into tests/test_stats.py (194 bytes, 12 lines): your content is part of the file, so its \
         definitions went in (added `test_median_empty`) and the ones it left out were kept (`test_mean`). \
         To delete a definition, use edit."
    );
    assert_eq!(
        f.read("tests/test_stats.py"),
        "from stats import mean\nimport pytest\nfrom stats import median\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n\n\ndef test_median_empty():\n    with pytest.raises(ValueError):\n        median([])\n"
    );
    assert!(f.workspace.changed().paths.contains("tests/test_stats.py"));
}
