//! `vouch backlog` end to end: the real binary running real `vouch run` children against one scripted model
//! server that answers every task's conversation on its own (keyed by the task's title), real git, real
//! pytest for the verified tasks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::util::model_server::calc::{self, CALC, INERT_TEST, NEW_TEST, OLD_TEST};
use crate::util::model_server::{call, task_text, Answer, ModelServer};
use crate::util::{snapshot_dir, Repo, Run};

pub(super) fn calc_repo() -> Repo {
    Repo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        ("calc.py", CALC),
        ("test_calc.py", OLD_TEST),
    ])
}

/// Task files `<id>.md` titled `Title <id>` in a folder beside the repository; the folder.
pub(super) fn tasks(repo: &Repo, ids: &[&str]) -> PathBuf {
    let dir = repo.tmp.path().join("tasks");
    std::fs::create_dir_all(&dir).unwrap();
    for id in ids {
        std::fs::write(
            dir.join(format!("{id}.md")),
            format!(
                "---\ntitle: {}\n---\nadd() in calc.py subtracts.\n",
                title(id)
            ),
        )
        .unwrap();
    }
    dir
}

pub(super) fn title(id: &str) -> String {
    format!("Title {id}")
}

/// A fix with a biting test: verified.
pub(super) fn fixing() -> Vec<Answer> {
    answers(calc::fix_with("test_add.py", NEW_TEST))
}

fn answers(messages: Vec<Value>) -> Vec<Answer> {
    messages.into_iter().map(Answer::Message).collect()
}

pub(super) fn no_go(why: &str) -> Answer {
    call(1, "submit", json!({"verdict": "NO-GO", "summary": why}))
}

fn slow_no_go(delay: Duration) -> Answer {
    let Answer::Message(m) = no_go("slow") else {
        unreachable!()
    };
    Answer::Slow(delay, m)
}

/// `vouch backlog DIR --repo REPO --endpoint URL ARGS -- RUN_ARGS` as a command (not started).
pub(super) fn command(
    repo: &Repo,
    dir: &Path,
    url: &str,
    args: &[&str],
    run_args: &[&str],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(crate::util::vouch_bin());
    cmd.arg("backlog")
        .arg(dir)
        .arg("--repo")
        .arg(&repo.dir)
        .args(["--endpoint", url])
        .args(args)
        .args([
            "--",
            "--author",
            "Agent <agent@example.com>",
            "--tool-mode",
            "native",
        ])
        .args(run_args)
        .current_dir(repo.tmp.path())
        .env("VOUCH_CACHE", &repo.cache)
        .env("VOUCH_DATA", repo.data())
        .env("XDG_CONFIG_HOME", repo.tmp.path().join("config"))
        .env_remove("RUST_LOG")
        .env_remove("VOUCH_ENDPOINT")
        .env_remove("VOUCH_MODEL")
        .envs(crate::util::git_env());
    cmd
}

