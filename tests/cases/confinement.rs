//! What a confined step can read, reach and use, attacked from a test the change adds (pytest: cheap to
//! run), with the checkout outside `$HOME` and `/tmp` as in a container CI job: the user's checkout, its git
//! metadata, vouch's data, cargo's configuration and unix sockets are out of reach, the caps hold and are
//! named, JUnit reports are read without following what the code planted, and a sandbox with a hole is
//! refused before anything runs.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use crate::util::Repo;

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n";
const TEST_ADD: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// A repository under the build's own temporary directory: outside `$HOME` and `/tmp`.
fn outside_repo() -> Repo {
    let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("confinement");
    let repo = Repo::new_in(&parent);
    repo.write_all(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_add.py", TEST_ADD),
    ]);
    repo.commit("initial");
    repo
}

/// Adds `test` as `tests/test_attack.py` (a failing test that reports what it saw) and commits it.
fn with_attack(repo: &Repo, test: &str) {
    repo.write("tests/test_attack.py", test);
    repo.commit("a test that attacks");
}

fn gate(repo: &Repo, env: &[(&str, &str)]) -> crate::util::Gate {
    repo.gate_env(
        &[
            "--base",
            "HEAD~1",
            "--sandbox",
            "require",
            "--allow-no-tests",
        ],
        env,
    )
}

fn py(p: &Path) -> String {
    format!("{:?}", p.to_str().unwrap())
}

#[test]
fn a_test_cannot_read_the_checkout_its_git_config_vouchs_data_cargo_tokens_or_reach_a_socket() {
    let repo = outside_repo();
    // What actions/checkout leaves, an untracked secret, another run's records, a cargo home with tokens,
    // and sockets: one in the (visible) cargo home, one in a directory only the user has.
    repo.git(&[
        "config",
        "http.extraheader",
        "AUTHORIZATION: basic token-canary",
    ]);
    std::fs::write(repo.dir.join(".env"), "API_KEY=env-canary\n").unwrap();
    let data = repo.data();
    std::fs::create_dir_all(data.join("runs/other")).unwrap();
    std::fs::write(
        data.join("runs/other/transcript.jsonl"),
        "transcript-canary",
    )
    .unwrap();
    let cargo_home = repo.tmp.path().join("cargo-home");
    std::fs::create_dir_all(&cargo_home).unwrap();
    std::fs::write(
        cargo_home.join("config.toml"),
        "[registry]\ntoken = \"cargo-canary\"\n\n[registries.corp]\nindex = \"sparse+https://x/\"\ntoken = \"corp-canary\"\n\n[net]\nretry = 7\n",
    )
    .unwrap();
    std::fs::write(
        cargo_home.join("credentials.toml"),
        "[registry]\ntoken = \"cred-canary\"\n",
    )
    .unwrap();
    let visible_socket = cargo_home.join("agent.sock");
    let hidden_socket = repo.tmp.path().join("sock/ssh-agent.sock");
    std::fs::create_dir_all(hidden_socket.parent().unwrap()).unwrap();
    let _a = UnixListener::bind(&visible_socket).unwrap();
    let _b = UnixListener::bind(&hidden_socket).unwrap();
    let attack = format!(
        r#"import os, socket


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return "refused"


def connect(path):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        return "reached"
    except OSError:
        return "refused"


def test_attack():
    alt = read(".git/objects/info/alternates").strip()
    user_git = os.path.dirname(alt)
    seen = [
        "config=" + ("leaked" if "token-canary" in read(os.path.join(user_git, "config")) else "refused"),
        "hooks=" + ("visible" if os.path.isdir(os.path.join(user_git, "hooks")) else "refused"),
        "index=" + ("visible" if os.path.exists(os.path.join(user_git, "index")) else "refused"),
        "objects=" + ("visible" if os.path.isdir(alt) else "refused"),
        "env=" + ("leaked" if "env-canary" in read({env}) else "refused"),
        "data=" + ("leaked" if "transcript-canary" in read({transcript}) else "refused"),
        "cargo=" + ("leaked" if "canary" in read({cargo_config}) else "refused"),
        "cargo_kept=" + ("yes" if "retry" in read({cargo_config}) else "no"),
        "creds=" + ("leaked" if "canary" in read({creds}) else "refused"),
        "sock1=" + connect({visible}),
        "sock2=" + connect({hidden}),
    ]
    assert False, "observed " + " ".join(seen) + " end"
"#,
        env = py(&repo.dir.join(".env")),
        transcript = py(&data.join("runs/other/transcript.jsonl")),
        cargo_config = py(&cargo_home.join("config.toml")),
        creds = py(&cargo_home.join("credentials.toml")),
        visible = py(&visible_socket),
        hidden = py(&hidden_socket),
    );
    with_attack(&repo, &attack);
    let g = gate(&repo, &[("CARGO_HOME", cargo_home.to_str().unwrap())]);
    let explain = g.explain();
    let reasons = g.reasons().join("\n");
    assert!(reasons.contains("observed "), "{explain}");
    for seen in [
        "config=refused",
        "hooks=refused",
        "index=refused",
        "objects=visible",
        "env=refused",
        "data=refused",
        "cargo=refused",
        "cargo_kept=yes",
        "creds=refused",
        "sock1=refused",
        "sock2=refused",
    ] {
        assert!(reasons.contains(seen), "expected {seen}: {explain}");
    }
}

