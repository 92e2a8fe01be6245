use super::*;
use pretty_assertions::assert_eq;

fn rust_split(old: &str, new: &str) -> Split {
    match split(&RustRegions, old, new) {
        Some(split) => split,
        None => panic!("both sides should parse"),
    }
}

fn regions(source: &str) -> Vec<RangeInclusive<usize>> {
    RustRegions
        .test_regions(source)
        .expect("source should parse")
}

const ADD_OLD: &str = "\
pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_zero() {
        assert_eq!(add(1, 0), 1);
    }
}
";

const ADD_NEW: &str = "\
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_zero() {
        assert_eq!(add(1, 0), 1);
    }

    #[test]
    fn adds_two_numbers() {
        assert_eq!(add(2, 3), 5);
    }
}
";

const ADD_OLD_WITH_NEW_TEST: &str = "\
pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_zero() {
        assert_eq!(add(1, 0), 1);
    }

    #[test]
    fn adds_two_numbers() {
        assert_eq!(add(2, 3), 5);
    }
}
";

#[test]
fn a_fix_plus_a_new_test_in_an_existing_test_module_keeps_only_the_test() {
    let split = rust_split(ADD_OLD, ADD_NEW);
    assert!(split.test_changed);
    assert!(split.production_changed);
    assert_eq!(split.test_only, ADD_OLD_WITH_NEW_TEST);
    assert_eq!(
        split.summary,
        "1 test hunk kept, 1 production hunk reverted"
    );
}

#[test]
fn a_new_test_module_appended_with_a_fix_keeps_only_the_module() {
    let old = "pub fn double(x: u32) -> u32 {\n    x + 2\n}\n";
    let module = "\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(3), 6);\n    }\n}\n";
    let new = format!("pub fn double(x: u32) -> u32 {{\n    x * 2\n}}\n{module}");
    let split = rust_split(old, &new);
    assert!(split.test_changed);
    assert!(split.production_changed);
    assert_eq!(split.test_only, format!("{old}{module}"));
}

#[test]
fn only_test_changes_give_back_the_new_text() {
    let new = ADD_NEW.replace("a + b", "a - b");
    let split = rust_split(ADD_OLD, &new);
    assert!(split.test_changed);
    assert!(!split.production_changed);
    assert_eq!(split.test_only, new);
    assert_eq!(split.summary, "1 test hunk kept");
}

#[test]
fn only_production_changes_give_back_the_old_text() {
    let new = ADD_OLD.replace("a - b", "a + b");
    let split = rust_split(ADD_OLD, &new);
    assert!(!split.test_changed);
    assert!(split.production_changed);
    assert_eq!(split.test_only, ADD_OLD);
    assert_eq!(split.summary, "1 production hunk reverted");
}

#[test]
fn a_deleted_test_counts_as_a_test_change() {
    let split = rust_split(ADD_OLD_WITH_NEW_TEST, ADD_OLD);
    assert!(split.test_changed);
    assert!(!split.production_changed);
    assert_eq!(split.test_only, ADD_OLD);
}

#[test]
fn a_cfg_test_module_declaration_is_test_code() {
    let source = "pub fn f() {}\n\n#[cfg(test)]\nmod tests;\n";
    assert_eq!(regions(source), vec![3..=4]);
    let split = rust_split("pub fn f() {}\n", source);
    assert!(split.test_changed);
    assert!(!split.production_changed);
    assert_eq!(split.test_only, source);
}

#[test]
fn a_macro_invocation_inside_a_test_module_is_test_code() {
    let old = "\
pub fn f() -> u8 { 1 }

#[cfg(test)]
mod tests {
    macro_rules! check {
        ($name:ident, $value:expr) => {
            #[test]
            fn $name() { assert_eq!(super::f(), $value); }
        };
    }
    check!(one, 1);
}
";
    let new = old.replace(
        "check!(one, 1);",
        "check!(one, 1);\n    check!(still_one, 1);",
    );
    let split = rust_split(old, &new);
    assert!(split.test_changed);
    assert!(!split.production_changed);
    assert_eq!(split.test_only, new);
}

