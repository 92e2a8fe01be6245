//! The bite check against real toolchains: revert the production part, keep the tests, require them to fail.
//!
//! Every language kit has the same story: `abs` is wrong for negative numbers at base. Each case makes a
//! change on top and checks the bite outcome per test and the gate's verdict.

use serde_json::Value;

use crate::util::{Gate, Repo};

/// One language: a base project, the fix, and tests of each kind.
struct Kit {
    base: &'static [(&'static str, &'static str)],
    /// The fix of `abs` (path, text).
    fix: (&'static str, &'static str),
    /// A new test file: (path, text) with a test that fails without the fix.
    biting: (&'static str, &'static str),
    /// A new test file with a test that passes with or without the fix.
    inert: (&'static str, &'static str),
    /// Production: a new function, and a test file calling it.
    new_fn: (&'static str, &'static str),
    new_fn_test: (&'static str, &'static str),
    /// Three new tests in one file, one of which fails without the fix.
    three: (&'static str, &'static str),
    /// A test-only change (a new passing test of existing behaviour).
    test_only: (&'static str, &'static str),
    /// The id of the biting test, as the runner names it.
    biting_id: &'static str,
    /// Whether the gate stubs the new function's body to check a compile-only bite (Rust, Go, TypeScript and
    /// JavaScript): the bite is then behavioural (`bites`, method `stub`), else it stays `bites-build`.
    stubs: bool,
}

fn repo(kit: &Kit) -> Repo {
    Repo::with_files(kit.base)
}

fn change(repo: &Repo, files: &[(&str, &str)], msg: &str) -> Gate {
    repo.write_all(files);
    repo.commit(msg);
    repo.gate(&["--base", "HEAD~1"])
}

fn outcomes(g: &Gate) -> Vec<(String, String)> {
    g.bite_outcomes()
}

fn bite(g: &Gate) -> &Value {
    &g.report()["bite"]
}

fn outcome_counts(g: &Gate) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for (_, o) in outcomes(g) {
        *m.entry(o).or_insert(0) += 1;
    }
    m
}

fn counts(pairs: &[(&str, usize)]) -> std::collections::BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn a_real_fix_bites(kit: &Kit) {
    let r = repo(kit);
    let g = change(&r, &[kit.fix, kit.biting], "fix abs with a regression test");
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "bites", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![(kit.biting_id.to_string(), "bites".to_string())],
        "{}",
        g.explain()
    );
    assert_eq!(bite(&g)["production_files"], serde_json::json!([kit.fix.0]));
    assert_eq!(bite(&g)["test_files"], serde_json::json!([kit.biting.0]));
}

fn an_inert_test_does_not_bite_and_fails_the_gate(kit: &Kit) {
    let r = repo(kit);
    let g = change(
        &r,
        &[kit.fix, kit.inert],
        "fix abs with a test that proves nothing",
    );
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "no-bite", "{}", g.explain());
    assert_eq!(
        outcome_counts(&g),
        counts(&[("inert", 1)]),
        "{}",
        g.explain()
    );
    assert!(
        g.reasons().iter().any(|r| r.starts_with("no-bite: ")),
        "{}",
        g.explain()
    );
}

fn a_test_of_a_new_function_bites_by_build_and_the_policy_can_reject_it(kit: &Kit) {
    let r = repo(kit);
    let g = change(&r, &[kit.new_fn, kit.new_fn_test], "add sign with a test");
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "bites", "{}", g.explain());
    let counted = outcome_counts(&g);
    if kit.stubs {
        // Compile-only at base; with the new function stubbed at head the test fails: a behavioural bite,
        // which the build-failure policy does not reject.
        assert_eq!(
            counted.keys().collect::<Vec<_>>(),
            vec!["bites"],
            "{}",
            g.explain()
        );
        assert_eq!(bite(&g)["tests"][0]["method"], "stub", "{}", g.explain());
        let g = r.gate(&["--base", "HEAD~1", "--bite-build-failure", "reject"]);
        assert_eq!(g.verdict(), "pass", "{}", g.explain());
        assert_eq!(bite(&g)["status"], "bites", "{}", g.explain());
        return;
    }
    assert_eq!(
        counted.keys().collect::<Vec<_>>(),
        vec!["bites-build"],
        "{}",
        g.explain()
    );
    let g = r.gate(&["--base", "HEAD~1", "--bite-build-failure", "reject"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "no-bite", "{}", g.explain());
}

