//! `vouch gate --pr`: a pull request's base and head fetched from real bare repositories (the base
//! repository's `refs/pull/N/head`, or a fork's branch) without touching the user's checkout, judged, and
//! with `--post` reported to a scripted forge as one sticky comment and a `vouch/gate` status.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::forge::{assert_no_token, files_with_token, git, FakeForge, GitServer, LOGIN, TOKEN};
use crate::util::{Repo, Run};

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def mean(values):\n    return sum(values) // len(values)\n";
const TEST_CALC: &str =
    "from calc import mean\n\n\ndef test_mean_of_one():\n    assert mean([2]) == 2\n";
const FIXED: &str = "def mean(values):\n    return sum(values) / len(values)\n";
const TEST_MEAN: &str =
    "from calc import mean\n\n\ndef test_mean_keeps_fractions():\n    assert mean([1, 2]) == 1.5\n";

/// The user's repository (`main`, origin a bare repository), an author's clone that pushes pull request
/// heads to the bare repository's `refs/pull/N/head`, and a fork.
struct Prs {
    repo: Repo,
    bare: PathBuf,
    author: PathBuf,
    fork: PathBuf,
    forge: FakeForge,
}

impl Prs {
    fn new() -> Prs {
        let repo = Repo::with_files(&[
            ("pyproject.toml", PYPROJECT),
            ("calc.py", CALC),
            ("tests/test_calc.py", TEST_CALC),
            (".gitignore", ".vouch/\n"),
        ]);
        let tmp = repo.tmp.path();
        let bare = tmp.join("remote.git");
        git(
            tmp,
            &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
        );
        repo.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
        repo.git(&["push", "-q", "origin", "main"]);
        let author = tmp.join("author");
        git(
            tmp,
            &[
                "clone",
                "-q",
                bare.to_str().unwrap(),
                author.to_str().unwrap(),
            ],
        );
        let fork = tmp.join("fork.git");
        git(
            tmp,
            &[
                "clone",
                "-q",
                "--bare",
                bare.to_str().unwrap(),
                fork.to_str().unwrap(),
            ],
        );
        Prs {
            repo,
            bare,
            author,
            fork,
            forge: FakeForge::start(),
        }
    }

    /// A commit in the author's clone on top of `main`, pushed to `dst` of `remote`; its sha.
    fn push_head(&self, files: &[(&str, &str)], message: &str, remote: &Path, dst: &str) -> String {
        for (path, text) in files {
            let p = self.author.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        git(&self.author, &["add", "-A"]);
        git(&self.author, &["commit", "-q", "-m", message]);
        git(
            &self.author,
            &[
                "push",
                "-q",
                "-f",
                remote.to_str().unwrap(),
                &format!("HEAD:{dst}"),
            ],
        );
        git(&self.author, &["rev-parse", "HEAD"])
    }

    /// What the forge answers for pull request `n`.
    fn serve_pr(&self, n: u64, head_ref: &str, head_sha: &str, head_repo: &Path) {
        let main = git(&self.bare, &["rev-parse", "main"]);
        let pr = json!({
            "number": n,
            "base": {"ref": "main", "sha": main, "repo": {"clone_url": self.bare.to_str().unwrap()}},
            "head": {"ref": head_ref, "sha": head_sha, "repo": {"clone_url": head_repo.to_str().unwrap()}},
        });
        self.forge.state.lock().unwrap().pulls.insert(n, pr);
    }

    fn gate(&self, extra: &[&str]) -> (Run, Value) {
        let json = self.repo.tmp.path().join("gate.json");
        let _ = std::fs::remove_file(&json);
        let dir = self.repo.dir.to_str().unwrap().to_string();
        let mut args = vec![
            "gate",
            "--repo",
            &dir,
            "--json",
            json.to_str().unwrap(),
            "--forge",
            "github",
            "--api-url",
            &self.forge.url,
        ];
        args.extend_from_slice(extra);
        let run = self
            .repo
            .vouch_env(&args, &[("GITHUB_TOKEN", TOKEN), ("GH_TOKEN", "")]);
        assert_no_token(&run);
        let report = std::fs::read_to_string(&json)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null);
        (run, report)
    }

