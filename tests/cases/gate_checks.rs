//! Checks and builds compared with base (issue 9, defects 1, 2, 3, 12 and 13): a failure already there is
//! `preexisting` (reported, not blamed), findings are compared structurally (rule, file, flagged text), nothing
//! machine-specific enters the comparison, the four outputs agree on every step, and format and lint tools run
//! only where the repository configures them.

use crate::util::{Gate, Repo};

const CARGO_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const LIB: &str = "/// Adds two numbers.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        x\n    } else {\n        x\n    }\n}\n";
const API_TEST: &str = "#[test]\nfn add_is_public() {\n    assert_eq!(calc::add(1, 1), 2);\n}\n";
const ABS_TEST: &str =
    "#[test]\nfn abs_of_negative_is_positive() {\n    assert_eq!(calc::abs(-3), 3);\n}\n";
/// Two functions clippy flags (`needless_return`), appended to the library at base.
const TWO_WARNINGS: &str = "\n/// Twice x.\npub fn double(x: i64) -> i64 {\n    return x * 2;\n}\n\n/// Thrice x.\npub fn triple(x: i64) -> i64 {\n    return x * 3;\n}\n";

/// The library with `abs` fixed.
fn fixed(lib: &str) -> String {
    lib.replace(
        "    if x < 0 {\n        x\n",
        "    if x < 0 {\n        -x\n",
    )
}

fn krate(lib: &str) -> Repo {
    Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", lib),
        ("tests/api.rs", API_TEST),
    ])
}

/// Commits the abs fix with its test on top of whatever the worktree holds.
fn commit_abs_fix(repo: &Repo, lib: &str) {
    repo.write("src/lib.rs", &fixed(lib));
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs");
}

#[test]
fn a_bench_that_needs_nightly_fails_at_base_too_and_does_not_fail_a_correct_fix() {
    // `#![feature(test)]` fails on stable: `cargo build --all-targets` (and clippy) fail at base and head alike,
    // but `cargo test` never builds benches.
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", LIB),
        ("tests/api.rs", API_TEST),
        (
            "benches/b.rs",
            "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn bench_add(b: &mut test::Bencher) {\n    b.iter(|| calc::add(1, 2));\n}\n",
        ),
    ]);
    commit_abs_fix(&repo, LIB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("build")["status"], "preexisting", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "preexisting", "{}", g.explain());
    assert_eq!(g.step("test")["status"], "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    let note = g.step("build")["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("benches/b.rs") && note.contains("bench"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_build_step_failing_at_base_still_gives_a_baseline_for_preexisting_test_failures() {
    // `cargo build --all-targets` fails at base (a nightly-only bench), but the tests build and run there:
    // a test that fails at base and head alike is pre-existing, not blamed on the fix.
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", LIB),
        ("tests/api.rs", API_TEST),
        (
            "tests/legacy.rs",
            "#[test]\nfn legacy_is_broken() {\n    assert_eq!(calc::add(2, 2), 5);\n}\n",
        ),
        (
            "benches/b.rs",
            "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn bench_add(b: &mut test::Bencher) {\n    b.iter(|| calc::add(1, 2));\n}\n",
        ),
    ]);
    commit_abs_fix(&repo, LIB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("build")["status"], "preexisting", "{}", g.explain());
    assert_eq!(g.report()["tests"]["baseline"], "ran", "{}", g.explain());
    assert_eq!(
        g.tests("preexisting_failures"),
        vec!["legacy@tests/legacy.rs::legacy_is_broken".to_string()],
        "{}",
        g.explain()
    );
    assert!(g.tests("new_failures").is_empty(), "{}", g.explain());
}