fn one_of_three_new_tests_bites_with_two_inert_warnings(kit: &Kit) {
    let r = repo(kit);
    let g = change(&r, &[kit.fix, kit.three], "fix abs with three tests");
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "bites");
    assert_eq!(
        outcome_counts(&g),
        counts(&[("bites", 1), ("inert", 2)]),
        "{}",
        g.explain()
    );
    let warnings = bite(&g)["warnings"].to_string();
    assert!(warnings.contains("inert"), "{}", g.explain());
    let g = r.gate(&["--base", "HEAD~1", "--bite-require", "all"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
}

fn a_test_only_change_is_not_applicable_and_passes(kit: &Kit) {
    let r = repo(kit);
    let g = change(&r, &[kit.test_only], "more tests");
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "not-applicable", "{}", g.explain());
    assert!(
        bite(&g)["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("test-only change"),
        "{}",
        g.explain()
    );
}

fn no_tests_fails_on_test_presence(kit: &Kit) {
    let r = repo(kit);
    let g = change(&r, &[kit.fix], "fix abs, no test");
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "not-applicable", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("no tests changed")),
        "{}",
        g.explain()
    );
}

macro_rules! kit_cases {
    ($module:ident, $kit:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn a_real_fix_with_a_regression_test_bites() {
                a_real_fix_bites(&$kit);
            }

            #[test]
            fn a_test_that_passes_regardless_is_inert_and_the_gate_fails() {
                an_inert_test_does_not_bite_and_fails_the_gate(&$kit);
            }

            #[test]
            fn a_new_test_of_a_new_function_bites_by_build_unless_rejected() {
                a_test_of_a_new_function_bites_by_build_and_the_policy_can_reject_it(&$kit);
            }

            #[test]
            fn one_of_three_new_tests_bites_and_two_are_inert_warnings() {
                one_of_three_new_tests_bites_with_two_inert_warnings(&$kit);
            }

            #[test]
            fn a_test_only_change_is_not_applicable() {
                a_test_only_change_is_not_applicable_and_passes(&$kit);
            }

            #[test]
            fn a_production_change_without_tests_fails_on_test_presence() {
                no_tests_fails_on_test_presence(&$kit);
            }
        }
    };
}

// ---------------------------------------------------------------- Python

const PY_BASE: &[(&str, &str)] = &[
    ("pyproject.toml", "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n"),
    ("calc.py", "def add(a, b):\n    return a + b\n\n\ndef absolute(x):\n    return x\n"),
    ("tests/test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"),
];
const PY_FIX: &str =
    "def add(a, b):\n    return a + b\n\n\ndef absolute(x):\n    return -x if x < 0 else x\n";

const PYTHON: Kit = Kit {
    base: PY_BASE,
    fix: ("calc.py", PY_FIX),
    biting: ("tests/test_abs.py", "from calc import absolute\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n"),
    inert: ("tests/test_abs.py", "from calc import absolute\n\n\ndef test_positive():\n    assert absolute(3) == 3\n"),
    new_fn: ("calc.py", "def add(a, b):\n    return a + b\n\n\ndef absolute(x):\n    return x\n\n\ndef sign(x):\n    return (x > 0) - (x < 0)\n"),
    new_fn_test: ("tests/test_sign.py", "from calc import sign\n\n\ndef test_sign():\n    assert sign(-2) == -1\n"),
    three: ("tests/test_abs.py", "from calc import absolute\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n\n\ndef test_positive():\n    assert absolute(3) == 3\n\n\ndef test_zero():\n    assert absolute(0) == 0\n"),
    test_only: ("tests/test_more.py", "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"),
    biting_id: "tests/test_abs.py::test_negative",
    stubs: false,
};

kit_cases!(python, PYTHON);

// ---------------------------------------------------------------- Go

const GO_BASE: &[(&str, &str)] = &[
    ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
    ("calc.go", "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\treturn x\n}\n"),
    ("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n"),
];
const GO_FIX: &str = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n";