#[test]
fn a_junit_report_the_code_replaced_with_a_symlink_is_not_followed() {
    let repo = outside_repo();
    // After pytest wrote its report, the code swaps it for a link to a report of its own that claims a
    // passing test which does not exist.
    let conftest = r#"import os

FAKE = """<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="1"><testcase classname="tests.test_add" name="test_planted"/></testsuite></testsuites>"""


def pytest_unconfigure(config):
    path = config.getoption("xmlpath", None)
    if not path:
        return
    # Next to the report, linked by a relative name: the link resolves outside the sandbox too.
    with open(os.path.join(os.path.dirname(path), "planted.xml"), "w") as f:
        f.write(FAKE)
    os.remove(path)
    os.symlink("planted.xml", path)
    os.symlink("..", os.path.join(os.path.dirname(path), "up"))
    try:
        with open(os.path.join(os.path.dirname(path), "..", "extra.txt"), "w") as f:
            f.write("planted")
    except OSError:
        pass
"#;
    repo.write("conftest.py", conftest);
    repo.commit("a conftest that plants a report");
    let g = gate(&repo, &[]);
    let explain = g.explain();
    let all = g.report().to_string();
    assert!(
        !all.contains("test_planted"),
        "the planted report was read: {explain}"
    );
    // Without a report of its own the step is not judged a pass on the planted one.
    assert_ne!(g.verdict(), "pass", "{explain}");
}

/// A test that does what a cap should stop, and reports how far it got.
const HOG: &str = r#"import os, subprocess, sys


def test_hog():
    seen = []
    procs = []
    try:
        for _ in range(300):
            procs.append(subprocess.Popen(["sleep", "30"]))
    except OSError:
        pass
    seen.append("procs=%d" % len(procs))
    for p in procs:
        p.kill()
    try:
        with open("big.bin", "wb") as f:
            for _ in range(5):
                f.write(b"\0" * (1 << 20))
        seen.append("fsize=written")
    except OSError as e:
        seen.append("fsize=refused(%s)" % e.strerror)
    try:
        for i in range(12):
            with open("/tmp/big%d.bin" % i, "wb") as f:
                f.write(b"\0" * (1 << 20))
        seen.append("tmp=written")
    except OSError as e:
        seen.append("tmp=refused(%s)" % e.strerror)
    # pytest keeps what a test prints in /tmp too.
    for i in range(12):
        if os.path.exists("/tmp/big%d.bin" % i):
            os.remove("/tmp/big%d.bin" % i)
    print("HEAD-MARKER")
    sys.stdout.write(("x" * 99 + "\n") * 20000)
    print("TAIL-MARKER")
    assert False, "observed " + " ".join(seen) + " end"
"#;

#[test]
fn processes_file_size_tmp_and_log_are_capped_and_the_caps_are_named() {
    let repo = outside_repo();
    with_attack(&repo, HOG);
    let g = gate(
        &repo,
        &[
            ("VOUCH_SANDBOX_PIDS", "64"),
            ("VOUCH_SANDBOX_FILE_SIZE", "2M"),
            ("VOUCH_SANDBOX_TMP_SIZE", "8M"),
            ("VOUCH_LOG_CAP", "64k"),
        ],
    );
    let explain = g.explain();
    let reasons = g.reasons().join("\n");
    let procs: usize = reasons
        .split("procs=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no process count: {explain}"));
    assert!(
        procs < 64,
        "{procs} processes started under a cap of 64: {explain}"
    );
    assert!(
        reasons.contains("fsize=refused(File too large)"),
        "{explain}"
    );
    assert!(
        reasons.contains("tmp=refused(No space left on device)"),
        "{explain}"
    );
    let note = g.step("pytest")["note"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains("hit the file-size cap (2 MiB)"),
        "{note}: {explain}"
    );
    assert!(note.contains("hit the log cap"), "{note}: {explain}");
    let log = std::fs::read_to_string(g.step("pytest")["log"].as_str().unwrap()).unwrap();
    assert!(log.len() < 200 * 1024, "the log kept {} bytes", log.len());
    assert!(
        log.contains("HEAD-MARKER") || log.contains("test session starts"),
        "{log:.300}"
    );
    assert!(log.contains("bytes of output dropped here"), "{log:.300}");
    assert!(log.contains("observed "), "the tail was not kept");
}

#[test]
fn a_sandbox_that_lets_a_write_or_a_connect_through_is_refused_with_exit_3() {
    let repo = outside_repo();
    repo.write(
        "tests/test_sub.py",
        "def test_sub():\n    assert 3 - 1 == 2\n",
    );
    repo.commit("a test");
    for (hole, says) in [("write", "write"), ("net", "connect")] {
        let g = gate(&repo, &[("VOUCH_TEST_SANDBOX_HOLE", hole)]);
        assert_eq!(g.run.code, 3, "hole {hole}: {}", g.explain());
        let text = format!("{}{:?}", g.run.stderr, g.report);
        assert!(
            text.contains("the sandbox does not hold") && text.contains(says),
            "hole {hole}: {}",
            g.explain()
        );
    }
    let g = gate(&repo, &[]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}
