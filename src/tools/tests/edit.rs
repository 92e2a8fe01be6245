use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

#[test]
fn an_exact_unique_match_is_replaced_and_the_new_lines_are_shown() {
    let f = fixture(&[("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n")]);
    let out = f.ok(
        "edit",
        json!({"path": "src/lib.rs", "old_string": "    2\n", "new_string": "    3\n"}),
    );
    assert_eq!(
        out,
        "Edited src/lib.rs: replaced 1 occurrence, now at line 6.\n\
         \x20    4\t\n\
         \x20    5\tfn b() {\n\
         \x20    6\t    3\n\
         \x20    7\t}"
    );
    assert_eq!(
        f.read("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    3\n}\n"
    );
}

#[test]
fn an_ambiguous_match_names_the_count_and_lines_and_changes_nothing() {
    let f = fixture(&[("a.txt", "x = 1\ny = 2\nx = 1\n")]);
    let out = f.err(
        "edit",
        json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 9"}),
    );
    assert_eq!(
        out,
        "old_string occurs 2 times in `a.txt` (at lines 1, 3). Add surrounding lines to old_string so it \
         occurs exactly once, or set replace_all to true to replace every occurrence."
    );
    assert_eq!(f.read("a.txt"), "x = 1\ny = 2\nx = 1\n");
}

#[test]
fn a_near_miss_by_trailing_whitespace_is_applied() {
    let f = fixture(&[("src/main.rs", "fn main() {   \n    run();\n}\n")]);
    let out = f.ok(
        "edit",
        json!({
            "path": "src/main.rs",
            "old_string": "fn main() {\n    run();\n",
            "new_string": "fn main() {\n    start();\n"
        }),
    );
    assert_eq!(
        out,
        "Edited src/main.rs: replaced 1 occurrence, now at lines 1-2 (old_string matched with trailing \
         whitespace ignored).\n\
         \x20    1\tfn main() {\n\
         \x20    2\t    start();\n\
         \x20    3\t}"
    );
    assert_eq!(f.read("src/main.rs"), "fn main() {\n    start();\n}\n");
}

#[test]
fn a_near_miss_by_indentation_is_applied_at_the_files_indentation() {
    let file =
        "impl A {\n    fn f(&self) {\n        if x {\n            go();\n        }\n    }\n}\n";
    let f = fixture(&[("src/a.rs", file)]);
    let out = f.ok(
        "edit",
        json!({
            "path": "src/a.rs",
            "old_string": "if x {\n    go();\n}",
            "new_string": "if x {\n    go();\n} else {\n    stop();\n}"
        }),
    );
    let expected =
        "impl A {\n    fn f(&self) {\n        if x {\n            go();\n        } else {\n            stop();\n        }\n    }\n}\n";
    assert_eq!(f.read("src/a.rs"), expected);
    assert_eq!(
        out,
        "Edited src/a.rs: replaced 1 occurrence, now at lines 3-7 (old_string matched with indentation \
         ignored; new_string was re-indented to the file's indentation).\n\
         \x20    1\timpl A {\n\
         \x20    2\t    fn f(&self) {\n\
         \x20    3\t        if x {\n\
         \x20    4\t            go();\n\
         \x20    5\t        } else {\n\
         \x20    6\t            stop();\n\
         \x20    7\t        }\n\
         \x20    8\t    }\n\
         \x20    9\t}"
    );
}

#[test]
fn a_too_deep_indentation_is_moved_out_to_the_files_indentation() {
    let f = fixture(&[("a.py", "def f():\n    if x:\n        go()\n    return 1\n")]);
    f.ok(
        "edit",
        json!({
            "path": "a.py",
            "old_string": "        if x:\n            go()\n        return 1\n",
            "new_string": "        if x:\n            go()\n    return 2\n"
        }),
    );
    assert_eq!(
        f.read("a.py"),
        "def f():\n    if x:\n        go()\nreturn 2\n"
    );
}

#[test]
fn a_near_miss_that_is_not_unique_is_an_error_naming_the_lines() {
    let f = fixture(&[("a.rs", "  go();\nx\n    go();\n")]);
    let out = f.err(
        "edit",
        json!({"path": "a.rs", "old_string": "go();\n", "new_string": "stop();\n"}),
    );
    assert_eq!(
        out,
        "old_string occurs 2 times in `a.rs` (at lines 1, 3). Add surrounding lines to old_string so it \
         occurs exactly once, or set replace_all to true to replace every occurrence."
    );
    let out = f.err(
        "edit",
        json!({"path": "a.rs", "old_string": "go(); \n", "new_string": "stop();\n"}),
    );
    assert_eq!(
        out,
        "old_string does not occur exactly in `a.rs`, and with indentation and trailing whitespace ignored \
         it occurs 2 times (at lines 1, 3). Copy old_string exactly from the file (read_file shows it) and \
         add surrounding lines so it occurs once."
    );
    assert_eq!(f.read("a.rs"), "  go();\nx\n    go();\n");
}

const CONFIG: &str = "fn parse(input: &str) -> Result<Config> {\n    let value = toml::from_str(input)?;\n    Ok(value)\n}\n\nfn other() {}\n";

#[test]
fn no_match_shows_the_closest_real_text_with_line_numbers() {
    let f = fixture(&[("src/config.rs", CONFIG)]);
    let out = f.err(
        "edit",
        json!({
            "path": "src/config.rs",
            "old_string": "    let value = toml::from_str(text)?;\n    Ok(value)",
            "new_string": "    toml::from_str(text)"
        }),
    );
    assert_eq!(
        out,
        "old_string does not occur in `src/config.rs`, not even with whitespace ignored. The closest text \
         is at lines 2-3:\n\
         \x20    2\t    let value = toml::from_str(input)?;\n\
         \x20    3\t    Ok(value)\n\
         Copy old_string exactly from the file's current text (without line numbers) and try again."
    );
    assert_eq!(f.read("src/config.rs"), CONFIG);
}

#[test]
fn no_match_and_nothing_similar_says_to_read_the_file() {
    let f = fixture(&[("src/config.rs", CONFIG)]);
    let out = f.err(
        "edit",
        json!({"path": "src/config.rs", "old_string": "zzzz qqqq", "new_string": "y"}),
    );
    assert_eq!(
        out,
        "old_string does not occur in `src/config.rs`, and nothing in the file looks like it. Read the file \
         with read_file and copy old_string exactly from it."
    );
}

#[test]
fn an_old_string_copied_with_line_numbers_gets_a_hint() {
    let f = fixture(&[("src/config.rs", CONFIG)]);
    let out = f.err(
        "edit",
        json!({"path": "src/config.rs", "old_string": "     3\t    Ok(value)", "new_string": "x"}),
    );
    assert_eq!(
        out,
        "old_string does not occur in `src/config.rs`, not even with whitespace ignored. old_string seems to \
         include read_file's line numbers; leave them out and copy only the text after the tab. The closest \
         text is at line 3:\n\
         \x20    3\t    Ok(value)\n\
         Copy old_string exactly from the file's current text (without line numbers) and try again."
    );
}

#[test]
fn a_no_op_edit_is_rejected() {
    let f = fixture(&[("a.txt", "same\n")]);
    let out = f.err(
        "edit",
        json!({"path": "a.txt", "old_string": "same", "new_string": "same"}),
    );
    assert_eq!(
        out,
        "old_string and new_string are the same, so the edit would change nothing. Put the changed text in \
         new_string."
    );
}

#[test]
fn an_empty_old_string_is_rejected_with_what_to_do_instead() {
    let f = fixture(&[("a.txt", "text\n")]);
    let out = f.err(
        "edit",
        json!({"path": "a.txt", "old_string": "", "new_string": "x"}),
    );
    assert_eq!(
        out,
        "old_string is empty. To add text, put a line next to the place in old_string and repeat it in \
         new_string with the new text; to create a file, use write_file."
    );
}

#[test]
fn replace_all_replaces_every_occurrence() {
    let f = fixture(&[("t.txt", "a1\nb\na1\n")]);
    let out = f.ok(
        "edit",
        json!({"path": "t.txt", "old_string": "a1", "new_string": "a2", "replace_all": true}),
    );
    assert_eq!(
        out,
        "Edited t.txt: replaced 2 occurrences, now at lines 1, 3.\n\
         \x20    1\ta2\n\
         \x20    2\tb\n\
         \x20    3\ta2"
    );
    assert_eq!(f.read("t.txt"), "a2\nb\na2\n");
}

#[test]
fn a_crlf_file_stays_crlf() {
    let f = fixture(&[("win.txt", "one\r\ntwo\r\nthree\r\n")]);
    f.ok(
        "edit",
        json!({"path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3\n4"}),
    );
    assert_eq!(f.read("win.txt"), "one\r\n2\r\n3\r\n4\r\n");
    f.ok(
        "edit",
        json!({"path": "win.txt", "old_string": "one\r\n2", "new_string": "1\r\n2"}),
    );
    assert_eq!(f.read("win.txt"), "1\r\n2\r\n3\r\n4\r\n");
}

#[test]
fn editing_a_missing_file_says_how_to_create_it() {
    let f = fixture(&[]);
    let out = f.err(
        "edit",
        json!({"path": "nope.rs", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(
        out,
        "`nope.rs` does not exist. Use list_files to see the files, or write_file to create it."
    );
}

#[test]
fn a_near_miss_with_spaces_for_tabs_is_applied_with_the_files_tabs() {
    let f = fixture(&[("main.go", "func f() {\n\tif x {\n\t\tgo()\n\t}\n}\n")]);
    let out = f.ok(
        "edit",
        json!({
            "path": "main.go",
            "old_string": "    if x {\n        go()\n    }",
            "new_string": "    if x {\n        go()\n        if y {\n            stop()\n        }\n    }"
        }),
    );
    assert_eq!(
        f.read("main.go"),
        "func f() {\n\tif x {\n\t\tgo()\n\t\tif y {\n\t\t\tstop()\n\t\t}\n\t}\n}\n"
    );
    assert!(
        out.contains("new_string was re-indented to the file's indentation"),
        "{out}"
    );
}

#[test]
fn a_near_miss_whose_indentation_cannot_be_mapped_is_inserted_as_given_and_says_so() {
    let f = fixture(&[("a.txt", "  a\n    b\n      c\n")]);
    let out = f.ok(
        "edit",
        json!({"path": "a.txt", "old_string": "a\n  b\n  c", "new_string": "a\n  b\n  d"}),
    );
    assert_eq!(f.read("a.txt"), "a\n  b\n  d\n");
    assert_eq!(
        out,
        "Edited a.txt: replaced 1 occurrence, now at lines 1-3 (old_string matched with indentation \
         ignored; the file's indentation differs irregularly, so new_string was inserted as given: check its \
         indentation).\n\
         \x20    1\ta\n\
         \x20    2\t  b\n\
         \x20    3\t  d"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever the strings, an edit either changes the file and says so, or leaves it exactly as it was.
    #[test]
    fn any_edit_either_changes_the_file_or_leaves_it_untouched(
        old in "[ a\t\r\n{}é]{0,12}",
        new in "[ b\t\n}]{0,8}",
        all in proptest::bool::ANY,
    ) {
        let file = "a {\n\ta\r\n  a é\n\n}\n";
        let f = fixture(&[("f.txt", file)]);
        let out = f.call(
            "edit",
            json!({"path": "f.txt", "old_string": old, "new_string": new, "replace_all": all}),
        );
        let after = f.read("f.txt");
        if out.ok {
            proptest::prop_assert_ne!(after, file, "{}", out.text);
        } else {
            proptest::prop_assert_eq!(after, file, "{}", out.text);
        }
    }
}

#[test]
fn a_function_written_on_one_line_is_shown_as_the_lines_it_spans() {
    // The 1.5B coder's edit on rust-mean-overflow, three times: a ten-line function on one line, with a
    // `return` the file does not have. No single line of the file looks like it.
    let lib = "//! Statistics.\n\n/// The mean.\npub fn mean(values: &[u32]) -> Option<u32> {\n    if values.is_empty() {\n        return None;\n    }\n    let mut total: u32 = 0;\n    for v in values {\n        total += v;\n    }\n    Some(total / values.len() as u32)\n}\n\npub fn other() {}\n";
    let f = fixture(&[("src/lib.rs", lib)]);
    let old = "pub fn mean(values: &[u32]) -> Option<u32> { if values.is_empty() { return None; } let mut total: u32 = 0; for v in values { total += v; } return Some(total / values.len() as u32); }";
    let out = f.err(
        "edit",
        json!({"path": "src/lib.rs", "old_string": old, "new_string": "x"}),
    );
    assert!(
        out.starts_with(
            "old_string does not occur in `src/lib.rs`, not even with whitespace ignored. The closest text \
             is at lines 4-13:\n     4\tpub fn mean(values: &[u32]) -> Option<u32> {\n     5\t    if"
        ),
        "{out}"
    );
    assert!(out.contains("    13\t}\nCopy old_string exactly"), "{out}");
    assert_eq!(f.read("src/lib.rs"), lib);
}

#[test]
fn an_edit_made_already_is_named_applied_and_changes_nothing() {
    // The fix landed on an earlier turn; the model makes the same edit again.
    let lib = "pub fn words(s: &str) -> usize {\n    s.split_whitespace().count()\n}\n";
    let f = fixture(&[("src/lib.rs", lib)]);
    let out = f.err(
        "edit",
        json!({
            "path": "src/lib.rs",
            "old_string": "    s.split(' ').count()\n",
            "new_string": "    s.split_whitespace().count()\n"
        }),
    );
    assert_eq!(
        out,
        "old_string does not occur in `src/lib.rs`, but new_string does, at line 2: this edit looks \
         applied already. Do not make it again: run the tests with run_tests, or read the file with \
         read_file to see its current text."
    );
    assert_eq!(f.read("src/lib.rs"), lib);
    // A short replacement found somewhere says nothing: the closest text is shown as before.
    let out = f.err(
        "edit",
        json!({"path": "src/lib.rs", "old_string": "s.len()", "new_string": "count"}),
    );
    assert!(out.starts_with("old_string does not occur"), "{out}");
    assert!(!out.contains("applied already"), "{out}");
}