const GO: Kit = Kit {
    base: GO_BASE,
    fix: ("calc.go", GO_FIX),
    biting: ("abs_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(\"Abs(-3) != 3\")\n\t}\n}\n"),
    inert: ("abs_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbsPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal(\"Abs(3) != 3\")\n\t}\n}\n"),
    new_fn: ("calc.go", "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a + b }\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\treturn x\n}\n\n// Sign returns -1, 0 or 1.\nfunc Sign(x int) int {\n\tswitch {\n\tcase x < 0:\n\t\treturn -1\n\tcase x > 0:\n\t\treturn 1\n\t}\n\treturn 0\n}\n"),
    new_fn_test: ("sign_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestSign(t *testing.T) {\n\tif Sign(-2) != -1 {\n\t\tt.Fatal(\"Sign(-2) != -1\")\n\t}\n}\n"),
    three: ("abs_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(\"Abs(-3) != 3\")\n\t}\n}\n\nfunc TestAbsPositive(t *testing.T) {\n\tif Abs(3) != 3 {\n\t\tt.Fatal(\"Abs(3) != 3\")\n\t}\n}\n\nfunc TestAbsZero(t *testing.T) {\n\tif Abs(0) != 0 {\n\t\tt.Fatal(\"Abs(0) != 0\")\n\t}\n}\n"),
    test_only: ("more_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAddZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"Add(0, 0) != 0\")\n\t}\n}\n"),
    biting_id: "example.com/calc::TestAbsNegative",
    stubs: true,
};

kit_cases!(go, GO);

// ---------------------------------------------------------------- Rust

const RS_BASE: &[(&str, &str)] = &[
    ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"),
    ("src/lib.rs", "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    x\n}\n"),
    ("tests/add.rs", "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"),
];
const RS_FIX: &str = "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        -x\n    } else {\n        x\n    }\n}\n";

const RUST: Kit = Kit {
    base: RS_BASE,
    fix: ("src/lib.rs", RS_FIX),
    biting: ("tests/abs.rs", "#[test]\nfn negative() {\n    assert_eq!(calc::abs(-3), 3);\n}\n"),
    inert: ("tests/abs.rs", "#[test]\nfn positive() {\n    assert_eq!(calc::abs(3), 3);\n}\n"),
    new_fn: ("src/lib.rs", "/// Adds.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    x\n}\n\n/// The sign.\npub fn sign(x: i64) -> i64 {\n    x.signum()\n}\n"),
    new_fn_test: ("tests/sign.rs", "#[test]\nfn sign_of_negative() {\n    assert_eq!(calc::sign(-2), -1);\n}\n"),
    three: ("tests/abs.rs", "#[test]\nfn negative() {\n    assert_eq!(calc::abs(-3), 3);\n}\n\n#[test]\nfn positive() {\n    assert_eq!(calc::abs(3), 3);\n}\n\n#[test]\nfn zero() {\n    assert_eq!(calc::abs(0), 0);\n}\n"),
    test_only: ("tests/more.rs", "#[test]\nfn adds_zero() {\n    assert_eq!(calc::add(0, 0), 0);\n}\n"),
    biting_id: "abs@tests/abs.rs::negative",
    stubs: true,
};

kit_cases!(rust, RUST);

// ---------------------------------------------------------------- Node

const JS_BASE: &[(&str, &str)] = &[
    ("package.json", "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true\n}\n"),
    ("calc.js", "function add(a, b) {\n  return a + b;\n}\n\nfunction abs(x) {\n  return x;\n}\n\nmodule.exports = { add, abs };\n"),
    ("test/calc.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\n\ntest('adds', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n"),
];

const NODE: Kit = Kit {
    base: JS_BASE,
    fix: ("calc.js", "function add(a, b) {\n  return a + b;\n}\n\nfunction abs(x) {\n  return x < 0 ? -x : x;\n}\n\nmodule.exports = { add, abs };\n"),
    biting: ("test/abs.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { abs } = require('../calc');\n\ntest('abs of a negative number', () => {\n  assert.strictEqual(abs(-3), 3);\n});\n"),
    inert: ("test/abs.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { abs } = require('../calc');\n\ntest('abs of a positive number', () => {\n  assert.strictEqual(abs(3), 3);\n});\n"),
    new_fn: ("sign.js", "module.exports = function sign(x) {\n  return Math.sign(x);\n};\n"),
    new_fn_test: ("test/sign.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst sign = require('../sign');\n\ntest('sign of a negative number', () => {\n  assert.strictEqual(sign(-2), -1);\n});\n"),
    three: ("test/abs.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { abs } = require('../calc');\n\ntest('abs of a negative number', () => {\n  assert.strictEqual(abs(-3), 3);\n});\n\ntest('abs of a positive number', () => {\n  assert.strictEqual(abs(3), 3);\n});\n\ntest('abs of zero', () => {\n  assert.strictEqual(abs(0), 0);\n});\n"),
    test_only: ("test/more.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\n\ntest('adds zero', () => {\n  assert.strictEqual(add(0, 0), 0);\n});\n"),
    biting_id: "test/abs.test.js::abs of a negative number",
    stubs: true,
};

