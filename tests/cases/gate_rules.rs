//! Rules of `vouch gate` that do not depend on the language: revisions, the clean room, timeouts, codegen
//! drift, spoofed output, scope, errors and exit codes. Python fixtures, because pytest starts fast.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{snapshot_dir, Repo};

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

fn project() -> Repo {
    Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
    ])
}

/// A profile file outside the repository: pytest only, with the given test timeout.
fn pytest_profile(repo: &Repo, timeout: &str) -> String {
    let path = repo.tmp.path().join("fast.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "pytest-only"
[paths]
test = ["tests/"]

[[steps]]
name = "pytest"
kind = "test"
runner = "pytest"
argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ojunit_family=xunit1", "--junitxml={{junit}}"]
timeout = "{timeout}"
"#
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

fn processes_matching(marker: &str) -> String {
    let out = Command::new("pgrep")
        .args(["-af", marker])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn hanging_test(marker: &str) -> String {
    format!(
        "import subprocess, time\n\n\ndef test_hangs():\n    subprocess.Popen([\"sh\", \"-c\", \"sleep 600; echo {marker}\"])\n    time.sleep(600)\n"
    )
}

#[test]
fn the_default_base_is_the_merge_base_with_the_default_branch() {
    let repo = project();
    let main = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(
        "calc.py",
        &format!("{CALC}\n\ndef sub(a, b):\n    return a - b\n"),
    );
    repo.write(
        "tests/test_sub.py",
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    repo.commit("add sub");
    repo.write("tests/test_sub.py", "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n    assert sub(2, 3) == -1\n");
    let head = repo.commit("more sub");
    let g = repo.gate(&[]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["base"]["sha"], main.as_str());
    assert_eq!(g.report()["base"]["rev"], "merge-base with main");
    assert_eq!(g.report()["head"]["sha"], head.as_str());
    assert_eq!(g.report()["range"], format!("{main}..{head}").as_str());
    assert_eq!(g.report()["changes"].as_array().unwrap().len(), 2);
}

#[test]
fn a_hanging_test_times_out_and_its_process_group_is_gone() {
    let repo = project();
    let marker = format!("vouch-hang-{}", std::process::id());
    repo.write(
        "calc.py",
        &format!("{CALC}\n\ndef sub(a, b):\n    return a - b\n"),
    );
    repo.write("tests/test_hang.py", &hanging_test(&marker));
    repo.commit("a test that hangs");
    let profile = pytest_profile(&repo, "3s");
    let started = Instant::now();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", &profile]);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("pytest")["status"], "timeout", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("timed out after 3.0s")),
        "{}",
        g.explain()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_matching(&marker),
        "",
        "processes outlived the step"
    );
}

#[test]
fn an_interrupted_gate_cleans_up_exits_130_and_leaves_the_checkout_untouched() {
    let repo = project();
    let marker = format!("vouch-int-{}", std::process::id());
    repo.write("tests/test_hang.py", &hanging_test(&marker));
    repo.commit("a test that hangs");
    let before = repo.snapshot();
    let profile = pytest_profile(&repo, "10m");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args([
            "gate",
            "--repo",
            repo.dir.to_str().unwrap(),
            "--base",
            "HEAD~1",
            "--profile",
            &profile,
            "--fresh-rooms",
        ])
        .current_dir(repo.tmp.path())
        .env("VOUCH_CACHE", &repo.cache)
        .envs(crate::util::git_env())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_matching(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the hanging test never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let rooms: Vec<String> = processes_matching(&marker)
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(!rooms.is_empty());
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_matching(&marker),
        "",
        "processes outlived the interrupted gate"
    );
    assert_eq!(repo.snapshot(), before, "the user's repository changed");
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("vouch-room-"))
        .filter(|e| {
            snapshot_dir(&e.path())
                .keys()
                .any(|p| p.to_string_lossy().contains("test_hang.py"))
        })
        .filter(|e| {
            std::fs::read_to_string(e.path().join("tests/test_hang.py"))
                .is_ok_and(|t| t.contains(&marker))
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary rooms left behind: {leftovers:?}"
    );
}

#[test]
fn codegen_drift_fails_naming_the_files_with_a_diff() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
        ("names.txt", "alpha\nbeta\n"),
        ("gen.py", "names = open('names.txt').read().split()\nopen('names_gen.py', 'w').write('NAMES = ' + repr([n.upper() for n in names]) + '\\n')\n"),
        ("names_gen.py", "NAMES = ['ALPHA', 'BETA']\n"),
    ]);
    let profile = repo.tmp.path().join("gen.toml");
    std::fs::write(
        &profile,
        r#"name = "with-codegen"
[paths]
test = ["tests/"]
generated = ["*_gen.py"]

[[steps]]
name = "generate"
kind = "codegen"
argv = ["python3", "gen.py"]

[[steps]]
name = "pytest"
kind = "test"
runner = "pytest"
argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ojunit_family=xunit1", "--junitxml={junit}"]
"#,
    )
    .unwrap();
    let profile = profile.to_str().unwrap();
    // In sync: passes.
    repo.write("names.txt", "alpha\nbeta\ngamma\n");
    repo.write("names_gen.py", "NAMES = ['ALPHA', 'BETA', 'GAMMA']\n");
    repo.commit("add gamma, regenerated");
    let g = repo.gate(&["--base", "HEAD~1", "--profile", profile, "--allow-no-tests"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    // The source changes, the generated file does not: drift.
    repo.write("names.txt", "alpha\nbeta\ngamma\ndelta\n");
    repo.commit("add delta, forgot to regenerate");
    let g = repo.gate(&["--base", "HEAD~1", "--profile", profile, "--allow-no-tests"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let step = g.step("generate");
    assert_eq!(step["status"], "fail");
    assert_eq!(step["drift"][0]["path"], "names_gen.py");
    let diff = step["drift"][0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-NAMES = ['ALPHA', 'BETA', 'GAMMA']")
            && diff.contains("+NAMES = ['ALPHA', 'BETA', 'GAMMA', 'DELTA']"),
        "{diff}"
    );
    assert!(
        g.reasons().iter().any(|r| r.contains("names_gen.py")),
        "{}",
        g.explain()
    );
}

#[test]
fn output_that_claims_success_with_a_failing_exit_status_fails() {
    let repo = project();
    repo.write(
        "calc.py",
        &format!("{CALC}\n\ndef sub(a, b):\n    return a - b\n"),
    );
    repo.write(
        "tests/test_sub.py",
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    repo.write(
        "conftest.py",
        "def pytest_sessionfinish(session, exitstatus):\n    print('\\n2 passed, 0 failed')\n    session.exitstatus = 1\n",
    );
    repo.commit("add sub");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("test results do not match exit status") && r.contains("exited 1")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_denied_path_or_one_outside_the_allowed_scope_fails() {
    let repo = project();
    repo.write(
        "calc.py",
        &format!("{CALC}\n\ndef sub(a, b):\n    return a - b\n"),
    );
    repo.write(
        "tests/test_sub.py",
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    repo.commit("add sub");
    let g = repo.gate(&["--base", "HEAD~1", "--deny", "calc.py"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("denied paths") && r.contains("calc.py")),
        "{}",
        g.explain()
    );
    let g = repo.gate(&["--base", "HEAD~1", "--allow", "tests/"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("outside the allowed paths: calc.py")),
        "{}",
        g.explain()
    );
    let g = repo.gate(&["--base", "HEAD~1", "--allow", "tests/", "--allow", "*.py"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}

#[test]
fn a_missing_required_tool_is_an_infrastructure_error_naming_it_and_its_install() {
    let repo = project();
    repo.write("tests/test_more.py", TEST_CALC);
    repo.commit("more tests");
    let profile = repo.tmp.path().join("missing.toml");
    std::fs::write(
        &profile,
        "name = \"m\"\n[[steps]]\nname = \"lint\"\nkind = \"lint\"\nargv = [\"vouch-no-such-linter\", \"check\"]\ninstall = \"pip install vouch-no-such-linter\"\n",
    )
    .unwrap();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", profile.to_str().unwrap()]);
    assert_eq!(g.run.code, 3, "{}", g.explain());
    assert!(
        g.run
            .stderr
            .contains("`vouch-no-such-linter` is not installed"),
        "{}",
        g.run.stderr
    );
    assert!(
        g.run
            .stderr
            .contains("hint: pip install vouch-no-such-linter"),
        "{}",
        g.run.stderr
    );
}

#[test]
fn a_missing_optional_tool_is_skipped_with_a_note() {
    let repo = project();
    repo.write("tests/test_more.py", TEST_CALC);
    repo.commit("more tests");
    let profile = repo.tmp.path().join("optional.toml");
    std::fs::write(
        &profile,
        "name = \"o\"\n[paths]\ntest = [\"tests/\"]\n[[steps]]\nname = \"lint\"\nkind = \"lint\"\nrequired = false\nargv = [\"vouch-no-such-linter\"]\ninstall = \"pip install it\"\n",
    )
    .unwrap();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", profile.to_str().unwrap()]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("lint")["status"], "skipped");
    assert!(g.step("lint")["note"]
        .as_str()
        .unwrap()
        .contains("not installed"));
}

#[test]
fn bad_revisions_bad_profiles_and_non_repositories_get_their_exit_codes() {
    let repo = project();
    repo.write("tests/test_more.py", TEST_CALC);
    repo.commit("more tests");
    let g = repo.gate(&["--head", "no-such-branch"]);
    assert_eq!(g.run.code, 3, "{}", g.explain());
    assert!(
        g.run
            .stderr
            .contains("cannot resolve revision `no-such-branch`"),
        "{}",
        g.run.stderr
    );

    let g = repo.gate(&["--base", "HEAD"]);
    assert_eq!(g.run.code, 2, "{}", g.explain());
    assert!(
        g.run.stderr.contains("no change to judge"),
        "{}",
        g.run.stderr
    );

    let bad = repo.tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"b\"\n[[steps]]\nname = \"x\"\nkind = \"tset\"\nargv = [\"true\"]\n",
    )
    .unwrap();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", bad.to_str().unwrap()]);
    assert_eq!(g.run.code, 2, "{}", g.explain());
    assert!(
        g.run.stderr.contains("invalid gate profile") && g.run.stderr.contains("tset"),
        "{}",
        g.run.stderr
    );

    let g = repo.gate(&["--base", "HEAD~1", "--profile", "cobol"]);
    assert_eq!(g.run.code, 2);
    assert!(g.run.stderr.contains("no preset named `cobol`"));

    let empty = tempfile::tempdir().unwrap();
    let out = repo.vouch(&["gate", "--repo", empty.path().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("is not inside a git repository"),
        "{}",
        out.stderr
    );
}

#[test]
fn keep_leaves_the_rooms_under_workspaces() {
    let repo = project();
    repo.write("tests/test_more.py", TEST_CALC);
    let head = repo.commit("more tests");
    let g = repo.gate(&["--base", "HEAD~1", "--keep"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    let room = repo
        .tmp
        .path()
        .join(format!("workspaces/gate-{}/head", &head[..12]));
    assert!(
        room.join("tests/test_more.py").is_file(),
        "{}",
        room.display()
    );
}

#[test]
fn keep_run_from_inside_the_checkout_leaves_git_status_as_it_was() {
    let repo = project();
    repo.write("tests/test_more.py", TEST_CALC);
    let head = repo.commit("more tests");
    let status = || repo.git(&["status", "--porcelain", "--ignored"]);
    let before = status();
    let json = repo.tmp.path().join("gate.json");
    let out = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["gate", "--base", "HEAD~1", "--keep", "--json"])
        .arg(&json)
        .current_dir(&repo.dir)
        .env("VOUCH_CACHE", &repo.cache)
        .env("VOUCH_DATA", repo.data())
        .envs(crate::util::git_env())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status(), before, "--keep changed the checkout's git status");
    assert!(!repo.dir.join("workspaces").exists());
    let kept = std::fs::read_dir(repo.cache.join("kept"))
        .unwrap()
        .map(|e| e.unwrap().path().join(format!("gate-{}/head", &head[..12])))
        .find(|p| p.is_dir())
        .expect("the kept room under the cache");
    assert!(kept.join("tests/test_more.py").is_file());
}

#[test]
fn the_repository_profile_is_read_at_base_so_a_change_cannot_loosen_its_own_gate() {
    let repo = project();
    repo.write(
        ".vouch/gate.toml",
        &std::fs::read_to_string(pytest_profile(&repo, "5m")).unwrap(),
    );
    repo.commit("add a repo profile");
    // The change breaks a test and swaps the profile's test step for one that always passes.
    repo.write("calc.py", "def add(a, b):\n    return a - b\n");
    repo.write("tests/test_more.py", TEST_CALC);
    repo.write(
        ".vouch/gate.toml",
        "name = \"lenient\"\n[[steps]]\nname = \"pytest\"\nkind = \"test\"\nargv = [\"true\"]\n",
    );
    repo.commit("break add, loosen the gate");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.report()["profile"]["name"], "pytest-only");
    assert!(g.report()["notes"]
        .to_string()
        .contains("judged with the profile as of base"));
}

#[test]
fn the_whole_gate_timeout_is_an_infrastructure_error_and_cleans_up() {
    let repo = project();
    let marker = format!("vouch-gate-timeout-{}", std::process::id());
    repo.write("tests/test_hang.py", &hanging_test(&marker));
    repo.commit("a test that hangs");
    let profile = pytest_profile(&repo, "10m");
    let before = repo.snapshot();
    let started = Instant::now();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", &profile, "--timeout", "4s"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(g.run.code, 3, "{}", g.explain());
    assert!(
        g.run.stderr.contains("the gate timed out after 4.0s"),
        "{}",
        g.run.stderr
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        processes_matching(&marker),
        "",
        "processes outlived the gate"
    );
    assert_eq!(repo.snapshot(), before);
}