#[test]
fn a_build_error_of_the_change_is_blamed_even_beside_a_broken_bench() {
    let bench = "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn bench_add(b: &mut test::Bencher) {\n    b.iter(|| calc::add(1, 2));\n}\n";
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", LIB),
        ("tests/api.rs", API_TEST),
        ("benches/b.rs", bench),
    ]);
    // The bench now calls a function that does not exist: a new error in a target the tests do not need, and
    // base does not have it.
    repo.write(
        "benches/b.rs",
        &bench.replace("calc::add(1, 2)", "calc::sub(1, 2)"),
    );
    commit_abs_fix(&repo, LIB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("build")["status"], "fail", "{}", g.explain());
    let reasons = g.reasons().join("\n");
    assert!(
        reasons.contains("benches/b.rs:6:21") && reasons.contains("sub"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_build_failure_is_named_by_its_first_error_not_a_warning() {
    // The library builds first, with a warning that names a room file; the error is in a test target built
    // after it.
    let repo = krate(LIB);
    let warned = fixed(LIB).replace("    a + b\n", "    let unused = 1;\n    a + b\n");
    repo.write("src/lib.rs", &warned);
    repo.write(
        "tests/abs.rs",
        &ABS_TEST.replace("calc::abs(-3), 3", "calc::abs(-3) + \"one\", 3"),
    );
    repo.commit("fix abs, with a broken test");
    let g = repo.gate(&["--base", "HEAD~1", "--no-bite"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("build")["status"], "fail", "{}", g.explain());
    let reason = g
        .reasons()
        .into_iter()
        .find(|r| r.starts_with("step `build`"))
        .unwrap_or_else(|| panic!("no build reason: {}", g.explain()));
    assert!(
        reason.contains("tests/abs.rs:3:") && reason.contains("E0277"),
        "{reason}\n{}",
        g.explain()
    );
    assert!(!reason.contains("unused"), "{reason}");
}

#[test]
fn a_change_that_only_removes_a_warning_passes() {
    let base = format!("{LIB}{TWO_WARNINGS}");
    let repo = krate(&base);
    let head = base.replace("    return x * 2;\n", "    x * 2\n");
    commit_abs_fix(&repo, &head);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "preexisting", "{}", g.explain());
    for step in ["fmt", "build", "test"] {
        assert_eq!(g.step(step)["status"], "pass", "{step}: {}", g.explain());
    }
}

/// A third needless return at the end of a library that has two at base, the old ones moved down two lines;
/// the line of the new one.
fn one_more_warning(base: &str) -> (String, usize) {
    let head = format!(
        "// One.\n// Two.\n{}\n/// Four times x.\npub fn quadruple(x: i64) -> i64 {{\n    return x * 4;\n}}\n",
        fixed(base)
    );
    let line = head
        .lines()
        .position(|l| l.contains("return x * 4"))
        .unwrap()
        + 1;
    (head, line)
}

#[test]
fn a_new_clippy_warning_where_base_has_warnings_is_reported_with_its_real_location_not_blamed() {
    // Real fixes on real crates (fd, bytes) add one finding of a lint newer than their own toolchain, where
    // today's clippy already warns at base: the project is not held to these warnings.
    // Base warns three times: two needless returns and the buggy `abs` (`if_same_then_else`).
    let base = format!("{LIB}{TWO_WARNINGS}");
    let repo = krate(&base);
    let (head, line) = one_more_warning(&base);
    repo.write("src/lib.rs", &head);
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, one more needless return");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "preexisting", "{}", g.explain());
    let note = g.step("clippy")["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("for 3 warnings of its own")
            && note.contains("1 new finding reported, not blamed")
            && note.contains(&format!("src/lib.rs:{line}:5"))
            && note.contains("unneeded `return` statement"),
        "{note}\n{}",
        g.explain()
    );
    assert!(!note.contains("could not compile"), "{note}");
    // --strict-baseline holds the change to every finding.
    let strict = repo.gate(&["--base", "HEAD~1", "--strict-baseline"]);
    assert_eq!(strict.verdict(), "fail", "{}", strict.explain());
    assert_eq!(
        strict.step("clippy")["status"],
        "fail",
        "{}",
        strict.explain()
    );
}

#[test]
fn a_new_clippy_error_is_blamed_even_where_base_has_warnings() {
    // `eq_op` is denied by default (a correctness lint): an error, not a warning the project may not be held to.
    let base = format!("{LIB}{TWO_WARNINGS}");
    let repo = krate(&base);
    let head = format!(
        "{}\n/// Whether x equals itself.\npub fn same(x: i64) -> bool {{\n    x == x\n}}\n",
        fixed(&base)
    );
    repo.write("src/lib.rs", &head);
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, and compare x with itself");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "fail", "{}", g.explain());
    let note = g.step("clippy")["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("1 new finding not there") && note.contains("eq_op"),
        "{note}\n{}",
        g.explain()
    );
}

#[test]
fn the_same_change_gets_the_same_verdict_every_time() {
    // fd's shape: a binary crate whose warning is compiled twice, into the binary and its unit tests, so cargo
    // names the failing target `(bin "fd")` or `(bin "fd" test)` in whichever order the jobs end.
    let main = "fn main() {\n    println!(\"{} {}\", double(2), abs(-2));\n}\n\nfn double(x: i64) -> i64 {\n    return x * 2;\n}\n\nfn abs(x: i64) -> i64 {\n    if x < 0 {\n        x\n    } else {\n        x\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n}\n";
    let repo = Repo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"fd\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/main.rs", main),
    ]);
    let head = main
        .replace("    if x < 0 {\n        x\n", "    if x < 0 {\n        -x\n")
        .replace(
            "        assert_eq!(super::double(2), 4);\n    }\n",
            "        assert_eq!(super::double(2), 4);\n    }\n\n    #[test]\n    fn abs_of_negative_is_positive() {\n        assert_eq!(super::abs(-3), 3);\n    }\n",
        );
    repo.write("src/main.rs", &head);
    repo.commit("fix abs");
    let verdicts: Vec<String> = (0..3)
        .map(|_| {
            let g = repo.gate(&["--base", "HEAD~1"]);
            assert_eq!(g.step("clippy")["status"], "preexisting", "{}", g.explain());
            g.verdict().to_owned()
        })
        .collect();
    assert_eq!(verdicts, vec!["pass"; 3]);
}

