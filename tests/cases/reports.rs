//! The gate's four outputs: written whatever happens once the flags parse (verdict `error` with the reason),
//! short enough for where they go (a pull-request body, a console line), and agreeing with each other.

use std::path::PathBuf;

use serde_json::Value;
use vouch::gate::outcome::StepStatus;

use crate::util::{strings, Gate, Repo};

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) // len(values)\n";
const FIXED_CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / len(values)\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const TEST_MEAN: &str =
    "from calc import mean\n\n\ndef test_mean_keeps_fractions():\n    assert mean([1, 2]) == 1.5\n";
const PYTEST: &str = r#"[[steps]]
name = "pytest"
kind = "test"
runner = "pytest"
argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ojunit_family=xunit1", "--junitxml={junit}"]
"#;

fn project() -> Repo {
    Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
    ])
}

/// A profile file outside the repository: `extra` (steps, step options) and a pytest step.
fn profile(repo: &Repo, file: &str, extra: &str) -> String {
    let path = repo.tmp.path().join(file);
    std::fs::write(
        &path,
        format!("name = \"reports\"\n[paths]\ntest = [\"tests/\"]\n\n{PYTEST}{extra}"),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// A gate run with all three reports asked for, and their text (empty when not written).
struct Outputs {
    gate: Gate,
    markdown: String,
    junit: String,
}

fn gate_all(repo: &Repo, args: &[&str], env: &[(&str, &str)]) -> Outputs {
    let out = repo.tmp.path().join("out");
    let md: PathBuf = out.join("pr.md");
    let xml: PathBuf = out.join("gate.xml");
    let _ = std::fs::remove_dir_all(&out);
    let mut full = vec![
        "--markdown",
        md.to_str().unwrap(),
        "--junit",
        xml.to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    let gate = repo.gate_env(&full, env);
    Outputs {
        markdown: std::fs::read_to_string(&md).unwrap_or_default(),
        junit: std::fs::read_to_string(&xml).unwrap_or_default(),
        gate,
    }
}

/// The JSON, Markdown and JUnit of a gate that could not judge: verdict `error`, one finding of `rule`
/// whose message contains `reason`, and the exit code.
fn assert_error_reports(o: &Outputs, code: i32, rule: &str, reason: &str) {
    let g = &o.gate;
    assert_eq!(g.run.code, code, "{}", g.explain());
    assert_eq!(g.verdict(), "error", "{}", g.explain());
    let findings = g.report()["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{}", g.explain());
    assert_eq!(findings[0]["rule"], rule, "{}", g.explain());
    assert!(
        findings[0]["message"].as_str().unwrap().contains(reason),
        "{}",
        g.explain()
    );
    assert!(g.reasons()[0].contains(reason), "{}", g.explain());
    assert!(
        o.markdown.starts_with("## vouch gate: ⚠️ error\n"),
        "{}",
        o.markdown
    );
    assert!(
        o.markdown.contains("### Why the gate could not judge") && o.markdown.contains(reason),
        "{}",
        o.markdown
    );
    assert!(
        o.junit
            .contains("<testsuite name=\"gate\" tests=\"1\" errors=\"1\">")
            && o.junit.contains("<error message=\""),
        "{}",
        o.junit
    );
    assert!(g.run.stderr.contains(reason), "{}", g.run.stderr);
}

#[test]
fn every_gate_that_cannot_judge_writes_its_reports_with_verdict_error_and_the_reason() {
    let repo = project();
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    let head = repo.commit("fix mean");

    // A missing tool.
    let missing = profile(
        &repo,
        "missing.toml",
        "\n[[steps]]\nname = \"lint\"\nkind = \"lint\"\nargv = [\"vouch-no-such-linter\"]\ninstall = \"pip install vouch-no-such-linter\"\n",
    );
    let o = gate_all(&repo, &["--base", "HEAD~1", "--profile", &missing], &[]);
    assert_error_reports(
        &o,
        3,
        "infrastructure",
        "`vouch-no-such-linter` is not installed",
    );
    assert_eq!(o.gate.report()["head"]["sha"], head.as_str());
    assert_eq!(o.gate.report()["profile"]["name"], "reports");
    assert!(
        strings(&o.gate.report()["notes"])
            .contains(&"hint: pip install vouch-no-such-linter".into()),
        "{}",
        o.gate.explain()
    );
    assert!(
        o.markdown
            .contains("hint: pip install vouch-no-such-linter"),
        "{}",
        o.markdown
    );

    // A revision that does not resolve.
    let o = gate_all(&repo, &["--head", "no-such-branch"], &[]);
    assert_error_reports(
        &o,
        3,
        "infrastructure",
        "cannot resolve revision `no-such-branch`",
    );
    assert_eq!(o.gate.report()["head"]["rev"], "no-such-branch");
    assert_eq!(o.gate.report()["head"]["sha"], "");

    // The whole gate's timeout.
    repo.write(
        "tests/test_hang.py",
        "import time\n\n\ndef test_hangs():\n    time.sleep(600)\n",
    );
    repo.commit("a test that hangs");
    let slow = profile(&repo, "slow.toml", "");
    let o = gate_all(
        &repo,
        &["--base", "HEAD~1", "--profile", &slow, "--timeout", "3s"],
        &[],
    );
    assert_error_reports(&o, 3, "infrastructure", "the gate timed out after 3.0s");

    // A room that cannot be made: the cache is a file.
    let cache = repo.tmp.path().join("cache-is-a-file");
    std::fs::write(&cache, "not a directory").unwrap();
    let o = gate_all(
        &repo,
        &["--base", "HEAD~2", "--profile", &slow],
        &[("VOUCH_CACHE", cache.to_str().unwrap())],
    );
    assert_error_reports(&o, 3, "infrastructure", "cache-is-a-file");

    // A bad profile (exit 2, after the flags parsed).
    let bad = repo.tmp.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"b\"\n[[steps]]\nname = \"x\"\nkind = \"tset\"\nargv = [\"true\"]\n",
    )
    .unwrap();
    let o = gate_all(
        &repo,
        &["--base", "HEAD~2", "--profile", bad.to_str().unwrap()],
        &[],
    );
    assert_error_reports(&o, 2, "usage", "invalid gate profile");
}

#[test]
fn three_thousand_failing_tests_fit_a_pull_request_body_and_short_console_lines() {
    let repo = project();
    repo.write(
        "tests/test_many.py",
        "import pytest\n\nfrom calc import add\n\n\n@pytest.mark.parametrize(\"i\", range(3000))\ndef test_adding_one_to_a_number_gives_its_successor(i):\n    print(\"x\" * 300)\n    assert add(i, 1) == i + 2\n",
    );
    repo.commit("3000 failing tests");
    let fast = profile(&repo, "fast.toml", "");
    let o = gate_all(
        &repo,
        &[
            "--base",
            "HEAD~1",
            "--profile",
            &fast,
            "--reruns",
            "0",
            "--no-bite",
        ],
        &[],
    );
    let g = &o.gate;
    assert_eq!(g.verdict(), "fail", "{}", g.run.stderr);
    // The JSON keeps everything.
    assert_eq!(g.tests("new_failures").len(), 3000);
    let md_chars = o.markdown.chars().count();
    assert!(md_chars <= 60_000, "{md_chars} characters of Markdown");
    assert!(
        o.markdown
            .contains("`tests/test_many.py::test_adding_one_to_a_number_gives_its_successor[0]`"),
        "{}",
        &o.markdown[..2000.min(o.markdown.len())]
    );
    assert!(o.markdown.contains(" and 2980 more"), "{md_chars}");
    let longest = g.run.stderr.lines().map(|l| l.chars().count()).max();
    assert!(
        longest <= Some(300),
        "a console line of {longest:?} characters"
    );
    let reason = g
        .run
        .stderr
        .lines()
        .find(|l| l.starts_with("  ✗ new test failures"))
        .unwrap_or_else(|| panic!("{}", g.run.stderr));
    assert!(reason.contains(" more"), "{reason}");
}

/// The status word of a JSON step, through [`StepStatus::name`].
fn status_of(step: &Value) -> &'static str {
    serde_json::from_value::<StepStatus>(step["status"].clone())
        .unwrap()
        .name()
}

/// The status word the console's line for `step` starts with (`  <status> <name> <time> ...`).
fn console_status(stderr: &str, step: &str) -> String {
    stderr
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            let status = words.next()?;
            (words.next()? == step).then(|| status.to_owned())
        })
        .unwrap_or_else(|| panic!("no console line for {step}:\n{stderr}"))
}