kit_cases!(node, NODE);

// ---------------------------------------------------------------- Cases of one language

#[test]
fn a_rust_fix_with_its_test_in_the_same_files_test_module_bites_by_hunk_split() {
    let r = repo(&RUST);
    let fixed_with_test = format!(
        "{RS_FIX}\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn abs_of_negative() {{\n        assert_eq!(abs(-3), 3);\n    }}\n}}\n"
    );
    let g = change(
        &r,
        &[("src/lib.rs", &fixed_with_test)],
        "fix abs with an inline test",
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![(
            "calc@src/lib.rs::tests::abs_of_negative".to_string(),
            "bites".to_string()
        )],
        "{}",
        g.explain()
    );
    let reverted = bite(&g)["reverted"].to_string();
    assert!(reverted.contains("kept the test hunks"), "{}", g.explain());
}

#[test]
fn a_go_table_test_with_only_a_row_added_bites() {
    let base: Vec<(&str, &str)> = vec![
        GO_BASE[0],
        GO_BASE[1],
        ("abs_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tcases := []struct {\n\t\tname    string\n\t\tin, out int\n\t}{\n\t\t{\"positive\", 3, 3},\n\t}\n\tfor _, c := range cases {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tif got := Abs(c.in); got != c.out {\n\t\t\t\tt.Fatalf(\"Abs(%d) = %d\", c.in, got)\n\t\t\t}\n\t\t})\n\t}\n}\n"),
    ];
    let r = Repo::with_files(&base);
    let with_row = base[2].1.replace(
        "{\"positive\", 3, 3},",
        "{\"positive\", 3, 3},\n\t\t{\"negative\", -3, 3},",
    );
    let g = change(
        &r,
        &[("calc.go", GO_FIX), ("abs_test.go", &with_row)],
        "fix Abs, add a table row",
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    let got = outcomes(&g);
    assert!(
        got.contains(&(
            "example.com/calc::TestAbs/negative".to_string(),
            "bites".to_string()
        )),
        "{}",
        g.explain()
    );
    assert!(
        got.contains(&(
            "example.com/calc::TestAbs/positive".to_string(),
            "inert".to_string()
        )),
        "{}",
        g.explain()
    );
}

#[test]
fn a_python_parametrized_case_added_bites() {
    let r = Repo::with_files(&[
        PY_BASE[0],
        PY_BASE[1],
        ("tests/test_abs.py", "import pytest\n\nfrom calc import absolute\n\n\n@pytest.mark.parametrize(\"x, want\", [(3, 3), (0, 0)])\ndef test_absolute(x, want):\n    assert absolute(x) == want\n"),
    ]);
    let g = change(
        &r,
        &[
            ("calc.py", PY_FIX),
            ("tests/test_abs.py", "import pytest\n\nfrom calc import absolute\n\n\n@pytest.mark.parametrize(\"x, want\", [(3, 3), (0, 0), (-3, 3)])\ndef test_absolute(x, want):\n    assert absolute(x) == want\n"),
        ],
        "fix absolute, add a case",
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    let got = outcomes(&g);
    assert!(
        got.contains(&(
            "tests/test_abs.py::test_absolute[-3-3]".to_string(),
            "bites".to_string()
        )),
        "{}",
        g.explain()
    );
    assert_eq!(
        got.iter().filter(|(_, o)| o == "inert").count(),
        2,
        "{}",
        g.explain()
    );
}

#[test]
fn an_integration_test_of_the_built_binary_bites_because_the_reverted_binary_is_rebuilt() {
    let main_rs = |body: &str| {
        format!("fn main() {{\n    let x: i64 = std::env::args().nth(1).unwrap().parse().unwrap();\n    println!(\"{{}}\", {body});\n}}\n")
    };
    let r = Repo::with_files(&[
        ("Cargo.toml", "[package]\nname = \"absol\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n"),
        ("src/main.rs", &main_rs("x")),
        ("tests/cli.rs", "use std::process::Command;\n\nfn run(arg: &str) -> String {\n    let out = Command::new(env!(\"CARGO_BIN_EXE_absol\"))\n        .arg(arg)\n        .output()\n        .unwrap();\n    String::from_utf8(out.stdout).unwrap()\n}\n\n#[test]\nfn positive() {\n    assert_eq!(run(\"3\"), \"3\\n\");\n}\n"),
    ]);
    r.write("src/main.rs", &main_rs("x.abs()"));
    r.write(
        "tests/cli.rs",
        "use std::process::Command;\n\nfn run(arg: &str) -> String {\n    let out = Command::new(env!(\"CARGO_BIN_EXE_absol\"))\n        .arg(arg)\n        .output()\n        .unwrap();\n    String::from_utf8(out.stdout).unwrap()\n}\n\n#[test]\nfn positive() {\n    assert_eq!(run(\"3\"), \"3\\n\");\n}\n\n#[test]\nfn negative() {\n    assert_eq!(run(\"-3\"), \"3\\n\");\n}\n",
    );
    r.commit("absolute values on the command line");
    let g = r.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![(
            "cli@tests/cli.rs::negative".to_string(),
            "bites".to_string()
        )],
        "{}",
        g.explain()
    );
}

#[test]
fn a_deleted_existing_test_is_reported_and_fails_the_gate_unless_allowed() {
    let r = repo(&PYTHON);
    r.remove("tests/test_calc.py");
    let g = change(
        &r,
        &[PYTHON.fix, PYTHON.biting],
        "fix abs, drop the add test",
    );
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "bites", "{}", g.explain());
    assert_eq!(
        bite(&g)["removed_tests"],
        serde_json::json!(["tests/test_calc.py::test_add"])
    );
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.starts_with("removed tests: tests/test_calc.py::test_add")),
        "{}",
        g.explain()
    );
    let g = r.gate(&["--base", "HEAD~1", "--allow-removed-tests"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}

#[test]
fn a_weakened_assertion_is_reported_and_fails_the_gate() {
    let r = repo(&PYTHON);
    let g = change(
        &r,
        &[
            PYTHON.fix,
            PYTHON.biting,
            (
                "tests/test_calc.py",
                "from calc import add\n\n\ndef test_add():\n    add(2, 3)\n",
            ),
        ],
        "fix abs, loosen the add test",
    );
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("tests/test_calc.py::test_add has fewer assertions (1 → 0)")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_reverted_test_that_hangs_times_out_and_its_process_group_is_gone() {
    let marker = format!("vouch-bite-hang-{}", std::process::id());
    let r = repo(&PYTHON);
    let profile = r.tmp.path().join("bite-timeout.toml");
    let preset = crate::util::preset("python");
    std::fs::write(&profile, format!("{preset}\n[bite]\ntimeout = \"4s\"\n")).unwrap();
    let hang = format!(
        "import subprocess\n\nfrom calc import absolute\n\n\ndef test_negative_terminates():\n    subprocess.Popen([\"sh\", \"-c\", \"sleep 600; echo {marker}\"])\n    x = -1\n    while absolute(x) != 1:\n        pass\n"
    );
    r.write_all(&[PYTHON.fix, ("tests/test_abs.py", &hang)]);
    r.commit("fix abs, with a test that loops without it");
    let g = r.gate(&["--base", "HEAD~1", "--profile", profile.to_str().unwrap()]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        outcomes(&g),
        vec![(
            "tests/test_abs.py::test_negative_terminates".to_string(),
            "timeout".to_string()
        )],
        "{}",
        g.explain()
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "processes outlived the bite step: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn a_second_gate_run_of_the_same_change_takes_the_bite_check_from_the_cache() {
    let r = repo(&PYTHON);
    let first = change(
        &r,
        &[PYTHON.fix, PYTHON.biting],
        "fix abs with a regression test",
    );
    assert_eq!(bite(&first)["status"], "bites", "{}", first.explain());
    assert!(bite(&first).get("cached").is_none(), "{}", first.explain());
    let again = r.gate(&["--base", "HEAD~1"]);
    assert_eq!(again.verdict(), "pass", "{}", again.explain());
    assert_eq!(bite(&again)["status"], "bites", "{}", again.explain());
    assert_eq!(bite(&again)["cached"], true, "{}", again.explain());
    assert_eq!(outcomes(&again), outcomes(&first));
    // Another vouch build (an upgrade, a fix to how tests are selected) checks again: an older build's
    // verdict is not this one's.
    let other = tempfile::tempdir().unwrap();
    let exe = other.path().join("vouch");
    std::fs::copy(env!("CARGO_BIN_EXE_vouch"), &exe).unwrap();
    let file = std::fs::File::options().write(true).open(&exe).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(file);
    let upgraded = r.gate_exe(&exe, &["--base", "HEAD~1"], &[]);
    assert_eq!(bite(&upgraded)["status"], "bites", "{}", upgraded.explain());
    assert!(
        bite(&upgraded).get("cached").is_none(),
        "{}",
        upgraded.explain()
    );
    assert!(
        again
            .run
            .stderr
            .contains("(cached: this change was checked before"),
        "{}",
        again.run.stderr
    );
    // Asked to, the gate checks again.
    let refreshed = r.gate(&["--base", "HEAD~1", "--refresh-baseline"]);
    assert_eq!(
        bite(&refreshed)["status"],
        "bites",
        "{}",
        refreshed.explain()
    );
    assert!(
        bite(&refreshed).get("cached").is_none(),
        "{}",
        refreshed.explain()
    );
    let r = repo(&PYTHON);
    let inert = change(
        &r,
        &[PYTHON.fix, PYTHON.inert],
        "fix abs with a test that proves nothing",
    );
    assert_eq!(bite(&inert)["status"], "no-bite", "{}", inert.explain());
    assert!(bite(&inert).get("cached").is_none(), "{}", inert.explain());
    // A cached no-bite fails the gate as the first one did.
    let inert_again = r.gate(&["--base", "HEAD~1"]);
    assert_eq!(
        bite(&inert_again)["status"],
        "no-bite",
        "{}",
        inert_again.explain()
    );
    assert_eq!(
        bite(&inert_again)["cached"],
        true,
        "{}",
        inert_again.explain()
    );
    assert_eq!(inert_again.verdict(), "fail", "{}", inert_again.explain());
}

#[test]
fn a_python_test_whose_id_changes_between_runs_is_run_by_its_function_and_does_not_hide_the_others()
{
    // marshmallow's shape: a parameter holding the time gives the test another id in every run, so the bite
    // room's pytest does not find the id head ran, and then runs none of the selection. Its function runs
    // whole instead, and its one instance is head's test.
    let r = repo(&PYTHON);
    let tests = "import time\n\nimport pytest\n\nfrom calc import absolute\n\n\ndef test_negative():\n    assert absolute(-3) == 3\n\n\n@pytest.mark.parametrize(\"stamp\", [time.time_ns()])\ndef test_stamped(stamp):\n    assert absolute(stamp) == stamp\n";
    let g = change(
        &r,
        &[PYTHON.fix, ("tests/test_abs.py", tests)],
        "fix abs, with a test whose id holds the time",
    );
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(bite(&g)["status"], "bites", "{}", g.explain());
    let got = outcomes(&g);
    assert!(
        got.contains(&("tests/test_abs.py::test_negative".into(), "bites".into())),
        "{got:?}\n{}",
        g.explain()
    );
    let stamped: Vec<&(String, String)> = got
        .iter()
        .filter(|(id, _)| id.starts_with("tests/test_abs.py::test_stamped["))
        .collect();
    assert_eq!(stamped.len(), 1, "{got:?}");
    assert_eq!(stamped[0].1, "inert", "{got:?}\n{}", g.explain());
}

#[test]
fn a_change_whose_test_ids_hold_the_time_is_taken_from_the_cache_on_the_next_run() {
    // marshmallow's tests put the time in their parametrized ids: each run names them differently.
    let r = Repo::with_files(&[PY_BASE[0], PY_BASE[1], PY_BASE[2]]);
    let stamped = "import datetime\n\nimport pytest\n\nfrom calc import absolute\n\n\n\
@pytest.mark.parametrize(\"when\", [datetime.datetime.now().isoformat()])\n\
def test_absolute_at(when):\n    assert absolute(-len(when)) == len(when)\n";
    let first = change(
        &r,
        &[("calc.py", PY_FIX), ("tests/test_at.py", stamped)],
        "fix absolute, with a test stamped with the time",
    );
    assert_eq!(bite(&first)["status"], "bites", "{}", first.explain());
    assert!(bite(&first).get("cached").is_none(), "{}", first.explain());
    // The reverted run names the test anew; it is matched back to head's id by its function.
    let got = outcomes(&first);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].0.starts_with("tests/test_at.py::test_absolute_at[2") && got[0].1 == "bites",
        "{got:?}"
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let again = r.gate(&["--base", "HEAD~1"]);
    assert_eq!(again.verdict(), "pass", "{}", again.explain());
    assert_eq!(bite(&again)["status"], "bites", "{}", again.explain());
    assert_eq!(bite(&again)["cached"], true, "{}", again.explain());
}
