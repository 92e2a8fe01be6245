//! `vouch gate` on a Python project: pytest with JUnit XML, ruff format and ruff check.

use crate::util::Repo;

/// With a `[tool.ruff]` table: ruff runs only where the repository configures it.
const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n\n[tool.ruff]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) // len(values)\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const FIXED_CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / len(values)\n";
const TEST_MEAN: &str =
    "from calc import mean\n\n\ndef test_mean_keeps_fractions():\n    assert mean([1, 2]) == 1.5\n";

fn project() -> Repo {
    Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
    ])
}

#[test]
fn a_correct_fix_with_its_test_passes() {
    let repo = project();
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean");
    let before = repo.snapshot();
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.run.code, 0);
    assert_eq!(g.step("pytest")["status"], "pass");
    assert_eq!(g.step("pytest")["tests"]["passed"], 2, "{}", g.explain());
    assert_eq!(g.step("ruff")["status"], "pass");
    assert_eq!(g.report()["profile"]["name"], "python");
    assert_eq!(repo.snapshot(), before, "the user's repository changed");
}

#[test]
fn a_new_failing_test_fails_the_gate_and_is_named() {
    let repo = project();
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.write("calc.py", &CALC.replace("def add", "# wrong fix\ndef add"));
    repo.commit("claims to fix mean\n\nAgent-Verdict: GO");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.run.code, 1);
    assert_eq!(
        g.tests("new_failures"),
        vec!["tests/test_mean.py::test_mean_keeps_fractions".to_string()]
    );
    assert_eq!(g.report()["claimed"], "GO");
    assert_eq!(g.report()["claim"], "overturned");
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("new test failures")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_format_violation_fails_naming_the_file() {
    let repo = project();
    repo.write("calc.py", &FIXED_CALC.replace("return a + b", "return a+b"));
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("ruff-format")["status"], "fail");
    let reason = g.reasons().join("\n");
    assert!(
        reason.contains("ruff-format") && reason.contains("calc.py"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_lint_failure_fails_the_gate() {
    let repo = project();
    repo.write("calc.py", &format!("import os\n\n\n{FIXED_CALC}"));
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix with an unused import");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("ruff")["status"], "fail");
    assert!(
        g.step("ruff")["log_tail"]
            .as_str()
            .unwrap()
            .contains("F401"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_failure_already_present_at_base_is_not_blamed_unless_strict() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
        (
            "tests/test_legacy.py",
            "from calc import add\n\n\ndef test_legacy_is_broken():\n    assert add(1, 1) == 3\n",
        ),
    ]);
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        g.tests("preexisting_failures"),
        vec!["tests/test_legacy.py::test_legacy_is_broken".to_string()]
    );
    assert!(g.tests("new_failures").is_empty());
    assert_eq!(g.report()["tests"]["baseline"], "ran");

    // The second run reads the baseline from the cache; --strict-baseline blames the old failure.
    let g = repo.gate(&["--base", "HEAD~1", "--strict-baseline"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.report()["tests"]["baseline"], "cached");
    assert_eq!(
        g.tests("new_failures"),
        vec!["tests/test_legacy.py::test_legacy_is_broken".to_string()]
    );
}

/// A test that fails beside `tests/test_mean.py` and passes without it, as an order-dependent test does: a
/// rerun of the failed tests passes. (A marker file would not do: every test run writes a throwaway layer.)
pub(crate) const FLAKY_TEST: &str = "import sys\n\n\ndef test_sometimes():\n    beside = [m for m in sys.modules if m.rsplit(\".\", 1)[-1] == \"test_mean\"]\n    assert not beside, \"fails beside test_mean\"\n";

#[test]
fn a_test_that_fails_once_then_passes_is_flaky_and_not_blamed() {
    let repo = project();
    repo.write("tests/test_flaky.py", FLAKY_TEST);
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean, add a flaky test");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        g.tests("flaky"),
        vec!["tests/test_flaky.py::test_sometimes".to_string()]
    );

    let g = repo.gate(&["--base", "HEAD~1", "--no-flaky"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        g.tests("new_failures"),
        vec!["tests/test_flaky.py::test_sometimes".to_string()]
    );
}

#[test]
fn a_production_change_without_test_changes_fails_unless_allowed() {
    let repo = project();
    repo.write("calc.py", FIXED_CALC);
    repo.commit("fix without a test");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("no tests changed") && r.contains("calc.py")),
        "{}",
        g.explain()
    );
    let g = repo.gate(&["--base", "HEAD~1", "--allow-no-tests"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}

#[test]
fn a_run_that_exits_zero_without_running_tests_fails() {
    // A test that ends the process with status 0 in the middle of the run: pytest never writes its report.
    let repo = project();
    repo.write("calc.py", FIXED_CALC);
    repo.write(
        "tests/test_mean.py",
        &format!("{TEST_MEAN}\n\ndef test_exit_early():\n    import os\n    os._exit(0)\n"),
    );
    repo.commit("fix, with a test that exits");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("test results do not match exit status")),
        "{}",
        g.explain()
    );
}

#[test]
fn the_markdown_and_junit_reports_are_written() {
    let repo = project();
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean");
    let md = repo.tmp.path().join("out/pr.md");
    let junit = repo.tmp.path().join("out/gate.xml");
    let g = repo.gate(&[
        "--base",
        "HEAD~1",
        "--markdown",
        md.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--claimed",
        "GO",
    ]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["claim"], "confirmed");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.starts_with("## vouch gate: ✅ pass"), "{md}");
    assert!(md.contains("| pytest | Test | pass |"), "{md}");
    assert!(md.contains("Claimed verdict: **GO**, confirmed."), "{md}");
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(
        junit.contains("<testcase classname=\"vouch.gate\" name=\"pytest\""),
        "{junit}"
    );
    assert!(!junit.contains("<failure"), "{junit}");
}

#[test]
fn a_lint_finding_already_at_base_is_not_blamed_but_a_new_one_is() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("legacy.py", "import sys\n\n\ndef old():\n    return 1\n"),
        ("tests/test_calc.py", TEST_CALC),
    ]);
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("ruff")["status"], "preexisting");
    assert!(
        g.step("ruff")["note"]
            .as_str()
            .unwrap()
            .contains("pre-existing"),
        "{}",
        g.explain()
    );
    let g = repo.gate(&["--base", "HEAD~1", "--strict-baseline"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());

    repo.write("calc.py", &format!("import os\n\n\n{FIXED_CALC}"));
    repo.commit("an unused import");
    let g = repo.gate(&["--base", "HEAD~2"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let note = g.step("ruff")["note"].as_str().unwrap().to_owned();
    assert!(
        note.contains("1 new finding") && note.contains("calc.py"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_src_layout_project_imports_from_the_checkout_without_being_installed() {
    let repo = Repo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        ("src/calc/__init__.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
    ]);
    repo.write("src/calc/__init__.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.commit("fix mean");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("pytest")["tests"]["passed"], 2, "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
}