    /// The user's checkout as `git` sees it: branches, HEAD, status.
    fn checkout_state(&self) -> (String, String, String) {
        (
            self.repo
                .git(&["branch", "-a", "--format=%(refname) %(objectname)"]),
            self.repo.git(&["symbolic-ref", "HEAD"]),
            self.repo.git(&["status", "--porcelain", "--ignored"]),
        )
    }

    fn writes(&self) -> Vec<(String, String, Value)> {
        self.forge
            .seen()
            .into_iter()
            .filter(|s| s.method != "GET")
            .map(|s| (s.method, s.path, s.json))
            .collect()
    }
}

#[test]
fn a_pull_request_is_fetched_without_touching_the_checkout_judged_and_reported_once() {
    let p = Prs::new();
    let head = p.push_head(
        &[("calc.py", FIXED), ("tests/test_mean.py", TEST_MEAN)],
        "fix mean",
        &p.bare,
        "refs/pull/1/head",
    );
    p.serve_pr(1, "fix-mean", &head, &p.bare);
    let before = p.checkout_state();

    let (run, report) = p.gate(&["--pr", "o/r#1", "--post"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(report["head"]["sha"], head.as_str());
    assert_eq!(
        report["base"]["sha"],
        p.repo.git(&["rev-parse", "main"]).as_str()
    );
    assert_eq!(
        p.checkout_state(),
        before,
        "the checkout, branches or status changed"
    );
    assert_eq!(p.repo.git(&["rev-parse", "refs/vouch/pr/1/head"]), head);
    assert!(!p.repo.dir.join(".git/FETCH_HEAD").exists());

    let seen = p.forge.seen();
    assert_eq!(
        (
            seen[0].method.as_str(),
            seen[0].path.as_str(),
            seen[0].auth.as_deref()
        ),
        (
            "GET",
            "/repos/o/r/pulls/1",
            Some(format!("Bearer {TOKEN}").as_str())
        )
    );
    let writes = p.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    let (method, path, comment) = &writes[0];
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", "/repos/o/r/issues/1/comments")
    );
    let body = comment["body"].as_str().unwrap();
    assert!(
        body.starts_with(&format!("<!-- vouch:gate head={head} -->")),
        "{body}"
    );
    assert!(body.contains("vouch gate: PASS"), "{body}");
    let (method, path, status) = &writes[1];
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", format!("/repos/o/r/statuses/{head}").as_str())
    );
    assert_eq!(status["state"], "success");
    assert_eq!(status["context"], "vouch/gate");
    assert!(
        status["description"].as_str().unwrap().starts_with("PASS"),
        "{status}"
    );
    assert!(
        run.stdout.contains("posted the report on #1"),
        "{}",
        run.stdout
    );

    // The same head again: nothing posted.
    let (run, _) = p.gate(&["--pr", "o/r#1", "--post"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("nothing posted"), "{}", run.stdout);
    assert_eq!(p.writes().len(), 2, "{:?}", p.writes());

    // A new head: the one comment is edited and a new status posted.
    let head2 = p.push_head(
        &[("NOTES.md", "more\n")],
        "notes",
        &p.bare,
        "refs/pull/1/head",
    );
    p.serve_pr(1, "fix-mean", &head2, &p.bare);
    let (run, _) = p.gate(&["--pr", "#1", "--forge-repo", "o/r", "--post"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let writes = p.writes();
    assert_eq!(writes.len(), 4, "{writes:?}");
    assert_eq!(
        (writes[2].0.as_str(), writes[2].1.as_str()),
        ("PATCH", "/repos/o/r/issues/comments/100")
    );
    assert!(writes[2].2["body"]
        .as_str()
        .unwrap()
        .contains(&format!("head={head2}")));
    assert_eq!(writes[3].1, format!("/repos/o/r/statuses/{head2}"));
    assert_eq!(p.forge.state.lock().unwrap().comments.len(), 1);
    assert_eq!(p.checkout_state(), before);
    assert_eq!(files_with_token(p.repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_fork_head_is_fetched_from_the_fork_and_a_failure_is_the_status() {
    let p = Prs::new();
    let head = p.push_head(
        &[("tests/test_mean.py", TEST_MEAN)],
        "a test without the fix",
        &p.fork,
        "refs/heads/feature",
    );
    p.serve_pr(2, "feature", &head, &p.fork);
    assert!(
        git(&p.bare, &["for-each-ref", "--format=%(refname)"])
            .lines()
            .all(|r| !r.contains("pull")),
        "the head must only be in the fork"
    );
    let before = p.checkout_state();

    // Without --post nothing is written to the forge.
    let (run, report) = p.gate(&["--pr", "2", "--forge-repo", "o/r"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(report["verdict"], "fail", "{report}");
    assert_eq!(p.repo.git(&["rev-parse", "refs/vouch/pr/2/head"]), head);
    assert!(p.writes().is_empty(), "{:?}", p.writes());

    let (run, _) = p.gate(&["--pr", "o/r#2", "--post"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let writes = p.writes();
    let (_, path, status) = writes.last().unwrap();
    assert_eq!(path, &format!("/repos/o/r/statuses/{head}"));
    assert_eq!(status["state"], "failure");
    assert!(
        status["description"]
            .as_str()
            .unwrap()
            .starts_with("FAIL: "),
        "{status}"
    );
    assert_eq!(p.checkout_state(), before);

    // A pull request the forge does not know: 404, said.
    let (run, _) = p.gate(&["--pr", "o/r#9"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("not found"), "{}", run.stderr);
    // --post needs a token; said before anything is fetched.
    let dir = p.repo.dir.to_str().unwrap().to_string();
    let run = p.repo.vouch_env(
        &[
            "gate",
            "--repo",
            &dir,
            "--pr",
            "o/r#2",
            "--post",
            "--forge",
            "github",
            "--api-url",
            &p.forge.url,
        ],
        &[("GITHUB_TOKEN", ""), ("GH_TOKEN", "")],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no token for github"), "{}", run.stderr);
}

#[test]
fn a_private_fork_head_is_fetched_with_the_token_of_the_base_remotes_host() {
    let p = Prs::new();
    let head = p.push_head(
        &[("calc.py", FIXED), ("tests/test_mean.py", TEST_MEAN)],
        "fix mean",
        &p.fork,
        "refs/heads/feature",
    );
    // Both the base repository and the fork are served over smart HTTP, and only with the token.
    let (url, log) = GitServer::start(p.repo.tmp.path(), None);
    p.repo.git(&[
        "remote",
        "set-url",
        "origin",
        &format!("{url}/git/remote.git"),
    ]);
    let main = git(&p.bare, &["rev-parse", "main"]);
    let pr = json!({
        "number": 4,
        "base": {"ref": "main", "sha": main, "repo": {"clone_url": format!("{url}/git/remote.git")}},
        "head": {"ref": "feature", "sha": head, "repo": {"clone_url": format!("{url}/git/fork.git")}},
    });
    p.forge.state.lock().unwrap().pulls.insert(4, pr);

    let (run, report) = p.gate(&["--pr", "o/r#4"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(report["verdict"], "pass", "{report}");
    assert_eq!(p.repo.git(&["rev-parse", "refs/vouch/pr/4/head"]), head);
    let log = log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|(u, ok)| *ok && u.starts_with("/git/fork.git/") && u.contains("upload-pack")),
        "the fork was fetched with the token: {log:?}"
    );
    assert!(log.iter().all(|(u, _)| !u.contains(TOKEN)));

    // A fork on another host never gets the token: its server asks, and vouch says it has none for it.
    let (elsewhere, other_log) = GitServer::start(p.repo.tmp.path(), None);
    p.forge.state.lock().unwrap().pulls.get_mut(&4).unwrap()["head"]["repo"]["clone_url"] =
        json!(format!("{elsewhere}/git/fork.git"));
    let (run, _) = p.gate(&["--pr", "o/r#4"]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("fetch from http://127.0.0.1")
            && run
                .stderr
                .contains("asks for credentials and no token is set"),
        "{}",
        run.stderr
    );
    assert!(other_log.lock().unwrap().iter().all(|(_, ok)| !ok));
    assert_eq!(files_with_token(p.repo.tmp.path()), Vec::<PathBuf>::new());
}

/// The token actions/checkout left in the user's checkout, as `http.extraheader`: not the one vouch was given.
const CHECKOUT_TOKEN: &str = "ghs_check/out+Tok3n9f8e7";

/// A pull request's test that prints every secret it can reach or guess, raw and encoded: the user's
/// `.git/config` through the room's `objects/info/alternates` (when the sandbox lets it), the forge token
/// from its environment (when it has it), and both tokens hard-coded, as an attacker who read them elsewhere
/// would; then fails, so that the report quotes it.
const TEST_LEAK: &str = r#"import base64, os, pathlib, urllib.parse

GUESSED = ["ghs_check/out+Tok3n9f8e7", "vouch-fake-token-5e1f9a2c", os.environ.get("GITHUB_TOKEN", "")]


def config_texts():
    texts = []
    for alternates in pathlib.Path.cwd().glob("**/objects/info/alternates"):
        try:
            for line in alternates.read_text().split():
                texts.append((pathlib.Path(line).parent / "config").read_text())
        except OSError as e:
            texts.append(f"unreadable: {e}")
    return texts


def test_leak():
    leaks = config_texts()
    for t in filter(None, GUESSED):
        b = t.encode()
        leaks += [t, base64.b64encode(b).decode(), base64.b64encode(b"x-access-token:" + b).decode(),
                  base64.urlsafe_b64encode(b).decode().rstrip("="), urllib.parse.quote(t, safe=""), b.hex()]
    text = " | ".join(leaks)
    print(text)
    assert False, text
"#;

/// The forms of `token` a test can print (as [`TEST_LEAK`] does).
fn forms(token: &str) -> Vec<String> {
    let quoted: String = token
        .bytes()
        .map(|b| match b {
            b'/' => "%2F".to_string(),
            b'+' => "%2B".to_string(),
            b => (b as char).to_string(),
        })
        .collect();
    vec![
        token.to_string(),
        STANDARD.encode(token),
        STANDARD.encode(format!("x-access-token:{token}")),
        quoted,
        hex::encode(token),
    ]
}

/// Every file under `dir` holding one of `forms`, with the form.
fn files_holding(dir: &Path, forms: &[String]) -> Vec<(PathBuf, String)> {
    crate::util::snapshot_dir(dir)
        .into_iter()
        .filter_map(|(p, bytes)| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            forms
                .iter()
                .find(|f| text.contains(f.as_str()))
                .map(|f| (p, f.clone()))
        })
        .collect()
}

#[test]
fn a_hostile_test_printing_the_checkout_token_and_the_forge_token_leaks_neither_anywhere() {
    let p = Prs::new();
    let blob = STANDARD.encode(format!("x-access-token:{CHECKOUT_TOKEN}"));
    p.repo.git(&[
        "config",
        "http.https://github.com/.extraheader",
        &format!("AUTHORIZATION: basic {blob}"),
    ]);
    let head = p.push_head(
        &[("tests/test_leak.py", TEST_LEAK)],
        "a test",
        &p.bare,
        "refs/pull/1/head",
    );
    p.serve_pr(1, "leak", &head, &p.bare);
    let markdown = p.repo.tmp.path().join("gate.md");
    let (run, report) = p.gate(&[
        "--pr",
        "o/r#1",
        "--post",
        "--markdown",
        markdown.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let mut all: Vec<String> = forms(CHECKOUT_TOKEN);
    all.extend(forms(TOKEN));
    all.push(blob);
    let md = std::fs::read_to_string(&markdown).unwrap();
    let writes = p.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    let texts = [
        ("stdout", run.stdout.clone()),
        ("stderr", run.stderr.clone()),
        ("--json", report.to_string()),
        ("--markdown", md.clone()),
        ("the comment", writes[0].2.to_string()),
        ("the status", writes[1].2.to_string()),
    ];
    let logs = p.repo.cache.join("logs");
    assert!(logs.is_dir());
    let mut leaks: Vec<(String, String)> = files_holding(&logs, &all)
        .into_iter()
        .map(|(path, form)| (path.display().to_string(), form))
        .collect();
    for (name, text) in texts {
        for form in all.iter().filter(|f| text.contains(f.as_str())) {
            leaks.push((name.to_string(), form.clone()));
        }
    }
    assert_eq!(leaks, Vec::<(String, String)>::new());
    // The hostile test ran and failed, and the report quotes its output, redacted.
    assert!(md.contains("<redacted>"), "{md}");
    assert!(writes[0].2["body"].as_str().unwrap().contains("<redacted>"));
}

#[test]
fn a_base_profile_cannot_expand_a_secret_of_vouchs_environment() {
    let profile = crate::util::preset("python").replace(
        "PYTHONDONTWRITEBYTECODE = \"1\"\n",
        "PYTHONDONTWRITEBYTECODE = \"1\"\nX = \"${GITHUB_TOKEN}\"\n",
    );
    assert!(profile.contains("${GITHUB_TOKEN}"));
    let seen = "import os\n\n\ndef test_x():\n    print(os.environ.get(\"X\"))\n    assert os.environ.get(\"X\", \"\") == \"\"\n";
    let repo = crate::util::Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
        (".vouch/gate.toml", &profile),
    ]);
    repo.write("tests/test_x.py", seen);
    repo.commit("a test that reads X");
    let g = repo.gate_env(&["--base", "HEAD~1"], &[("GITHUB_TOKEN", TOKEN)]);
    assert_eq!(g.run.code, 2, "{}\n{}", g.run.stdout, g.run.stderr);
    assert!(
        g.run
            .stderr
            .contains(".vouch/gate.toml at base: [env] X expands `${GITHUB_TOKEN}`"),
        "{}",
        g.run.stderr
    );
    assert_eq!(g.verdict(), "error");
    assert_no_token(&g.run);
    // No step ran: nothing of the code under judgement saw anything.
    assert!(g.report()["steps"].as_array().is_none_or(|s| s.is_empty()));
}

#[test]
fn only_vouchs_own_comment_is_its_report_and_another_authors_marker_changes_nothing() {
    let p = Prs::new();
    let head = p.push_head(
        &[("calc.py", FIXED), ("tests/test_mean.py", TEST_MEAN)],
        "fix mean",
        &p.bare,
        "refs/pull/1/head",
    );
    p.serve_pr(1, "fix-mean", &head, &p.bare);
    // The pull request's author plants vouch's markers: one for this head, one for another.
    let forged = format!("<!-- vouch:gate head={head} -->\n**vouch gate: PASS**");
    let other = "<!-- vouch:gate head=0123456789abcdef -->\nplease edit me".to_string();
    {
        let mut st = p.forge.state.lock().unwrap();
        st.comments
            .push(json!({"id": 7, "issue": 1, "body": forged, "user": {"login": "author"}}));
        st.comments
            .push(json!({"id": 8, "issue": 1, "body": other, "user": {"login": "author"}}));
    }
    let (run, report) = p.gate(&["--pr", "o/r#1", "--post"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(report["verdict"], "pass");
    let writes = p.writes();
    let paths: Vec<(&str, &str)> = writes
        .iter()
        .map(|(m, path, _)| (m.as_str(), path.as_str()))
        .collect();
    let status = format!("/repos/o/r/statuses/{head}");
    assert_eq!(
        paths,
        vec![
            ("POST", "/repos/o/r/issues/1/comments"),
            ("POST", status.as_str())
        ]
    );
    assert!(
        run.stdout.contains("posted the report on #1"),
        "{}",
        run.stdout
    );
    let users: Vec<String> = p
        .forge
        .seen()
        .into_iter()
        .filter(|s| s.path == "/user")
        .map(|s| s.method)
        .collect();
    assert_eq!(users, vec!["GET"], "the token's user is asked once");
    let own_id = p.forge.state.lock().unwrap().comments[2]["id"].clone();
    assert_eq!(
        p.forge.state.lock().unwrap().comments[2]["user"]["login"],
        LOGIN
    );

    // A new head: vouch's own comment is edited; the author's two are untouched.
    let head2 = p.push_head(
        &[("NOTES.md", "more\n")],
        "notes",
        &p.bare,
        "refs/pull/1/head",
    );
    p.serve_pr(1, "fix-mean", &head2, &p.bare);
    let (run, _) = p.gate(&["--pr", "o/r#1", "--post"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let writes = p.writes();
    assert_eq!(writes.len(), 4, "{writes:?}");
    assert_eq!(
        (writes[2].0.as_str(), writes[2].1.clone()),
        ("PATCH", format!("/repos/o/r/issues/comments/{own_id}"))
    );
    assert_eq!(writes[3].1, format!("/repos/o/r/statuses/{head2}"));
    let st = p.forge.state.lock().unwrap();
    assert_eq!(st.comments[0]["body"], forged.as_str());
    assert_eq!(st.comments[1]["body"], other.as_str());
    assert!(st.comments[2]["body"]
        .as_str()
        .unwrap()
        .contains(&format!("head={head2}")));
}