#[test]
fn a_test_function_outside_a_test_module_is_test_code() {
    let old = "use mycrate::f;\n";
    let new = "use mycrate::f;\n\n#[test]\nfn works() {\n    assert!(f());\n}\n";
    assert_eq!(regions(new), vec![3..=6]);
    let split = rust_split(old, new);
    assert!(split.test_changed);
    assert!(!split.production_changed);
    assert_eq!(split.test_only, new);
}

#[test]
fn a_production_change_that_shifts_the_test_module_still_classifies_correctly() {
    let helpers: String = (0..10).map(|i| format!("pub fn h{i}() {{}}\n")).collect();
    let new = ADD_NEW.replace("a + b\n}\n", &format!("a + b\n}}\n\n{helpers}"));
    let split = rust_split(ADD_OLD, &new);
    assert!(split.test_changed);
    assert!(split.production_changed);
    assert_eq!(split.test_only, ADD_OLD_WITH_NEW_TEST);
    assert_eq!(
        split.summary,
        "1 test hunk kept, 2 production hunks reverted"
    );
}

#[test]
fn unparseable_input_on_either_side_gives_none() {
    assert_eq!(split(&RustRegions, "fn f() {}\n", "fn f( {}\n"), None);
    assert_eq!(split(&RustRegions, "fn f( {}\n", "fn f() {}\n"), None);
}

#[test]
fn empty_files_work() {
    let split = rust_split("", "");
    assert_eq!(
        (split.test_changed, split.production_changed),
        (false, false)
    );
    assert_eq!(split.test_only, "");
    assert_eq!(split.summary, "no changes");

    let test = "#[test]\nfn t() {}\n";
    let split = rust_split("", test);
    assert_eq!(
        (split.test_changed, split.production_changed),
        (true, false)
    );
    assert_eq!(split.test_only, test);

    let split = rust_split("", "fn f() {}\n");
    assert_eq!(
        (split.test_changed, split.production_changed),
        (false, true)
    );
    assert_eq!(split.test_only, "");
}

#[test]
fn a_missing_final_newline_is_kept_from_the_source_of_the_last_line() {
    let old = ADD_OLD.trim_end();
    let new = ADD_NEW.trim_end();
    let split = rust_split(old, new);
    assert_eq!(split.test_only, ADD_OLD_WITH_NEW_TEST.trim_end());

    // A test module appended after a last line without a line end: the line end is supplied.
    let old = "fn f() {}";
    let new = "fn f() {}\n\n#[cfg(test)]\nmod tests {}";
    let split = rust_split(old, new);
    assert_eq!(
        (split.test_changed, split.production_changed),
        (true, false)
    );
    assert_eq!(split.test_only, new);

    let split = rust_split("fn f() {}\n", "fn g() {}");
    assert_eq!(split.test_only, "fn f() {}\n");
}

#[test]
fn crlf_files_keep_their_line_ends() {
    let crlf = |text: &str| text.replace('\n', "\r\n");
    let old = crlf(ADD_OLD);
    let new = crlf(&ADD_NEW.replace(
        "mod tests {",
        "mod tests {\n    /// Doc comment.\n    const X: u8 = 1;",
    ));
    let split = rust_split(&old, &new);
    assert!(split.test_changed);
    assert!(split.production_changed);
    assert_eq!(
        split.test_only,
        crlf(&ADD_OLD_WITH_NEW_TEST.replace(
            "mod tests {",
            "mod tests {\n    /// Doc comment.\n    const X: u8 = 1;"
        ))
    );
}

#[test]
fn a_hunk_straddling_a_region_boundary_is_cut_in_two() {
    let old = "fn a() -> u32 { 1 }\n#[test] fn t() { assert_eq!(a(), 1); }\n";
    let new = "fn a() -> u32 { 2 }\n#[test] fn t() { assert_eq!(a(), 2); }\n";
    let split = rust_split(old, new);
    assert!(split.test_changed);
    assert!(split.production_changed);
    assert_eq!(
        split.test_only,
        "fn a() -> u32 { 1 }\n#[test] fn t() { assert_eq!(a(), 2); }\n"
    );
    assert_eq!(
        split.summary,
        "1 test hunk kept, 1 production hunk reverted; 1 hunk split at a test-code boundary"
    );
}