#[test]
fn a_preexisting_rustfmt_violation_passes_with_kept_rooms() {
    // --keep puts the rooms under workspaces/, where head and base have different absolute paths, and rustfmt
    // names files by theirs.
    let base = format!("{LIB}\npub fn   mul(a: i64,b:i64)->i64{{a*b}}\n");
    let repo = krate(&base);
    commit_abs_fix(&repo, &base);
    let g = repo.gate(&["--base", "HEAD~1", "--keep"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("fmt")["status"], "preexisting", "{}", g.explain());
}

#[test]
fn a_new_rustfmt_violation_where_base_is_unformatted_is_reported_not_blamed_with_kept_rooms() {
    // A project rustfmt does not format at base (another rustfmt, or none) is not held to it.
    let base = format!("{LIB}\npub fn   mul(a: i64,b:i64)->i64{{a*b}}\n");
    let repo = krate(&base);
    let head = fixed(&base).replace("    a + b\n", "        a+b\n");
    repo.write("src/lib.rs", &head);
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, unformatted");
    let g = repo.gate(&["--base", "HEAD~1", "--keep"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("fmt")["status"], "preexisting", "{}", g.explain());
    let note = g.step("fmt")["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("not formatted by this tool at base")
            && note.contains("1 new finding reported, not blamed")
            && note.contains("src/lib.rs:"),
        "{note}\n{}",
        g.explain()
    );
    assert!(!note.contains("workspaces"), "{note}");
}

const GO_MOD: &str = "module example.com/calc\n\ngo 1.19\n";
const GO_CALC: &str = "package calc\n\n// Same returns x, assigned to itself first.\nfunc Same(x int) int {\n\tx = x\n\treturn x\n}\n\n// Abs returns the absolute value of x.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn x\n\t}\n\treturn x\n}\n";
const GO_ABS_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif got := Abs(-3); got != 3 {\n\t\tt.Fatalf(\"Abs(-3) = %d, want 3\", got)\n\t}\n}\n";

#[test]
fn a_go_vet_finding_already_at_base_is_not_blamed_when_its_line_moves() {
    // `assign` is one of the analyzers `go test` does not run itself: only the vet step sees it.
    let repo = Repo::with_files(&[("go.mod", GO_MOD), ("calc.go", GO_CALC)]);
    let head = GO_CALC
        .replace("\t\treturn x\n\t}", "\t\treturn -x\n\t}")
        .replace(
            "package calc\n",
            "package calc\n\n// Two is 2.\nconst Two = 2\n",
        );
    repo.write("calc.go", &head);
    repo.write("abs_test.go", GO_ABS_TEST);
    repo.commit("fix Abs");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("vet")["status"], "preexisting", "{}", g.explain());

    // A second self-assignment is new, and named where it is.
    let more = format!("{head}\n// Same2 returns y, assigned to itself first.\nfunc Same2(y int) int {{\n\ty = y\n\treturn y\n}}\n");
    repo.write("calc.go", &more);
    repo.commit("another self-assignment");
    let line = more.lines().position(|l| l == "\ty = y").unwrap() + 1;
    let g = repo.gate(&["--base", "HEAD~2"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("vet")["status"], "fail", "{}", g.explain());
    let note = g.step("vet")["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("1 new finding")
            && note.contains(&format!(
                "calc.go:{line}:2: self-assignment of y to y [assign]"
            )),
        "{note}\n{}",
        g.explain()
    );
}

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const PY_CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) // len(values)\n";
const PY_FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / len(values)\n";
const PY_TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const PY_TEST_MEAN: &str =
    "from calc import mean\n\n\ndef test_mean_keeps_fractions():\n    assert mean([1, 2]) == 1.5\n";

#[test]
fn a_python_project_without_ruff_configuration_is_not_judged_by_ruff() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", PY_CALC),
        ("tests/test_calc.py", PY_TEST_CALC),
    ]);
    // An unused import and a missing space: ruff's defaults would flag both.
    repo.write(
        "calc.py",
        &format!("import os\n\n\n{}", PY_FIXED.replace("a + b", "a+b")),
    );
    repo.write("tests/test_mean.py", PY_TEST_MEAN);
    repo.commit("fix mean");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    for step in ["ruff-format", "ruff"] {
        assert_eq!(g.step(step)["status"], "skipped", "{}", g.explain());
        let note = g.step(step)["note"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("not configured in this repository"),
            "{note}"
        );
    }

    // A ruff dev dependency is configuration enough: then the unused import is the change's.
    repo.write(
        "pyproject.toml",
        &format!("{PYPROJECT}\n[dependency-groups]\ndev = [\"pytest\", \"ruff>=0.4\"]\n"),
    );
    repo.commit("lint with ruff");
    let g = repo.gate(&["--base", "HEAD~2"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("ruff")["status"], "fail", "{}", g.explain());
}

/// The status word of step `name` in the console's step lines: the last line naming it, base runs aside.
fn console_status(g: &Gate, name: &str) -> Option<String> {
    g.run
        .stderr
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, n, "at", "base", ..] if n == name => None,
            [status, n, ..] if n == name => Some(status.to_owned()),
            _ => None,
        })
        .next_back()
}

