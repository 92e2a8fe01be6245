//! The sandbox around code under test, attacked from inside a test the change adds: the gate's own steps run
//! it, so what it can reach is what any repository under test can reach.

use std::io::Read;
use std::net::TcpListener;

use crate::util::Repo;

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n";

/// A test that tries to escape: write outside its room (a canary directory, the user's git hooks through the
/// room's alternates), read a secret from vouch's environment, reach a server on the host's loopback, and leave
/// a process behind. It reports what it saw in its failure message.
fn attack(canary: &str, port: u16, marker: &str, home_canary: &str) -> String {
    format!(
        r#"import os, socket, subprocess


def attempt(path):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("pwned")
        return "written"
    except OSError:
        return "refused"


def test_escape():
    seen = []
    seen.append("canary=" + attempt("{canary}/pwned"))
    alt = open(".git/objects/info/alternates").read().strip()
    seen.append("hook=" + attempt(os.path.join(alt, "..", "hooks", "pre-commit")))
    seen.append("secret=" + os.environ.get("VOUCH_FAKE_API_KEY", "absent"))
    seen.append("home=" + ("visible" if os.path.exists("{home_canary}") else "hidden"))
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        seen.append("net=reached")
    except OSError:
        seen.append("net=blocked")
    subprocess.Popen(["setsid", "sleep", "{marker}"])
    assert False, "observed " + " ".join(seen)
"#
    )
}

/// A file in the user's home for the length of a test.
struct HomeFile(String);

impl HomeFile {
    fn new(name: &str) -> HomeFile {
        let home = std::env::var("HOME").unwrap();
        let path = format!("{home}/{name}");
        std::fs::write(&path, "secret").unwrap();
        HomeFile(path)
    }
}

impl Drop for HomeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_test_under_the_gate_cannot_write_outside_read_secrets_reach_the_network_or_outlive_its_step() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        (
            "tests/test_calc.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        ),
    ]);
    let canary = repo.tmp.path().join("canary");
    std::fs::create_dir_all(&canary).unwrap();
    std::fs::write(canary.join("keep"), "untouched").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    // A unique sleep length names the process the test leaves behind.
    let marker = format!("{}.{}", 300 + port % 97, std::process::id());
    // A file in the real home, as credentials would be: the test must not see it.
    let home_canary = HomeFile::new(&format!(".vouch-sandbox-canary-{}", std::process::id()));
    repo.write(
        "tests/test_escape.py",
        &attack(canary.to_str().unwrap(), port, &marker, &home_canary.0),
    );
    repo.commit("a test that tries to escape");
    let before = repo.snapshot();
    let secret = "sk-vouch-canary-4f1d2e";
    let g = repo.gate_env(
        &[
            "--base",
            "HEAD~1",
            "--sandbox",
            "require",
            "--allow-no-tests",
        ],
        &[("VOUCH_FAKE_API_KEY", secret)],
    );
    let explain = g.explain();
    let reasons = g.reasons().join("\n");
    assert!(reasons.contains("observed "), "{explain}");
    // Writes outside the room land in the sandbox's private /tmp or fail; what counts is the host, below.
    for seen in ["secret=absent", "home=hidden", "net=blocked"] {
        assert!(reasons.contains(seen), "expected {seen}: {explain}");
    }
    assert_eq!(
        std::fs::read_dir(&canary).unwrap().count(),
        1,
        "a file appeared in the canary directory"
    );
    assert_eq!(repo.snapshot(), before, "the user's repository changed");
    assert!(
        !repo.dir.join(".git/hooks/pre-commit").exists(),
        "a hook was planted"
    );
    let mut buf = [0u8; 1];
    assert!(
        listener
            .accept()
            .map(|(mut s, _)| s.read(&mut buf))
            .is_err(),
        "the test reached the host's loopback"
    );
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &format!("sleep {marker}")])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "a process the test started outlived its step"
    );
    let report = std::fs::read_to_string(repo.tmp.path().join("gate.json")).unwrap();
    assert!(!report.contains(secret), "the secret reached the report");
    assert_eq!(g.report()["sandbox"]["active"], true, "{explain}");
}

/// A library without a Cargo.lock (bytes, tracing) has its dependencies resolved when the gate runs: inside the
/// sandbox there is no network, so cargo must resolve from what is cached, not fail on the registry.
#[test]
fn a_crate_without_a_lockfile_resolves_its_dependencies_from_the_cache_in_the_sandbox() {
    let repo = Repo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"nolock\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nmemchr = \"2\"\n",
        ),
        (".gitignore", "/target\nCargo.lock\n"),
        (
            "src/lib.rs",
            "pub fn has_a(s: &[u8]) -> bool {\n    memchr::memchr(b'b', s).is_some()\n}\n",
        ),
    ]);
    repo.write(
        "src/lib.rs",
        "pub fn has_a(s: &[u8]) -> bool {\n    memchr::memchr(b'a', s).is_some()\n}\n",
    );
    repo.write(
        "tests/t.rs",
        "#[test]\nfn finds_a() {\n    assert!(nolock::has_a(b\"xa\"));\n}\n",
    );
    repo.commit("fix has_a");
    let g = repo.gate(&["--base", "HEAD~1", "--sandbox", "require"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
}
