//! What a tool result says comes next: a fix to production code is followed by a reminder to write the
//! regression test, until the run has one.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_without_a_test_is_reminded_of_the_test_until_one_is_written() {
    let repo = calc_repo();
    let fix = json!({"path": "calc.py", "old_string": "    return a - b\n\n\ndef sub",
                     "new_string": "    return a + b\n\n\ndef sub"});
    let model = Model::start(vec![
        call(1, "edit", fix),
        call(2, "write_file", json!({"path": "calc.py", "content": FIXED})),
        call(3, "write_file", json!({"path": "test_add.py", "content": NEW_TEST})),
        call(
            4,
            "edit",
            json!({"path": "calc.py", "old_string": "def sub(a, b):", "new_string": "def sub(a, b):  # a - b"}),
        ),
        call(5, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "next"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let result = |n: usize| tool_results(&requests[n])[0].1.clone();
    assert!(result(1).starts_with("Edited calc.py"), "{}", result(1));
    assert!(
        result(1).ends_with("Next: add a regression test that fails without this change (the issue's symptom as an assertion) next to the existing tests, then call run_tests."),
        "{}",
        result(1)
    );
    // A write that changed nothing is not a fix to be reminded of.
    assert!(result(2).starts_with("Unchanged"), "{}", result(2));
    assert!(!result(2).contains("regression test"), "{}", result(2));
    // Once a test is written, changes to production code get no reminder.
    assert!(!result(3).contains("regression test"), "{}", result(3));
    assert!(result(4).starts_with("Edited calc.py"), "{}", result(4));
    assert!(!result(4).contains("regression test"), "{}", result(4));
}
