use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

const FIVE: &str = "line 1\nline 2\nline 3\nline 4\nline 5\n";

#[test]
fn a_whole_file_is_numbered_under_a_header_with_its_line_count() {
    let f = fixture(&[("src/lib.rs", FIVE)]);
    assert_eq!(
        f.ok("read_file", json!({"path": "src/lib.rs"})),
        "src/lib.rs (5 lines)\n     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tline 5"
    );
}

#[test]
fn a_range_is_read_and_an_end_past_the_file_is_the_last_line() {
    let f = fixture(&[("src/lib.rs", FIVE)]);
    assert_eq!(
        f.ok(
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 2, "end_line": 3})
        ),
        "src/lib.rs (lines 2-3 of 5)\n     2\tline 2\n     3\tline 3"
    );
    assert_eq!(
        f.ok(
            "read_file",
            json!({"path": "./src/lib.rs", "start_line": 4, "end_line": 99})
        ),
        "src/lib.rs (lines 4-5 of 5)\n     4\tline 4\n     5\tline 5"
    );
}

#[test]
fn a_range_outside_the_file_is_an_error_giving_the_valid_lines() {
    let f = fixture(&[("src/lib.rs", FIVE)]);
    assert_eq!(
        f.err("read_file", json!({"path": "src/lib.rs", "start_line": 9})),
        "start_line 9 is past the end: `src/lib.rs` has 5 lines. Read from a start_line between 1 and 5."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "src/lib.rs", "start_line": 3, "end_line": 2})),
        "end_line 2 is before start_line 3; give an end_line of 3 or more, or leave it out to read to the end."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "src/lib.rs", "start_line": 0})),
        "start_line must be 1 or more; `src/lib.rs` has lines 1 to 5."
    );
}

#[test]
fn a_long_file_is_cut_at_the_line_cap_and_says_where_to_read_on() {
    let text: String = (1..=2500).map(|n| format!("x{n}\n")).collect();
    let f = fixture(&[("big.txt", &text)]);
    let out = f.ok("read_file", json!({"path": "big.txt"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 2000 + 1);
    assert_eq!(lines[0], "big.txt (lines 1-2000 of 2500)");
    assert_eq!(lines[2000], "  2000\tx2000");
    assert_eq!(
        lines[2001],
        "[cut at 2000 lines per call: lines 2001-2500 not shown; read on with start_line=2001]"
    );
    let rest = f.ok("read_file", json!({"path": "big.txt", "start_line": 2001}));
    assert!(
        rest.starts_with("big.txt (lines 2001-2500 of 2500)\n  2001\tx2001\n"),
        "{rest}"
    );
    assert!(rest.ends_with("  2500\tx2500"), "{rest}");
}

#[test]
fn a_wide_file_is_cut_at_the_byte_cap() {
    let text: String = (0..300)
        .map(|_| format!("{}\n", "a".repeat(1000)))
        .collect();
    let f = fixture(&[("wide.txt", &text)]);
    let out = f.ok("read_file", json!({"path": "wide.txt"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "wide.txt (lines 1-102 of 300)");
    assert_eq!(
        lines.last().copied(),
        Some("[cut at 100 KB per call: lines 103-300 not shown; read on with start_line=103]")
    );
}

#[test]
fn a_very_long_line_is_cut_and_the_cut_is_said() {
    let f = fixture(&[("min.js", &format!("{}\n", "a".repeat(2500)))]);
    assert_eq!(
        f.ok("read_file", json!({"path": "min.js"})),
        format!(
            "min.js (1 line)\n     1\t{}… [500 more characters]\n[1 line(s) longer than 2000 characters were cut]",
            "a".repeat(2000)
        )
    );
}

#[test]
fn binary_files_directories_and_missing_files_are_refused() {
    let f = fixture(&[("img.bin", "PNG\0\0\x01"), ("src/a.rs", "")]);
    assert_eq!(
        f.err("read_file", json!({"path": "img.bin"})),
        "`img.bin` is a binary file; only text files can be read or edited."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "src"})),
        "`src` is a directory; use list_files to see what is in it."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "src/b.rs"})),
        "`src/b.rs` does not exist. Use list_files to see the files, or write_file to create it."
    );
}

#[test]
fn empty_and_crlf_files_say_so_in_the_header() {
    let f = fixture(&[("e.txt", ""), ("w.txt", "a\r\nb\r\n")]);
    assert_eq!(
        f.ok("read_file", json!({"path": "e.txt"})),
        "e.txt (empty file)"
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "w.txt"})),
        "w.txt (2 lines, CRLF line endings)\n     1\ta\n     2\tb"
    );
}

#[test]
fn a_missing_path_names_the_files_with_similar_names() {
    let f = fixture(&[
        ("go.mod", "module ports\n"),
        ("ports.go", "package ports\n"),
        ("ports_test.go", "package ports\n"),
        ("src/stats.py", ""),
    ]);
    assert_eq!(
        f.err("read_file", json!({"path": "./go"})),
        "`go` does not exist. Use list_files to see the files, or write_file to create it. Files with \
         similar names: go.mod, ports.go, ports_test.go."
    );
    let err = f.err(
        "edit",
        json!({"path": "stats.py", "old_string": "a", "new_string": "b"}),
    );
    assert!(
        err.ends_with("Files with similar names: src/stats.py."),
        "{err}"
    );
}