/// The status column of the Markdown's row for `step`.
fn markdown_status(md: &str, step: &str) -> String {
    md.lines()
        .find_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 4 && cells[1] == step).then(|| cells[3].to_owned())
        })
        .unwrap_or_else(|| panic!("no Markdown row for {step}:\n{md}"))
}

/// The status the JUnit's case for `step` gives: `pass` (empty case), `skipped`, or the first word of the
/// failure's message.
fn junit_status(xml: &str, step: &str) -> String {
    let start = format!("<testcase classname=\"vouch.gate\" name=\"{step}\"");
    let at = xml
        .find(&start)
        .unwrap_or_else(|| panic!("no JUnit case for {step}:\n{xml}"));
    let case = &xml[at..];
    let open_end = case.find('>').unwrap();
    if case[..open_end].ends_with('/') {
        return "pass".into();
    }
    let case = &case[..case.find("</testcase>").unwrap()];
    if case.contains("<skipped") {
        return "skipped".into();
    }
    let message = case.split("<failure message=\"").nth(1).unwrap();
    message
        .split([' ', '"'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The ids after a `**title**:` line of the Markdown, between backticks.
fn markdown_ids(md: &str, title: &str) -> Vec<String> {
    let Some(line) = md.lines().find(|l| l.starts_with(&format!("**{title}"))) else {
        return Vec::new();
    };
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The items of a console summary line `  <label>: a, b (x), c`.
fn console_items(stderr: &str, label: &str) -> Vec<String> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(&format!("  {label}")))
        .map(|rest| {
            rest.split_once(": ")
                .map_or("", |(_, items)| items)
                .split(", ")
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn console_json_markdown_and_junit_agree_step_by_step_test_by_test_and_on_the_verdict() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", CALC),
        ("tests/test_calc.py", TEST_CALC),
        (
            "tests/test_legacy.py",
            "from calc import add\n\n\ndef test_legacy_is_broken():\n    assert add(1, 1) == 3\n",
        ),
    ]);
    // The fix with a test that bites, a flaky test, and a new test that fails.
    repo.write("calc.py", FIXED_CALC);
    repo.write("tests/test_mean.py", TEST_MEAN);
    repo.write("tests/test_flaky.py", super::gate_python::FLAKY_TEST);
    repo.write(
        "tests/test_wrong.py",
        "from calc import mean\n\n\ndef test_mean_of_one():\n    assert mean([3]) == 4\n",
    );
    repo.commit("fix mean");
    let checks = profile(
        &repo,
        "checks.toml",
        "\n[[steps]]\nname = \"tidy\"\nkind = \"lint\"\nargv = [\"python3\", \"-c\", \"print('tidy')\"]\n\n[[steps]]\nname = \"optional\"\nkind = \"lint\"\nrequired = false\nargv = [\"vouch-no-such-linter\"]\n",
    );
    let o = gate_all(&repo, &["--base", "HEAD~1", "--profile", &checks], &[]);
    let g = &o.gate;
    let report = g.report();
    let stderr = &g.run.stderr;
    assert_eq!(g.verdict(), "fail", "{}", g.explain());

    // Step by step.
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{}", g.explain());
    let mut statuses = Vec::new();
    for st in steps {
        let name = st["name"].as_str().unwrap();
        let json = status_of(st);
        statuses.push(json);
        assert_eq!(console_status(stderr, name), json, "console, step {name}");
        assert_eq!(
            markdown_status(&o.markdown, name),
            json,
            "Markdown, step {name}"
        );
        assert_eq!(junit_status(&o.junit, name), json, "JUnit, step {name}");
    }
    assert!(
        statuses.contains(&"pass") && statuses.contains(&"skipped"),
        "{statuses:?}"
    );
    assert!(
        steps
            .iter()
            .any(|st| st["status"] != "pass" && st["status"] != "skipped"),
        "a step fails: {}",
        g.explain()
    );

    // Test by test.
    let new = g.tests("new_failures");
    assert_eq!(
        new,
        vec!["tests/test_wrong.py::test_mean_of_one".to_string()]
    );
    assert_eq!(markdown_ids(&o.markdown, "New failures"), new);
    let junit_new: Vec<String> = o
        .junit
        .split("<testcase classname=\"vouch.tests\" name=\"")
        .skip(1)
        .map(|c| c.split('"').next().unwrap().to_owned())
        .collect();
    assert_eq!(junit_new, new);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("  ✗ new test failures") && l.contains(&new[0])),
        "{stderr}"
    );
    let old = g.tests("preexisting_failures");
    assert_eq!(
        old,
        vec!["tests/test_legacy.py::test_legacy_is_broken".to_string()]
    );
    assert_eq!(markdown_ids(&o.markdown, "Pre-existing failures"), old);
    assert_eq!(console_items(stderr, "pre-existing failures"), old);
    let flaky = g.tests("flaky");
    assert_eq!(
        flaky,
        vec!["tests/test_flaky.py::test_sometimes".to_string()]
    );
    assert_eq!(markdown_ids(&o.markdown, "Flaky"), flaky);
    assert_eq!(console_items(stderr, "flaky"), flaky);

    // The bite table.
    let bite = &report["bite"];
    let rows: Vec<(String, String)> = bite["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(!rows.is_empty(), "{}", g.explain());
    let status = bite["status"].as_str().unwrap();
    assert!(
        o.markdown.contains(&format!("### Bite check: {status}\n")),
        "{}",
        o.markdown
    );
    let console_bite = console_items(stderr, &format!("bite check ({status})"));
    assert_eq!(console_bite.len(), rows.len(), "{stderr}");
    for ((id, outcome), shown) in rows.iter().zip(&console_bite) {
        assert!(
            o.markdown.contains(&format!("| `{id}` | {outcome} |")),
            "{}",
            o.markdown
        );
        assert_eq!(shown, &format!("{id} ({outcome})"), "{stderr}");
    }

    // The verdict.
    assert!(
        o.markdown.starts_with("## vouch gate: ❌ fail\n"),
        "{}",
        o.markdown
    );
    assert!(
        stderr.lines().any(|l| l.starts_with("verdict: FAIL (")),
        "{stderr}"
    );
    assert!(
        o.junit.contains("<failure"),
        "a failing gate has a JUnit failure: {}",
        o.junit
    );
}