pub(super) fn output(out: std::process::Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the backlog to its end off the runtime that serves the model.
async fn backlog(repo: &Repo, dir: &Path, url: &str, args: &[&str], run_args: &[&str]) -> Run {
    let mut cmd = command(repo, dir, url, args, run_args);
    tokio::task::spawn_blocking(move || output(cmd.output().unwrap()))
        .await
        .unwrap()
}

pub(super) fn explain(run: &Run) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        run.code, run.stdout, run.stderr
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `(task, status)` of each row of a JSON summary.
fn statuses(summary: &Value) -> Vec<(String, String)> {
    summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The attempts' logs under the backlog state dirs.
fn claims_dir_logs(repo: &Repo) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![repo.data().join("backlogs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "log") {
                out.push(std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// The lock files left under the backlog state dirs.
fn claims(repo: &Repo) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = repo.data().join("backlogs");
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "lock") {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_tasks_run_three_at_a_time_with_mixed_outcomes_in_one_summary() {
    let repo = calc_repo();
    let dir = tasks(
        &repo,
        &["fix-a", "fix-b", "give-up-c", "give-up-d", "dead-e"],
    );
    let before = snapshot_dir(&repo.dir);
    let status_before = repo.git(&["status", "--porcelain=v1", "--untracked-files=all"]);
    let head_before = repo.git(&["rev-parse", "HEAD"]);
    let server = ModelServer::start(vec![
        ("Title fix-a", fixing()),
        ("Title fix-b", fixing()),
        ("Title give-up-c", vec![no_go("c cannot be done")]),
        ("Title give-up-d", vec![no_go("d cannot be done")]),
        ("Title dead-e", vec![Answer::DeadForever]),
    ])
    .await;
    let json_out = repo.tmp.path().join("out/summary.json");
    let md_out = repo.tmp.path().join("out/summary.md");
    let run = backlog(
        &repo,
        &dir,
        &server.url,
        &[
            "--jobs",
            "3",
            "--json",
            json_out.to_str().unwrap(),
            "--markdown",
            md_out.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert!(server.peak() <= 3, "{} requests at once", server.peak());
    let sessions = server.finish();
    // An infrastructure failure is the worst outcome here.
    assert_eq!(run.code, 3, "{}", explain(&run));
    for id in ["fix-a", "fix-b"] {
        assert_eq!(sessions[&title(id)].len(), 3, "{id}");
    }
    for id in ["give-up-c", "give-up-d"] {
        assert_eq!(sessions[&title(id)].len(), 1, "{id}");
    }

    let summary = read_json(&json_out);
    assert_eq!(
        statuses(&summary),
        pairs(&[
            ("dead-e", "infra"),
            ("fix-a", "verified"),
            ("fix-b", "verified"),
            ("give-up-c", "rejected"),
            ("give-up-d", "rejected"),
        ])
    );
    let row = |id: &str| {
        summary["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["task"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(row("fix-a")["branch"], "vouch/fix-a");
    assert_eq!(row("fix-a")["turns"], 3);
    assert_eq!(row("fix-a")["attempts"][0]["outcome"], "verified");
    assert_eq!(row("fix-a")["attempts"][0]["run_status"], "verified");
    assert_eq!(row("give-up-c")["attempts"][0]["run_status"], "no-go");
    assert_eq!(row("dead-e")["attempts"][0]["run_status"], "error");
    assert_eq!(row("dead-e")["attempts"][0]["exit_code"], 3);
    assert!(row("dead-e")["attempts"][0]["error"]
        .as_str()
        .unwrap()
        .contains("503"));

    // The console table and the Markdown say the same.
    let table: Vec<&str> = run
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("task "))
        .collect();
    assert_eq!(
        table[0].split_whitespace().collect::<Vec<_>>(),
        ["task", "status", "attempts", "turns", "time", "branch", "PR"],
        "{}",
        run.stderr
    );
    let cells = |n: usize| -> Vec<&str> {
        let c: Vec<&str> = table[n].split_whitespace().collect();
        // task, status, attempts (count and models), turns, branch, PR: all but the time.
        vec![c[0], c[1], c[2], c[3], c[4], c[6], c[7]]
    };
    assert_eq!(
        cells(1),
        ["dead-e", "infra", "1", "(local)", "1", "vouch/dead-e", "-"]
    );
    assert_eq!(
        cells(2),
        ["fix-a", "verified", "1", "(local)", "3", "vouch/fix-a", "-"]
    );
    assert_eq!(
        cells(3),
        ["fix-b", "verified", "1", "(local)", "3", "vouch/fix-b", "-"]
    );
    assert_eq!(
        cells(4),
        [
            "give-up-c",
            "rejected",
            "1",
            "(local)",
            "1",
            "vouch/give-up-c",
            "-"
        ]
    );
    assert_eq!(
        cells(5),
        [
            "give-up-d",
            "rejected",
            "1",
            "(local)",
            "1",
            "vouch/give-up-d",
            "-"
        ]
    );
    assert_eq!(table[6], "5 tasks: 2 verified, 2 rejected, 1 infra");
    let md = std::fs::read_to_string(&md_out).unwrap();
    assert!(
        md.contains("5 tasks: 2 verified, 2 rejected, 1 infra"),
        "{md}"
    );
    assert!(
        md.contains("| task | status | attempts | turns | time | branch | PR |"),
        "{md}"
    );
    assert!(md.contains("| fix-b | verified | 1 (local) | 3 | "), "{md}");
    assert!(md.contains("| dead-e | infra | 1 (local) | 1 | "), "{md}");
    assert!(md.contains("| dead-e | 1 | local | "), "{md}");

    // The user's checkout, index, HEAD and branches are as they were; vouch added only its branches.
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(
        repo.git(&["status", "--porcelain=v1", "--untracked-files=all"]),
        status_before
    );
    let branches = repo.git(&["branch", "--format=%(refname:short)"]);
    let branches: BTreeSet<&str> = branches.lines().collect();
    assert_eq!(
        branches,
        BTreeSet::from([
            "main",
            "vouch/dead-e",
            "vouch/fix-a",
            "vouch/fix-b",
            "vouch/give-up-c",
            "vouch/give-up-d"
        ])
    );
    let after = snapshot_dir(&repo.dir);
    for (path, bytes) in &before {
        let git = repo.dir.join(".git");
        if path.starts_with(&git)
            && !path.starts_with(git.join("index"))
            && path != &git.join("HEAD")
        {
            continue;
        }
        assert!(after.get(path) == Some(bytes), "{} changed", path.display());
    }
    assert!(claims(&repo).is_empty(), "{:?}", claims(&repo));
    // vouch clean takes what the backlog left.
    let clean = repo.vouch(&["clean", "--repo", repo.dir.to_str().unwrap(), "--force"]);
    assert_eq!(clean.code, 0, "{}", explain(&clean));
    assert_eq!(repo.git(&["branch", "--format=%(refname:short)"]), "main");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_records_the_unfinished_tasks_and_resume_runs_exactly_those() {
    let repo = calc_repo();
    let dir = tasks(&repo, &["t1-quick", "t2-slow", "t3-slow", "t4-slow"]);
    let long = Duration::from_secs(120);
    let server = ModelServer::start(vec![
        ("Title t1-quick", vec![no_go("quick")]),
        ("Title t2-slow", vec![slow_no_go(long)]),
        ("Title t3-slow", vec![slow_no_go(long)]),
        ("Title t4-slow", vec![slow_no_go(long)]),
    ])
    .await;
    let json_out = repo.tmp.path().join("first.json");
    let mut cmd = command(
        &repo,
        &dir,
        &server.url,
        &["--jobs", "2", "--json", json_out.to_str().unwrap()],
        &[],
    );
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    // Wait until t1 is done and two slow tasks are waiting on the model: t4 is still queued.
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.started().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the tasks never started: {:?}",
            server.started()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Ctrl-C: SIGINT to the process group.
    unsafe {
        libc::kill(-pgid, libc::SIGINT);
    }
    let first = tokio::task::spawn_blocking(move || output(child.wait_with_output().unwrap()))
        .await
        .unwrap();
    assert_eq!(first.code, 130, "{}", explain(&first));
    let sessions = server.finish_stopped();
    let asked: Vec<&String> = sessions
        .iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(k, _)| k)
        .collect();
    assert_eq!(asked, ["Title t1-quick", "Title t2-slow", "Title t3-slow"]);
    let summary = read_json(&json_out);
    let done: Vec<(String, String)> = statuses(&summary);
    assert_eq!(done[0], ("t1-quick".to_string(), "rejected".to_string()));
    assert!(
        done[1..].iter().all(|(_, s)| s == "interrupted"),
        "{done:?}"
    );
    assert!(claims(&repo).is_empty(), "claims left: {:?}", claims(&repo));

    // --resume runs the three unfinished tasks and nothing else: t1 has no script now.
    let server = ModelServer::start(vec![
        ("Title t2-slow", vec![no_go("two")]),
        ("Title t3-slow", vec![no_go("three")]),
        ("Title t4-slow", vec![no_go("four")]),
    ])
    .await;
    let json_out = repo.tmp.path().join("second.json");
    let again = backlog(
        &repo,
        &dir,
        &server.url,
        &[
            "--resume",
            "--jobs",
            "2",
            "--json",
            json_out.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    server.finish();
    assert_eq!(again.code, 1, "{}", explain(&again));
    let summary = read_json(&json_out);
    assert_eq!(
        statuses(&summary),
        pairs(&[
            ("t1-quick", "rejected"),
            ("t2-slow", "rejected"),
            ("t3-slow", "rejected"),
            ("t4-slow", "rejected"),
        ])
    );
    assert_eq!(summary["tasks"][0]["earlier"], true);
    assert_eq!(summary["tasks"][1]["earlier"], false);
    assert!(
        again.stderr.contains("rejected (earlier)"),
        "{}",
        again.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_runner_skips_the_tasks_the_first_has_claimed() {
    let repo = calc_repo();
    let ids = ["c1", "c2", "c3"];
    let dir = tasks(&repo, &ids);
    let delay = Duration::from_secs(4);
    let server = ModelServer::start(
        ids.iter()
            .map(|id| {
                let t: &'static str = Box::leak(title(id).into_boxed_str());
                (t, vec![slow_no_go(delay)])
            })
            .collect(),
    )
    .await;
    let mut first = command(&repo, &dir, &server.url, &["--jobs", "3"], &[]);
    let mut first = first
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.started().len() < 3 {
        if first.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = first.kill();
            let out = output(first.wait_with_output().unwrap());
            let logs = claims_dir_logs(&repo);
            panic!(
                "the first runner did not start every task ({:?}): {}\nlogs: {logs:#?}",
                server.started(),
                explain(&out)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Each task is claimed by the first runner: the second runs none of them.
    let second = backlog(&repo, &dir, &server.url, &["--jobs", "3"], &[]).await;
    let first = tokio::task::spawn_blocking(move || output(first.wait_with_output().unwrap()))
        .await
        .unwrap();
    let sessions = server.finish();
    assert_eq!(first.code, 1, "{}", explain(&first));
    assert_eq!(second.code, 0, "{}", explain(&second));
    for id in ids {
        assert_eq!(sessions[&title(id)].len(), 1, "{id} ran more than once");
        assert!(
            second
                .stderr
                .contains(&format!("{id}: claimed by another runner (pid ")),
            "{}",
            second.stderr
        );
    }
    assert!(
        second.stderr.contains("3 tasks: 3 skipped"),
        "{}",
        second.stderr
    );
    assert!(
        first.stderr.contains("3 tasks: 3 rejected"),
        "{}",
        first.stderr
    );
}

#[test]
fn plans_of_every_shard_partition_the_backlog_and_run_nothing() {
    let repo = calc_repo();
    let ids: Vec<String> = (0..23).map(|i| format!("task-{i:02}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let dir = tasks(&repo, &refs);
    // No model server at all: a plan asks nothing of it.
    let url = "http://127.0.0.1:9";
    let plan = |args: &[&str]| {
        let out = command(&repo, &dir, url, args, &[]).output().unwrap();
        output(out)
    };
    let whole = repo.tmp.path().join("whole.json");
    let run = plan(&["--plan", "--json", whole.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(read_json(&whole), json!({ "tasks": ids }));
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), refs);
    for n in [1, 2, 3, 5] {
        let mut seen: Vec<String> = Vec::new();
        for k in 1..=n {
            let file = repo.tmp.path().join(format!("plan-{k}-{n}.json"));
            let shard = format!("{k}/{n}");
            let run = plan(&[
                "--plan",
                "--shard",
                &shard,
                "--json",
                file.to_str().unwrap(),
            ]);
            assert_eq!(run.code, 0, "{}", explain(&run));
            let part = crate::util::strings(&read_json(&file)["tasks"]);
            let mut sorted = part.clone();
            sorted.sort();
            assert_eq!(part, sorted, "a shard's plan is sorted");
            seen.extend(part);
        }
        seen.sort();
        assert_eq!(seen, ids, "shards of {n}: every task once");
    }
    assert!(claims(&repo).is_empty());
    assert!(!repo.data().join("runs").exists());
    for bad in ["0/3", "4/3", "3"] {
        let run = plan(&["--plan", "--shard", bad]);
        assert_eq!(run.code, 2, "{}", explain(&run));
        assert!(
            run.stderr.contains(&format!("bad --shard `{bad}`")),
            "{}",
            run.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_entry_point_runs_the_named_task_alone_with_its_exit_code() {
    let repo = calc_repo();
    let dir = tasks(&repo, &["a", "b", "c"]);
    let server = ModelServer::start(vec![
        ("Title a", vec![no_go("a is not for me")]),
        ("Title b", vec![]),
        ("Title c", vec![]),
    ])
    .await;
    let run = backlog(
        &repo,
        &dir,
        &server.url,
        &["--index", "1", "--task-ids", "c,a"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", explain(&run));
    let unknown = backlog(
        &repo,
        &dir,
        &server.url,
        &["--index", "0", "--task-ids", "zz"],
        &[],
    )
    .await;
    assert_eq!(unknown.code, 2, "{}", explain(&unknown));
    assert!(
        unknown
            .stderr
            .contains("task `zz` of --task-ids is not in the backlog"),
        "{}",
        unknown.stderr
    );
    let past = backlog(&repo, &dir, &server.url, &["--index", "3"], &[]).await;
    assert_eq!(past.code, 2, "{}", explain(&past));
    let sessions = server.finish();
    assert_eq!(sessions["Title a"].len(), 1);
    assert!(sessions["Title b"].is_empty() && sessions["Title c"].is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_attempt_is_retried_with_the_gate_findings_then_escalated() {
    let repo = calc_repo();
    let dir = tasks(&repo, &["retry"]);
    // Attempt 1: a test that does not bite, rejected at once (no repair cycles). Attempt 2: NO-GO.
    let server = ModelServer::start(vec![(
        "Title retry",
        [
            answers(calc::fix_with("test_zero.py", INERT_TEST)),
            vec![no_go("still stuck")],
        ]
        .concat(),
    )])
    .await;
    let stronger = ModelServer::start(vec![("Title retry", vec![no_go("even the big one")])]).await;
    let escalate = format!("{}#big-model", stronger.url);
    let json_out = repo.tmp.path().join("summary.json");
    let small_url = server.url.clone();
    let run = backlog(
        &repo,
        &dir,
        &server.url,
        &[
            "--attempts",
            "2",
            "--escalate",
            &escalate,
            "--json",
            json_out.to_str().unwrap(),
        ],
        &["--repair-cycles", "0"],
    )
    .await;
    let stronger_url = stronger.url.clone();
    let small = server.finish();
    let big = stronger.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let requests = &small["Title retry"];
    assert_eq!(requests.len(), 4);
    // The first attempt's prompt is the task alone; the second's carries the first's findings.
    assert!(!task_text(&requests[0]).contains("previous attempt"));
    let second = task_text(&requests[3]);
    assert!(
        second.contains("## What the gate found in the previous attempt"),
        "{second}"
    );
    assert!(second.contains("Attempt 1 ended rejected"), "{second}");
    assert!(second.contains("The gate's verdict: fail."), "{second}");
    assert!(second.contains("The bite check: no-bite."), "{second}");
    let third = task_text(&big["Title retry"][0]);
    assert!(third.contains("Attempt 2 ended no-go"), "{third}");
    assert!(third.contains("Its summary: still stuck"), "{third}");
    assert_eq!(big["Title retry"][0]["model"], "big-model");

    let summary = read_json(&json_out);
    let attempts = summary["tasks"][0]["attempts"].as_array().unwrap();
    let got: Vec<(u64, bool, String, String)> = attempts
        .iter()
        .map(|a| {
            (
                a["n"].as_u64().unwrap(),
                a["escalated"].as_bool().unwrap(),
                a["outcome"].as_str().unwrap().to_string(),
                a["endpoint"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, false, "rejected".into(), small_url.clone()),
            (2, false, "rejected".into(), small_url.clone()),
            (3, true, "rejected".into(), stronger_url),
        ]
    );
    assert_eq!(attempts[2]["model"], "big-model");
    assert!(attempts.iter().all(|a| a["started"].as_u64().unwrap() > 0));
    assert!(
        run.stderr.contains("3 (") && run.stderr.contains("big-model*"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_jobs_the_pool_is_no_wider_than_the_servers_slots() {
    let repo = calc_repo();
    let dir = tasks(&repo, &["s1", "s2", "s3"]);
    let delay = Duration::from_millis(700);
    let server = ModelServer::start_with_props(
        vec![
            ("Title s1", vec![slow_no_go(delay)]),
            ("Title s2", vec![slow_no_go(delay)]),
            ("Title s3", vec![slow_no_go(delay)]),
        ],
        Some(json!({"total_slots": 1, "default_generation_settings": {"n_ctx": 4096}})),
    )
    .await;
    let run = backlog(&repo, &dir, &server.url, &[], &["--no-probe"]).await;
    let peak = server.peak();
    server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(
        run.stderr.contains("3 tasks, 1 at a time"),
        "{}",
        run.stderr
    );
    assert_eq!(peak, 1);
}

/// `--emit k8s` on a backlog in the repository, then the pod's command of index 1 (as the kubelet expands
/// it) run in the repository: the same per-index entry point, the task at that index of the frozen list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emitted_jobs_pod_command_runs_its_task_through_the_index_entry_point() {
    use k8s_openapi::api::batch::v1::Job;

    let repo = calc_repo();
    for id in ["a", "b", "c"] {
        repo.write(
            &format!("tasks/{id}.md"),
            &format!(
                "---\ntitle: {}\n---\nadd() in calc.py subtracts.\n",
                title(id)
            ),
        );
    }
    repo.commit("tasks");
    let server = ModelServer::start(vec![
        ("Title a", vec![]),
        ("Title b", vec![no_go("b is not for me")]),
        ("Title c", vec![]),
    ])
    .await;
    let emit = repo.vouch(&[
        "backlog",
        "--repo",
        repo.dir.to_str().unwrap(),
        "--emit",
        "k8s",
        "--image",
        "registry.example/vouch:1",
        "--api-key-env",
        "MODEL_KEY",
        "--",
        "--author",
        "Agent <agent@example.com>",
        "--tool-mode",
        "native",
    ]);
    assert_eq!(emit.code, 0, "{}", emit.stderr);
    let job: Job = serde_norway::from_str(&emit.stdout).unwrap();
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    let argv: Vec<String> = c
        .command
        .iter()
        .flatten()
        .chain(c.args.iter().flatten())
        .map(|a| a.replace("$(JOB_COMPLETION_INDEX)", "1").replace("$$", "$"))
        .collect();
    assert_eq!(
        argv[..8],
        [
            "vouch",
            "backlog",
            "--attempts",
            "1",
            "--index",
            "1",
            "--task-ids",
            "a,b,c"
        ],
        "{argv:?}"
    );
    assert_eq!(
        argv[8], "--",
        "vouch run's arguments come after the index: {argv:?}"
    );
    let key = c
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "MODEL_KEY")
        .unwrap();
    let r = key
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(
        (r.name.as_str(), r.key.as_str()),
        ("vouch-model", "api-key")
    );

    // The pod: the repository is its working directory, the endpoint comes from its environment.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"));
    cmd.args(&argv[1..])
        .current_dir(&repo.dir)
        .env("VOUCH_ENDPOINT", &server.url)
        .env("VOUCH_CACHE", &repo.cache)
        .env("VOUCH_DATA", repo.data())
        .env("XDG_CONFIG_HOME", repo.tmp.path().join("config"))
        .env_remove("RUST_LOG")
        .env_remove("VOUCH_MODEL")
        .envs(crate::util::git_env());
    let run = tokio::task::spawn_blocking(move || output(cmd.output().unwrap()))
        .await
        .unwrap();
    assert_eq!(
        run.code,
        1,
        "task b said NO-GO: rejected\n{}",
        explain(&run)
    );
    let sessions = server.finish();
    assert_eq!(sessions["Title b"].len(), 1, "{sessions:?}");
    assert!(sessions["Title a"].is_empty() && sessions["Title c"].is_empty());
}