#[test]
fn a_preexisting_failure_has_one_status_in_console_json_markdown_and_junit() {
    let repo = Repo::with_files(&[
        ("pyproject.toml", &format!("{PYPROJECT}\n[tool.ruff]\n")),
        ("calc.py", PY_CALC),
        ("legacy.py", "import sys\n\n\ndef old():\n    return 1\n"),
        ("tests/test_calc.py", PY_TEST_CALC),
        (
            "tests/test_legacy.py",
            "from calc import add\n\n\ndef test_legacy_is_broken():\n    assert add(1, 1) == 3\n",
        ),
    ]);
    repo.write("calc.py", PY_FIXED);
    repo.write("tests/test_mean.py", PY_TEST_MEAN);
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
    ]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    // The base run's own line names itself, whatever the terminal cuts off its note.
    assert!(
        g.run
            .stderr
            .lines()
            .any(|l| l.trim_start().starts_with("fail     ruff at base ")),
        "{}",
        g.run.stderr
    );
    let md = std::fs::read_to_string(md).unwrap();
    let junit = std::fs::read_to_string(junit).unwrap();
    let steps = g.report()["steps"].as_array().unwrap();
    let mut json = Vec::new();
    for st in steps {
        let name = st["name"].as_str().unwrap();
        let status = st["status"].as_str().unwrap();
        json.push((name.to_owned(), status.to_owned()));
        assert_eq!(
            console_status(&g, name).as_deref(),
            Some(status),
            "{name}\n{}",
            g.run.stderr
        );
        let kind = st["kind"].as_str().unwrap();
        let kind = format!("{}{}", kind[..1].to_uppercase(), &kind[1..]);
        assert!(
            md.contains(&format!("| {name} | {kind} | {status} |")),
            "{name} {status}\n{md}"
        );
        let case = junit
            .split("<testcase ")
            .find(|c| c.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("no testcase {name}\n{junit}"));
        let case = &case[..case.find("</testcase>").unwrap_or(case.len())];
        match status {
            "pass" => assert!(
                !case.contains("<failure") && !case.contains("<skipped"),
                "{case}"
            ),
            "preexisting" => {
                assert!(
                    !case.contains("<failure") && !case.contains("<skipped"),
                    "{case}"
                );
                assert!(case.contains("<system-out>preexisting: "), "{case}");
            }
            "skipped" => assert!(case.contains("<skipped"), "{case}"),
            _ => assert!(case.contains("<failure"), "{case}"),
        }
    }
    let status = |name: &str| json.iter().find(|(n, _)| n == name).unwrap().1.clone();
    assert_eq!(status("ruff"), "preexisting");
    assert_eq!(status("pytest"), "preexisting");
    assert_eq!(status("ruff-format"), "pass");
    assert!(!junit.contains("<failure"), "{junit}");
}