#[test]
fn a_hunk_whose_test_and_production_parts_swap_places_is_reverted_as_production() {
    let old = "#[test] fn t() { assert!(a()); }\nfn a() -> bool { true }\n";
    let new = "fn a() -> bool { false }\n#[test] fn u() { assert!(!a()); }\n";
    let split = rust_split(old, new);
    assert!(!split.test_changed);
    assert!(split.production_changed);
    assert_eq!(split.test_only, old);
    assert!(
        split
            .summary
            .contains("1 mixed hunk reverted as production"),
        "{}",
        split.summary
    );
}

#[test]
fn a_new_test_right_after_a_production_function_does_not_take_its_closing_brace() {
    let old = "fn a() {\n    work();\n}\n";
    let test = "\n#[test]\nfn t() {\n    a();\n}\n";
    let new = format!("fn a() {{\n    rest();\n}}\n{test}");
    let split = rust_split(old, &new);
    assert_eq!((split.test_changed, split.production_changed), (true, true));
    assert_eq!(split.test_only, format!("{old}{test}"));
}

#[test]
fn blank_and_comment_lines_outside_tests_are_neither_test_nor_production() {
    let old = "fn a() {}\n";
    let new = "// A comment.\nfn a() {}\n\n/* block\n   comment */\n";
    let split = rust_split(old, new);
    assert_eq!(
        (split.test_changed, split.production_changed),
        (false, false)
    );
    assert_eq!(split.test_only, new);
    assert_eq!(split.summary, "2 blank/comment hunks kept");

    // A blank line inside a string literal is code.
    let old = "const S: &str = \"a\nb\";\n";
    let new = "const S: &str = \"a\n\nb\";\n";
    let split = rust_split(old, new);
    assert_eq!(
        (split.test_changed, split.production_changed),
        (false, true)
    );
    assert_eq!(split.test_only, old);
}

#[test]
fn regions_apply_to_rust_files_only() {
    assert!(regions_for("src/gate/split.rs").is_some());
    assert!(regions_for("tests/it.RS").is_some());
    assert!(regions_for("src/app.py").is_none());
    assert!(regions_for("Makefile").is_none());
}

/// Variations of a file with a production part and a test part: changing only one part rebuilds the
/// side the other part comes from.
#[test]
fn changing_one_part_only_rebuilds_old_or_new_exactly() {
    let file = |production: &str, tests: &str, ending: &str| {
        format!(
                "use std::fmt;\n\n{production}\n#[cfg(test)]\nmod tests {{\n    use super::*;\n{tests}}}{ending}"
            )
    };
    let productions = [
        "pub fn f() -> u8 {\n    1\n}\n",
        "pub fn f() -> u8 {\n    2\n}\n",
        "pub fn f() -> u8 {\n    let x = 2;\n    x\n}\n\npub fn g() {}\n",
        "",
        "/// Docs.\npub fn f() -> u8 {\n    1\n}\n",
    ];
    let tests = [
            "",
            "    #[test]\n    fn one() {\n        assert_eq!(f(), 1);\n    }\n",
            "    #[test]\n    fn one() {\n        assert_eq!(f(), 1);\n    }\n\n    #[test]\n    fn two() {}\n",
            "    #[test]\n    fn two() {}\n",
            "\n    proptest! {\n        #[test]\n        fn any(x in 0..3u8) { prop_assert!(x < 3); }\n    }\n",
        ];
    for ending in ["\n", "", "\n\n"] {
        for crlf in [false, true] {
            let text = |production: &str, tests: &str| {
                let text = file(production, tests, ending);
                if crlf {
                    text.replace('\n', "\r\n")
                } else {
                    text
                }
            };
            for a in 0..productions.len() {
                for b in 0..tests.len() {
                    for c in 0..tests.len() {
                        let (old, new) = (
                            text(productions[a], tests[b]),
                            text(productions[a], tests[c]),
                        );
                        let split = rust_split(&old, &new);
                        assert_eq!(split.test_only, new, "tests {b} -> {c}");
                        assert!(!split.production_changed, "tests {b} -> {c}");
                        assert_eq!(split.test_changed, b != c, "tests {b} -> {c}");

                        let (old, new) = (
                            text(productions[b], tests[a]),
                            text(productions[c], tests[a]),
                        );
                        let split = rust_split(&old, &new);
                        assert_eq!(split.test_only, old, "production {b} -> {c}");
                        assert!(!split.test_changed, "production {b} -> {c}");
                    }
                }
            }
        }
    }
}
