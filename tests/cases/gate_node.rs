//! `vouch gate` on a Node.js package: node --test with the JUnit reporter.

use crate::util::Repo;

const PACKAGE: &str =
    "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true\n}\n";
const CALC: &str = "function add(a, b) {\n  return a + b;\n}\n\nfunction abs(x) {\n  return x < 0 ? x : x;\n}\n\nmodule.exports = { add, abs };\n";
const CALC_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\n\ntest('adds', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n";
const ABS_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { abs } = require('../calc');\n\ntest('abs of a negative number is positive', () => {\n  assert.strictEqual(abs(-3), 3);\n});\n";

fn package() -> Repo {
    Repo::with_files(&[
        ("package.json", PACKAGE),
        ("calc.js", CALC),
        ("test/calc.test.js", CALC_TEST),
    ])
}

#[test]
fn a_correct_node_fix_with_its_test_passes() {
    let repo = package();
    repo.write("calc.js", &CALC.replace("x < 0 ? x : x", "x < 0 ? -x : x"));
    repo.write("test/abs.test.js", ABS_TEST);
    repo.commit("fix abs");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["profile"]["name"], "node");
    assert_eq!(g.step("test")["tests"]["passed"], 2, "{}", g.explain());
    assert_eq!(g.step("prettier")["status"], "skipped");
}

#[test]
fn a_new_failing_node_test_is_blamed_and_an_old_one_is_not() {
    let repo = Repo::with_files(&[
        ("package.json", PACKAGE),
        ("calc.js", CALC),
        ("test/calc.test.js", CALC_TEST),
        ("test/legacy.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('legacy is broken', () => {\n  assert.strictEqual(1 + 1, 3);\n});\n"),
    ]);
    repo.write("test/abs.test.js", ABS_TEST);
    repo.commit("a test for abs, without the fix");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        g.tests("new_failures"),
        vec!["test/abs.test.js::abs of a negative number is positive".to_string()]
    );
    assert_eq!(
        g.tests("preexisting_failures"),
        vec!["test/legacy.test.js::legacy is broken".to_string()]
    );
}

#[test]
fn a_package_testing_with_another_framework_is_judged_by_its_own_npm_test() {
    // package.json names a framework (here mocha, not installed: its own test script stands in for it).
    let package = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test && node check.js\" },\n  \"devDependencies\": { \"mocha\": \"*\" }\n}\n";
    let repo = Repo::with_files(&[
        ("package.json", package),
        ("calc.js", CALC),
        (
            "check.js",
            "const { add } = require('./calc');\nif (add(2, 3) !== 5) { process.exit(1); }\n",
        ),
        ("test/calc.test.js", CALC_TEST),
    ]);
    repo.write("calc.js", &CALC.replace("x < 0 ? x : x", "x < 0 ? -x : x"));
    repo.write("test/abs.test.js", ABS_TEST);
    repo.commit("fix abs");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("npm-test")["status"], "pass", "{}", g.explain());
    assert_eq!(g.step("test")["status"], "skipped");
    assert!(
        g.step("test")["note"]
            .as_str()
            .unwrap()
            .contains("names \"mocha\""),
        "{}",
        g.explain()
    );

    repo.write("check.js", "process.exit(1);\n");
    repo.write("test/more.test.js", ABS_TEST);
    repo.commit("break the test script");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.reasons().iter().any(|r| r.contains("`npm-test`")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_whole_run_bite_check_judges_a_package_without_per_test_results() {
    let package = "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node test/run.js\" },\n  \"devDependencies\": { \"mocha\": \"*\" }\n}\n";
    let runner = "const fs = require('fs');\nfor (const f of fs.readdirSync(__dirname).filter((f) => f.endsWith('.check.js'))) {\n  require('./' + f);\n}\n";
    let check = |body: &str| {
        format!("const assert = require('node:assert');\nconst {{ abs }} = require('../calc');\n{body}\n")
    };
    let repo = Repo::with_files(&[
        ("package.json", package),
        ("calc.js", CALC),
        ("test/run.js", runner),
        ("test/add.check.js", "const assert = require('node:assert');\nconst { add } = require('../calc');\nassert.strictEqual(add(2, 3), 5);\n"),
    ]);
    // A real fix: its new check fails without it.
    repo.write("calc.js", &CALC.replace("x < 0 ? x : x", "x < 0 ? -x : x"));
    repo.write(
        "test/abs.check.js",
        &check("assert.strictEqual(abs(-3), 3);"),
    );
    repo.commit("fix abs");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    assert_eq!(g.report()["bite"]["tests"][0]["id"], "npm-test (whole run)");

    // A check that passes either way: inert.
    repo.write(
        "test/abs2.check.js",
        &check("assert.strictEqual(abs(3), 3);"),
    );
    repo.write(
        "calc.js",
        &CALC
            .replace("x < 0 ? x : x", "x < 0 ? -x : x")
            .replace("return a + b;", "return b + a;"),
    );
    repo.commit("reorder add, with an inert check");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "no-bite", "{}", g.explain());
}
