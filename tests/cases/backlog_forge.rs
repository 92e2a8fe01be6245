//! `vouch backlog --label`: the open issues with a label as the tasks, against the scripted forge of
//! `forge.rs`, each claimed with the claim label while it runs.

use serde_json::{json, Value};

use super::backlog::{calc_repo, explain, no_go, output};
use super::forge::{FakeForge, TOKEN};
use crate::util::model_server::ModelServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_issues_with_a_label_are_the_tasks_and_carry_the_claim_label_while_they_run() {
    let repo = calc_repo();
    let forge = FakeForge::start();
    for (n, title) in [(5, "five"), (3, "three")] {
        forge.state.lock().unwrap().issues.insert(
            n,
            json!({"number": n, "title": title, "body": "add() subtracts.",
                   "labels": [{"name": "vouch"}]}),
        );
    }
    // Another runner holds issue 7: it has the claim label.
    forge.state.lock().unwrap().issues.insert(
        7,
        json!({"number": 7, "title": "seven", "body": "b",
               "labels": [{"name": "vouch"}, {"name": "vouch:claimed"}]}),
    );
    let server = ModelServer::start(vec![("three", vec![no_go("not today")])]).await;
    let model_url = server.url.clone();
    let backlog = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"));
        cmd.args(["backlog", "--label", "vouch", "--repo"])
            .arg(&repo.dir)
            .args([
                "--forge",
                "github",
                "--forge-repo",
                "o/r",
                "--api-url",
                &forge.url,
            ])
            .args(["--endpoint", &model_url])
            .args(args)
            .args([
                "--",
                "--author",
                "Agent <agent@example.com>",
                "--tool-mode",
                "native",
            ])
            .current_dir(repo.tmp.path())
            .env("VOUCH_CACHE", &repo.cache)
            .env("VOUCH_DATA", repo.data())
            .env("XDG_CONFIG_HOME", repo.tmp.path().join("config"))
            .env("GITHUB_TOKEN", TOKEN)
            .env_remove("GH_TOKEN")
            .env_remove("VOUCH_ENDPOINT")
            .envs(crate::util::git_env());
        cmd
    };
    let mut plan = backlog(&["--plan"]);
    let plan = tokio::task::spawn_blocking(move || output(plan.output().unwrap()))
        .await
        .unwrap();
    assert_eq!(plan.code, 0, "{}", explain(&plan));
    // Issues by id; the pull request the list holds is no task.
    assert_eq!(plan.stdout, "o/r#3\no/r#5\no/r#7\n");
    let listed = forge.seen();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].method, "GET");
    assert!(
        listed[0].path.starts_with("/repos/o/r/issues?"),
        "{}",
        listed[0].path
    );
    assert!(listed[0].path.contains("state=open") && listed[0].path.contains("labels=vouch"));

    let mut one = backlog(&["--index", "0"]);
    let one = tokio::task::spawn_blocking(move || output(one.output().unwrap()))
        .await
        .unwrap();
    server.finish();
    assert_eq!(one.code, 1, "{}", explain(&one));
    let writes: Vec<(String, String, Value)> = forge
        .seen()
        .into_iter()
        .skip(1)
        .filter(|s| s.method != "GET")
        .map(|s| (s.method, s.path, s.json))
        .collect();
    // Claimed before the run, released after it (no pull request was opened).
    assert_eq!(
        writes,
        vec![
            (
                "POST".to_string(),
                "/repos/o/r/issues/3/labels".to_string(),
                json!({"labels": ["vouch:claimed"]})
            ),
            (
                "PUT".to_string(),
                "/repos/o/r/issues/3/labels".to_string(),
                json!({"labels": ["vouch"]})
            ),
        ]
    );
    assert!(one.stderr.contains("o/r#3"), "{}", one.stderr);

    // The issue another runner labelled is skipped; for an index, that is a retry later (exit 3).
    let mut held = backlog(&["--index", "2"]);
    let held = tokio::task::spawn_blocking(move || output(held.output().unwrap()))
        .await
        .unwrap();
    assert_eq!(held.code, 3, "{}", explain(&held));
    assert!(
        held.stderr
            .contains("o/r#7: claimed by another runner (the issue has the claim label)"),
        "{}",
        held.stderr
    );
}
