use super::super::test_support::*;
use super::super::*;
use super::*;
use TestStatus::{Fail, Pass, Skip};

fn cargo(stdout: &str) -> Vec<TestResult> {
    run(Runner::Cargo, stdout, None, Path::new("/nonexistent"))
}

#[test]
fn cargo_stdout_alone_gives_bare_libtest_names_for_units_and_doc_tests() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_stdout_only.txt"
    ));
    assert_eq!(
        statuses(&results),
        expect(&[
            ("noisy::partial_line_then_ok", Pass),
            ("tests::adds", Pass),
            ("tests::adds_wrong", Fail),
            ("tests::ignored_plain", Skip),
            ("tests::ignored_with_reason", Skip),
            ("tests::nested::deep", Pass),
            ("tests::panics_with_message", Fail),
            ("noisy::chatty_passes", Pass),
            ("tests::prints_then_passes", Pass),
            ("tests::should_panic_ok", Pass),
            ("tests::slow_printer", Pass),
            ("runs_binary", Pass),
            ("writes_directly", Pass),
            ("fails_in_cli", Fail),
            ("src/lib.rs - add (line 3)", Pass),
            ("src/lib.rs - sub (line 12)", Fail),
            ("src/lib.rs - ig (line 19)", Skip),
        ])
    );
}

#[test]
fn cargo_failure_messages_come_from_the_stdout_blocks_without_backtrace_frames() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_stdout_only.txt"
    ));
    assert_eq!(
        message_of(&results, "tests::adds_wrong"),
        "thread 'tests::adds_wrong' (7362) panicked at src/lib.rs:35:9:\n\
             assertion `left == right` failed: math is broken\n  left: 4\n right: 5"
    );
    assert_eq!(
            message_of(&results, "tests::panics_with_message"),
            "captured stdout before panic\n\n\
             thread 'tests::panics_with_message' (7371) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
    assert!(message_of(&results, "src/lib.rs - sub (line 12)")
        .starts_with("Test executable failed (exit status: 101).\n\nstderr:\n\nthread 'main'"));
}

#[test]
fn cargo_output_merged_with_stderr_qualifies_ids_with_binary_and_target_path() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_merged.txt"
    ));
    assert_eq!(
        statuses(&results),
        expect(&[
            ("mycrate@src/lib.rs::noisy::partial_line_then_ok", Pass),
            ("mycrate@src/lib.rs::tests::adds", Pass),
            ("mycrate@src/lib.rs::tests::adds_wrong", Fail),
            ("mycrate@src/lib.rs::tests::ignored_plain", Skip),
            ("mycrate@src/lib.rs::tests::ignored_with_reason", Skip),
            ("mycrate@src/lib.rs::tests::nested::deep", Pass),
            ("mycrate@src/lib.rs::tests::panics_with_message", Fail),
            ("mycrate@src/lib.rs::tests::prints_then_passes", Pass),
            ("mycrate@src/lib.rs::tests::should_panic_ok", Pass),
            ("mycrate@src/lib.rs::noisy::chatty_passes", Pass),
            ("mycrate@src/lib.rs::tests::slow_printer", Pass),
            ("cli@tests/cli.rs::fails_in_cli", Fail),
            ("cli@tests/cli.rs::runs_binary", Pass),
            ("cli@tests/cli.rs::writes_directly", Pass),
            ("mycrate@doc::src/lib.rs - sub (line 12)", Fail),
            ("mycrate@doc::src/lib.rs - add (line 3)", Pass),
            ("mycrate@doc::src/lib.rs - ig (line 19)", Skip),
        ])
    );
    assert_eq!(
        message_of(&results, "cli@tests/cli.rs::fails_in_cli"),
        "thread 'fails_in_cli' (7741) panicked at tests/cli.rs:19:14:\n\
             index out of bounds: the len is 0 but the index is 3"
    );
}

#[test]
fn cargo_nocapture_output_with_test_prints_in_the_way_gives_the_same_results() {
    let merged = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_merged.txt"
    ));
    let nocapture = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_merged_nocapture.txt"
    ));
    let mut a = statuses(&merged);
    let mut b = statuses(&nocapture);
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(a, b);
    // `test fake ... FAILED`, printed by a passing test, is not in the binary's failure list.
    assert!(!nocapture.iter().any(|r| r.id.contains("fake")));
    // No `---- stdout ----` blocks with --nocapture: the panic message printed on stderr is used.
    assert_eq!(
            message_of(&nocapture, "mycrate@src/lib.rs::tests::panics_with_message"),
            "thread 'tests::panics_with_message' (7470) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
}

#[test]
fn cargo_serial_nocapture_results_printed_lines_after_the_test_name_are_found() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_merged_nocapture_serial.txt"
    ));
    assert_eq!(
        statuses(&results),
        expect(&[
            ("mycrate@src/lib.rs::noisy::chatty_passes", Pass),
            ("mycrate@src/lib.rs::noisy::partial_line_then_ok", Pass),
            ("mycrate@src/lib.rs::tests::adds", Pass),
            ("mycrate@src/lib.rs::tests::adds_wrong", Fail),
            ("mycrate@src/lib.rs::tests::ignored_plain", Skip),
            ("mycrate@src/lib.rs::tests::ignored_with_reason", Skip),
            ("mycrate@src/lib.rs::tests::nested::deep", Pass),
            ("mycrate@src/lib.rs::tests::panics_with_message", Fail),
            ("mycrate@src/lib.rs::tests::prints_then_passes", Pass),
            ("mycrate@src/lib.rs::tests::should_panic_ok", Pass),
            ("mycrate@src/lib.rs::tests::slow_printer", Pass),
        ])
    );
    assert_eq!(
            message_of(&results, "mycrate@src/lib.rs::tests::panics_with_message"),
            "thread 'tests::panics_with_message' (7535) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
}

