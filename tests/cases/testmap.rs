//! Which tests a change touches, on real toolchains (issue 9, defects 6 to 8, tests that never run): tests
//! keyed by their full id, changed by their own text, selected through the helpers they import, and new test
//! files the test command never collects.

use serde_json::Value;

use crate::util::{strings, Gate, Repo};

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef absolute(x):\n    return x\n";
const CALC_FIXED: &str =
    "def add(a, b):\n    return a + b\n\n\ndef absolute(x):\n    return -x if x < 0 else x\n";

fn python(tests: &[(&'static str, &'static str)]) -> Repo {
    let mut files = vec![("pyproject.toml", PYPROJECT), ("calc.py", CALC)];
    files.extend_from_slice(tests);
    Repo::with_files(&files)
}

fn change(repo: &Repo, files: &[(&str, &str)], args: &[&str]) -> Gate {
    repo.write_all(files);
    repo.commit("fix absolute");
    let mut all = vec!["--base", "HEAD~1"];
    all.extend_from_slice(args);
    repo.gate(&all)
}

fn bite(g: &Gate) -> &Value {
    &g.report()["bite"]
}

fn outcomes(g: &Gate) -> Vec<(String, String)> {
    bite(g)["tests"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t["id"].as_str().unwrap_or("").to_owned(),
                        t["outcome"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pair(id: &str, outcome: &str) -> (String, String) {
    (id.to_owned(), outcome.to_owned())
}

const TWO_CLASSES: &str = "from calc import add\n\n\nclass TestA:\n    def test_same(self):\n        assert add(1, 1) == 2\n        assert add(2, 2) == 4\n\n\nclass TestB:\n    def test_same(self):\n        assert add(0, 0) == 0\n";

#[test]
fn methods_of_the_same_name_in_two_classes_are_not_a_weakened_test() {
    let repo = python(&[("tests/test_calc.py", TWO_CLASSES)]);
    let head = format!("{TWO_CLASSES}\n\ndef test_negative():\n    from calc import absolute\n\n    assert absolute(-3) == 3\n");
    let g = change(
        &repo,
        &[("calc.py", CALC_FIXED), ("tests/test_calc.py", &head)],
        &[],
    );
    assert_eq!(
        strings(&bite(&g)["weakened_tests"]),
        Vec::<String>::new(),
        "{}",
        g.explain()
    );
    assert_eq!(
        strings(&bite(&g)["removed_tests"]),
        Vec::<String>::new(),
        "{}",
        g.explain()
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![pair("tests/test_calc.py::test_negative", "bites")],
        "{}",
        g.explain()
    );
}

#[test]
fn a_removed_method_is_named_with_its_class() {
    let repo = python(&[("tests/test_calc.py", TWO_CLASSES)]);
    let head = "from calc import absolute, add\n\n\nclass TestA:\n    def test_same(self):\n        assert add(1, 1) == 2\n        assert add(2, 2) == 4\n\n\nclass TestB:\n    def test_negative(self):\n        assert absolute(-3) == 3\n";
    let g = change(
        &repo,
        &[("calc.py", CALC_FIXED), ("tests/test_calc.py", head)],
        &[],
    );
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        strings(&bite(&g)["removed_tests"]),
        vec!["tests/test_calc.py::TestB::test_same".to_string()],
        "{}",
        g.explain()
    );
    assert_eq!(
        strings(&bite(&g)["weakened_tests"]),
        Vec::<String>::new(),
        "{}",
        g.explain()
    );
}

#[test]
fn a_test_inside_a_string_literal_is_not_a_removed_test() {
    let base = "from calc import add\n\nEXAMPLE = '''\ndef test_in_a_string():\n    assert add(1, 2) == 3\n'''\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    let head = "from calc import absolute, add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n";
    let repo = python(&[("tests/test_calc.py", base)]);
    let g = change(
        &repo,
        &[("calc.py", CALC_FIXED), ("tests/test_calc.py", head)],
        &[],
    );
    assert_eq!(
        strings(&bite(&g)["removed_tests"]),
        Vec::<String>::new(),
        "{}",
        g.explain()
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}

#[test]
fn a_new_test_added_directly_above_an_old_one_passes_under_require_all() {
    // Both tests start with the same decorator, so the diff's hunk slides into the old test: it inserts
    // the new test's body and the old test's decorator line.
    let base = "import pytest\n\nfrom calc import absolute, add\n\n\n@pytest.mark.filterwarnings(\"error\")\ndef test_add():\n    assert add(2, 3) == 5\n";
    let head = "import pytest\n\nfrom calc import absolute, add\n\n\n@pytest.mark.filterwarnings(\"error\")\ndef test_negative():\n    assert absolute(-3) == 3\n\n\n@pytest.mark.filterwarnings(\"error\")\ndef test_add():\n    assert add(2, 3) == 5\n";
    let repo = python(&[("tests/test_calc.py", base)]);
    let g = change(
        &repo,
        &[("calc.py", CALC_FIXED), ("tests/test_calc.py", head)],
        &["--bite-require", "all"],
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![pair("tests/test_calc.py::test_negative", "bites")],
        "{}",
        g.explain()
    );
}

const HELPERS: &str = "CASES = [(3, 3), (0, 0)]\n";
const TEST_ABS: &str = "import pytest\n\nfrom calc import absolute\nfrom helpers import CASES\n\n\n@pytest.mark.parametrize(\"x, want\", CASES)\ndef test_absolute(x, want):\n    assert absolute(x) == want\n";
const TEST_ADD: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

#[test]
fn a_changed_helper_selects_the_tests_that_import_it_and_counts_them_apart() {
    let repo = python(&[
        ("tests/helpers.py", HELPERS),
        ("tests/test_abs.py", TEST_ABS),
        ("tests/test_calc.py", TEST_ADD),
    ]);
    let g = change(
        &repo,
        &[
            ("calc.py", CALC_FIXED),
            ("tests/helpers.py", "CASES = [(3, 3), (0, 0), (-3, 3)]\n"),
        ],
        &[],
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![
            pair("tests/test_abs.py::test_absolute[-3-3]", "bites"),
            pair("tests/test_abs.py::test_absolute[0-0]", "inert"),
            pair("tests/test_abs.py::test_absolute[3-3]", "inert"),
        ],
        "{}",
        g.explain()
    );
    assert_eq!(
        strings(&bite(&g)["reasons"]),
        vec!["1 of 3 tests (0 changed, 3 selected) fail without the production change".to_string()],
        "{}",
        g.explain()
    );
}

#[test]
fn a_new_python_test_file_pytest_does_not_collect_is_no_test_change() {
    let repo = python(&[("tests/test_calc.py", TEST_ADD)]);
    let g = change(
        &repo,
        &[
            ("calc.py", CALC_FIXED),
            ("tests/check_abs.py", "from calc import absolute\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n"),
        ],
        &[],
    );
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let file = g.report()["changes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["path"] == "tests/check_abs.py"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(file["collected"], false, "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("no tests changed")),
        "{}",
        g.explain()
    );
    assert!(
        strings(&g.report()["notes"])
            .iter()
            .any(|n| n.starts_with("tests/check_abs.py is not collected by the test command")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_new_rust_test_file_no_target_reaches_is_no_test_change() {
    let repo = Repo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", "pub fn absolute(x: i64) -> i64 {\n    x\n}\n"),
        (
            "tests/main.rs",
            "#[test]\nfn positive() {\n    assert_eq!(calc::absolute(3), 3);\n}\n",
        ),
    ]);
    repo.write_all(&[
        (
            "src/lib.rs",
            "pub fn absolute(x: i64) -> i64 {\n    x.abs()\n}\n",
        ),
        (
            "tests/sub/negative.rs",
            "#[test]\nfn negative() {\n    assert_eq!(calc::absolute(-3), 3);\n}\n",
        ),
    ]);
    repo.commit("fix absolute");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let file = g.report()["changes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["path"] == "tests/sub/negative.rs"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(file["collected"], false, "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("no tests changed")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_new_go_test_file_behind_an_ignore_tag_is_no_test_change() {
    let repo = Repo::with_files(&[
        ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
        ("calc.go", "package calc\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\treturn x\n}\n"),
        ("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal(\"Abs(3) != 3\")\n\t}\n}\n"),
    ]);
    repo.write_all(&[
        ("calc.go", "package calc\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n"),
        ("neg_test.go", "//go:build ignore\n\npackage calc\n\nimport \"testing\"\n\nfunc TestNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(\"Abs(-3) != 3\")\n\t}\n}\n"),
    ]);
    repo.commit("fix Abs");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let file = g.report()["changes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["path"] == "neg_test.go"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(file["collected"], false, "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("no tests changed")),
        "{}",
        g.explain()
    );
}

const JS_CALC: &str = "function abs(x) {\n  return x;\n}\n\nmodule.exports = { abs };\n";
const JS_FIXED: &str =
    "function abs(x) {\n  return x < 0 ? -x : x;\n}\n\nmodule.exports = { abs };\n";
const JS_TEST: &str = "const { describe, it } = require('node:test');\nconst assert = require('node:assert');\nconst { abs } = require('../calc');\n\ndescribe('abs', () => {\n  it('keeps positives', () => {\n    assert.strictEqual(String(abs(3)) + '{', '3{');\n  });\n";

#[test]
fn a_node_test_is_keyed_by_its_suite_and_a_brace_in_a_string_widens_nothing() {
    let repo = Repo::with_files(&[
        (
            "package.json",
            "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true\n}\n",
        ),
        ("calc.js", JS_CALC),
        ("test/calc.test.js", &format!("{JS_TEST}}});\n")),
    ]);
    let head = format!("{JS_TEST}\n  it('flips negatives', () => {{\n    assert.strictEqual(abs(-3), 3);\n  }});\n}});\n");
    let g = change(
        &repo,
        &[("calc.js", JS_FIXED), ("test/calc.test.js", &head)],
        &["--bite-require", "all"],
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![pair("test/calc.test.js::abs > flips negatives", "bites")],
        "{}",
        g.explain()
    );
}
