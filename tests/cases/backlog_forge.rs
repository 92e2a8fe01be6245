//! `vouch backlog --label`: the open issues with a label as the tasks, against the scripted forge of
//! `forge.rs` as GitHub, GitLab and Gitea, each claimed with the claim label while it runs.

use serde_json::{json, Value};

use super::backlog::{calc_repo, explain, no_go, output};
use super::forge::{FakeForge, TOKEN};
use crate::util::model_server::ModelServer;
use crate::util::{Repo, Run};

/// `vouch backlog --label vouch` against the scripted forge as `forge` (`github`, `gitlab`), its token in
/// `token_var`, the model at `model_url`; not started.
fn command(
    repo: &Repo,
    forge: &FakeForge,
    kind: &str,
    token_var: &str,
    model_url: &str,
    args: &[&str],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"));
    cmd.args(["backlog", "--label", "vouch", "--repo"])
        .arg(&repo.dir)
        .args([
            "--forge",
            kind,
            "--forge-repo",
            "o/r",
            "--api-url",
            &forge.url,
        ])
        .args(["--endpoint", model_url])
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
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("GITEA_TOKEN")
        .env(token_var, TOKEN)
        .env_remove("VOUCH_ENDPOINT")
        .envs(crate::util::git_env());
    cmd
}

/// Runs a command to its end off the runtime that serves the model.
async fn finish(mut cmd: std::process::Command) -> Run {
    tokio::task::spawn_blocking(move || output(cmd.output().unwrap()))
        .await
        .unwrap()
}

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
    let backlog =
        |args: &[&str]| command(&repo, &forge, "github", "GITHUB_TOKEN", &model_url, args);
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

/// GitLab's documented issue API: `GET /projects/o%2Fr/issues?labels=vouch&state=opened` lists the tasks (a
/// closed issue and one without the label are not), `PUT /projects/o%2Fr/issues/:iid` with `add_labels`
/// claims one and with `remove_labels` releases it, every request with the token in `PRIVATE-TOKEN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_issues_with_a_label_are_claimed_and_released_by_add_and_remove_labels() {
    let repo = calc_repo();
    let forge = FakeForge::start();
    let issue = |iid: u64, title: &str, state: &str, labels: &[&str]| {
        json!({"id": 9000 + iid, "iid": iid, "project_id": 42, "title": title,
               "description": "add() subtracts.", "state": state, "labels": labels})
    };
    for (iid, title, state, labels) in [
        (5, "five", "opened", &["vouch"][..]),
        (3, "three", "opened", &["vouch", "bug"]),
        (4, "four, closed", "closed", &["vouch"]),
        (6, "six, another label", "opened", &["other"]),
        // Another runner holds issue 7: it has the claim label.
        (7, "seven", "opened", &["vouch", "vouch:claimed"]),
    ] {
        forge
            .state
            .lock()
            .unwrap()
            .issues
            .insert(iid, issue(iid, title, state, labels));
    }
    let server = ModelServer::start(vec![("three", vec![no_go("not today")])]).await;
    let model_url = server.url.clone();
    let backlog =
        |args: &[&str]| command(&repo, &forge, "gitlab", "GITLAB_TOKEN", &model_url, args);

    let plan = finish(backlog(&["--plan"])).await;
    assert_eq!(plan.code, 0, "{}", explain(&plan));
    assert_eq!(plan.stdout, "o/r#3\no/r#5\no/r#7\n");
    let listed = forge.seen();
    assert_eq!(listed.len(), 1);
    let (path, query) = listed[0].path.split_once('?').unwrap();
    assert_eq!(
        (listed[0].method.as_str(), path),
        ("GET", "/api/v4/projects/o%2Fr/issues")
    );
    let mut params: Vec<&str> = query.split('&').collect();
    params.sort();
    assert_eq!(params, ["labels=vouch", "per_page=100", "state=opened"]);

    let one = finish(backlog(&["--index", "0"])).await;
    server.finish();
    assert_eq!(one.code, 1, "{}", explain(&one));
    let seen = forge.seen();
    for s in &seen {
        assert_eq!(
            s.private_token.as_deref(),
            Some(TOKEN),
            "{} {}",
            s.method,
            s.path
        );
        assert_eq!(s.auth, None, "GitLab's token goes in PRIVATE-TOKEN only");
    }
    let writes: Vec<(String, String, Value)> = seen
        .into_iter()
        .skip(1)
        .filter(|s| s.method != "GET")
        .map(|s| (s.method, s.path, s.json))
        .collect();
    // Claimed before the run, released after it (no merge request was opened).
    assert_eq!(
        writes,
        vec![
            (
                "PUT".to_string(),
                "/api/v4/projects/o%2Fr/issues/3".to_string(),
                json!({"add_labels": "vouch:claimed"})
            ),
            (
                "PUT".to_string(),
                "/api/v4/projects/o%2Fr/issues/3".to_string(),
                json!({"remove_labels": "vouch:claimed"})
            ),
        ]
    );
    // The issue's own labels are as they were.
    assert_eq!(
        forge.state.lock().unwrap().issues[&3]["labels"],
        json!(["vouch", "bug"])
    );
    assert!(one.stderr.contains("o/r#3"), "{}", one.stderr);

    let held = finish(backlog(&["--index", "2"])).await;
    assert_eq!(held.code, 3, "{}", explain(&held));
    assert!(
        held.stderr
            .contains("o/r#7: claimed by another runner (the issue has the claim label)"),
        "{}",
        held.stderr
    );
    assert_eq!(
        forge.state.lock().unwrap().issues[&7]["labels"],
        json!(["vouch", "vouch:claimed"]),
        "the other runner's claim stays"
    );
}

/// Gitea and Forgejo: GitHub's label calls under `/api/v1`, the list asked for issues only, the token as
/// `Authorization: token …`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitea_issues_are_listed_as_issues_only_and_claimed_with_the_label_calls() {
    let repo = calc_repo();
    let forge = FakeForge::start();
    forge.state.lock().unwrap().issues.insert(
        3,
        json!({"number": 3, "title": "three", "body": "add() subtracts.",
               "labels": [{"name": "vouch"}]}),
    );
    let server = ModelServer::start(vec![("three", vec![no_go("not today")])]).await;
    let model_url = server.url.clone();
    let one = finish(command(
        &repo,
        &forge,
        "gitea",
        "GITEA_TOKEN",
        &model_url,
        &["--index", "0"],
    ))
    .await;
    server.finish();
    assert_eq!(one.code, 1, "{}", explain(&one));
    let seen = forge.seen();
    let (path, query) = seen[0].path.split_once('?').unwrap();
    assert_eq!(path, "/api/v1/repos/o/r/issues");
    let mut params: Vec<&str> = query.split('&').collect();
    params.sort();
    assert_eq!(
        params,
        ["labels=vouch", "limit=100", "state=open", "type=issues"]
    );
    let token = format!("token {TOKEN}");
    assert!(seen
        .iter()
        .all(|s| s.auth.as_deref() == Some(token.as_str())));
    let writes: Vec<(String, String, Value)> = seen
        .into_iter()
        .filter(|s| s.method != "GET")
        .map(|s| (s.method, s.path, s.json))
        .collect();
    assert_eq!(
        writes,
        vec![
            (
                "POST".to_string(),
                "/api/v1/repos/o/r/issues/3/labels".to_string(),
                json!({"labels": ["vouch:claimed"]})
            ),
            (
                "PUT".to_string(),
                "/api/v1/repos/o/r/issues/3/labels".to_string(),
                json!({"labels": ["vouch"]})
            ),
        ]
    );
}