#[test]
fn cargo_show_output_successes_section_is_not_read_as_failures() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_show_output_stdout.txt"
    ));
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.status == Fail)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(
        failed,
        vec!["tests::adds_wrong", "tests::panics_with_message"]
    );
    assert_eq!(results.len(), 11);
}

#[test]
fn cargo_passing_doc_test_run_strips_the_test_kind_from_names() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_passing_stdout.txt"
    ));
    assert_eq!(
        results,
        vec![
            result("src/lib.rs - f (line 5)", Pass, None, None),
            result("src/lib.rs - inner (line 14)", Pass, None, None),
            result("src/lib.rs - inner::S (line 18)", Pass, None, None),
            result("src/lib.rs - inner::S::m (line 23)", Pass, None, None),
            result("src/lib.rs - f (line 9)", Pass, None, None),
            result("src/lib.rs - f (line 1)", Pass, None, None),
        ]
    );
}

#[test]
fn cargo_test_binary_that_aborts_fails_the_test_it_was_running() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_abort_serial_merged.txt"
    ));
    assert_eq!(
        results,
        vec![
            result("crashcrate@src/lib.rs::tests::a_passes", Pass, None, None),
            result(
                "crashcrate@src/lib.rs::tests::b_aborts",
                Fail,
                None,
                Some(NO_RESULT_FOR_TESTS)
            ),
        ]
    );
}

#[test]
fn cargo_compile_error_in_merged_output_gives_a_build_id_with_the_compiler_message() {
    let results = cargo(include_str!(
        "../../../../tests/data/testresults/cargo_build_failure_merged.txt"
    ));
    assert_eq!(
        results,
        vec![result(
            "brokencrate@[build]",
            Fail,
            None,
            Some(
                "error[E0308]: mismatched types\n  --> tests/cli.rs:21:20\n   |\n\
                     21 | fn oops() -> i32 { \"x\" }\n   \
                     |              ---   ^^^ expected `i32`, found `&str`\n   \
                     |              |\n   \
                     |              expected `i32` because of return type\n\n\
                     For more information about this error, try `rustc --explain E0308`.\n\
                     error: could not compile `brokencrate` (test \"cli\") due to 1 previous error"
            ),
        )]
    );
}

#[test]
fn cargo_report_time_durations_and_summary_lines_are_understood() {
    let text = "running 2 tests\ntest a ... ok <0.250s>\ntest b ... FAILED <1.000s>\n\nfailures:\n    b\n\n\
                    test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
    assert_eq!(
        cargo(text),
        vec![
            result("a", Pass, Some(250), None),
            result("b", Fail, Some(1000), None)
        ]
    );
}

#[test]
fn cargo_selection_appends_exact_names_after_a_new_or_the_existing_double_dash() {
    let ids = ids(&[
        "mycrate@src/lib.rs::tests::adds",
        "cli@tests/cli.rs::runs_binary",
        "tests::adds",
    ]);
    assert_eq!(
        select_argv(
            Runner::Cargo,
            &argv(&["cargo", "test", "--no-fail-fast"]),
            &ids
        ),
        Some(vec![argv(&[
            "cargo",
            "test",
            "--no-fail-fast",
            "--",
            "--exact",
            "tests::adds",
            "runs_binary"
        ])])
    );
    assert_eq!(
        select_argv(
            Runner::Cargo,
            &argv(&["cargo", "test", "--", "--test-threads=1"]),
            &ids
        ),
        Some(vec![argv(&[
            "cargo",
            "test",
            "--",
            "--test-threads=1",
            "tests::adds",
            "runs_binary",
            "--exact"
        ])])
    );
}

#[test]
fn cargo_selection_leaves_doc_tests_out_and_gives_none_without_unit_tests_or_with_build_failures() {
    let cmd = argv(&["cargo", "test"]);
    assert_eq!(
        select_argv(
            Runner::Cargo,
            &cmd,
            &ids(&["m@doc::src/lib.rs - add (line 3)", "m@src/lib.rs::t"])
        ),
        Some(vec![argv(&["cargo", "test", "--", "--exact", "t"])])
    );
    assert_eq!(
        select_argv(
            Runner::Cargo,
            &cmd,
            &ids(&["m@doc::src/lib.rs - add (line 3)"])
        ),
        None
    );
    assert_eq!(
        select_argv(Runner::Cargo, &cmd, &ids(&["src/lib.rs - add (line 3)"])),
        None
    );
    assert_eq!(
        select_argv(Runner::Cargo, &cmd, &ids(&["m@[build]", "m@src/lib.rs::t"])),
        None
    );
}
