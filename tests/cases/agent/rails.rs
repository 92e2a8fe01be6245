//! The rails through `vouch run`: budgets, repeated and refused calls, cycles and the forcing phase, each
//! against a scripted server.

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_call_three_times_gets_a_warning_and_a_fourth_stops_the_run() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let same = || json!({"path": "calc.py"});
    let model = Model::start(vec![
        call(1, "read_file", same()),
        call(2, "read_file", same()),
        call(3, "read_file", same()),
        call(4, "read_file", same()),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "loop"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests.len(), 4);
    assert!(last_user(&requests[3]).contains("same call"));
    assert!(!last_user(&requests[2]).contains("same call"));
    let r = report(&repo, "loop");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"], r["claimed"]]),
        json!(["incomplete", "repeated-call", 4, null])
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_turns_stops_the_run_as_incomplete() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        call(1, "list_files", json!({})),
        call(2, "search", json!({"pattern": "def add"})),
    ])
    .await;
    // A task file: the id is its stem, max_turns and base come from its front matter.
    let task = repo.tmp.path().join("tasks/turns.md");
    std::fs::create_dir_all(task.parent().unwrap()).unwrap();
    std::fs::write(
        &task,
        "---\ntitle: Look around\nbase: feature\nprofile: python\nmax_turns: 2\n---\nadd() subtracts.\n",
    )
    .unwrap();
    let run = vouch_run(&repo, &model, &["--task", task.to_str().unwrap()]).await;
    model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let r = report(&repo, "turns");
    assert_eq!(
        json!([
            r["status"],
            r["stop_reason"],
            r["turns"],
            r["max_turns"],
            r["title"],
            r["base"]
        ]),
        json!([
            "incomplete",
            "max-turns",
            2,
            2,
            "Look around",
            repo.git(&["rev-parse", "feature"])
        ])
    );
    assert!(run.stderr.contains("turn 2/2"), "{}", run.stderr);
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_without_a_tool_call_get_reminders_then_a_warning_then_stop_the_run() {
    let repo = calc_repo();
    let model = Model::start(vec![
        text("I will fix it."),
        text("Done, I think."),
        text("All good."),
        text("Really."),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "chatty", "--tool-mode", "native"],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(last_user(&requests[1]).contains("no tool call"));
    assert!(last_user(&requests[3]).contains("The run stops"));
    let r = report(&repo, "chatty");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"]]),
        json!(["incomplete", "no-tool-calls", 4])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_edits_gets_a_forcing_phase_then_stops_as_stalled() {
    let repo = calc_repo();
    let model = Model::start(vec![
        call(1, "read_file", json!({"path": "calc.py"})),
        call(2, "read_file", json!({"path": "test_calc.py"})),
        call(3, "list_files", json!({})),
        call(
            4,
            "edit",
            json!({"path": "calc.py", "old_string": "nope", "new_string": "x"}),
        ),
        call(5, "read_file", json!({"path": "pyproject.toml"})),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &[
            "--prompt",
            "stall",
            "--stall-turns",
            "2",
            "--tool-mode",
            "native",
        ],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let tools = |req: &Value| -> Vec<String> {
        req["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(tools(&requests[1]).len(), 7);
    // The phase offers the same tools, so the prompt the server cached stays a prefix of the next one.
    assert_eq!(tools(&requests[2]), tools(&requests[1]));
    assert!(last_user(&requests[2]).contains("only edit, write_file and submit"));
    // A call to a tool the phase does not allow is answered, not run.
    let last = requests[3]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    let answer = last["content"].as_str().unwrap();
    assert!(
        answer.starts_with("list_files is not available now: only edit, write_file and submit"),
        "{answer}"
    );
    let r = report(&repo, "stall");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"]]),
        json!(["incomplete", "stalled", 5])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_budget_stops_the_run() {
    let repo = calc_repo();
    let model = Model::start(vec![
        call(1, "list_files", json!({})),
        call(2, "search", json!({"pattern": "add"})),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "tokens", "--token-budget", "150"],
    )
    .await;
    model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let r = report(&repo, "tokens");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"]]),
        json!(["incomplete", "tokens", 2])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_turn_cycle_with_the_same_results_is_named_then_stops_the_run() {
    let repo = calc_repo();
    let round = |n: usize| {
        vec![
            call(
                n,
                "edit",
                json!({"path": "calc.py", "old_string": "def mul(a, b):", "new_string": "def mul(x, y):"}),
            ),
            call(
                n + 1,
                "write_file",
                json!({"path": "calc.py", "content": CALC}),
            ),
            call(n + 2, "run_tests", json!({})),
        ]
    };
    let model = Model::start(
        round(1)
            .into_iter()
            .chain(round(4))
            .chain(round(7))
            .collect(),
    )
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "cycle"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(!last_user(&requests[5]).contains("going round in a cycle"));
    let named = last_user(&requests[6]);
    assert!(
        named.contains("cycle: edit (failed) -> write_file -> run_tests"),
        "{named}"
    );
    let r = report(&repo, "cycle");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"]]),
        json!(["incomplete", "cycle", 9])
    );
    let kinds: Vec<Value> = transcript(&repo, "cycle")
        .into_iter()
        .filter(|e| e["event"] == "nudge")
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("cycle")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewriting_files_is_not_progress_only_a_change_in_the_tests_result_is() {
    let repo = calc_repo();
    let model = Model::start(vec![
        call(1, "run_tests", json!({})),
        call(
            2,
            "write_file",
            json!({"path": "calc.py", "content": FIXED}),
        ),
        call(3, "write_file", json!({"path": "calc.py", "content": CALC})),
        call(4, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "busy", "--stall-turns", "2"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    // The first test result is progress; two writes after it are not.
    assert_eq!(offered_tools(&requests[2]).len(), 7);
    assert!(!last_user(&requests[2]).contains("The tests' result has not changed"));
    assert!(last_user(&requests[3]).contains("The tests' result has not changed in 2 turns"));
    // The forcing phase keeps the tool list, so the server's cached prompt stays a prefix.
    assert_eq!(offered_tools(&requests[3]), offered_tools(&requests[2]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_made_already_and_retried_among_other_calls_is_named_then_stops_the_run() {
    // The quick start's 1.5B run: the fix applied on one turn, then the same edit again and again with reads
    // and listings between, which neither the repeated-call rail (not in a row) nor the cycle detector (the
    // turns between differ) saw.
    let repo = calc_repo();
    let fix = || {
        json!({"path": "calc.py", "old_string": "def add(a, b):\n    return a - b",
               "new_string": "def add(a, b):\n    return a + b"})
    };
    let between = [
        ("read_file", json!({"path": "calc.py"})),
        ("list_files", json!({})),
        ("search", json!({"pattern": "def add"})),
        ("read_file", json!({"path": "test_calc.py"})),
    ];
    let mut script = vec![call(1, "edit", fix())];
    for (i, (name, args)) in between.iter().enumerate() {
        script.push(call(2 * i + 2, name, args.clone()));
        script.push(call(2 * i + 3, "edit", fix()));
    }
    let model = Model::start(script).await;
    let run = vouch_run(&repo, &model, &["--prompt", "again"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    // Each retry is told the edit looks applied already.
    let retried = tool_results(&requests[3]);
    assert!(
        retried.last().unwrap().1.contains("looks applied already"),
        "{retried:?}"
    );
    // The third refusal is named; the fourth stops the run.
    assert!(!last_user(&requests[5]).contains("refused each time"));
    assert!(
        last_user(&requests[7]).contains("same edit call 3 times and it was refused each time"),
        "{}",
        last_user(&requests[7])
    );
    assert_eq!(requests.len(), 9);
    let r = report(&repo, "again");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["turns"]]),
        json!(["incomplete", "repeated-call", 9])
    );
    let kinds: Vec<Value> = transcript(&repo, "again")
        .into_iter()
        .filter(|e| e["event"] == "nudge")
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("repeated-refusal")]);
}
