//! `vouch gate` on a Rust crate: cargo fmt, clippy, build, test.

use crate::util::Repo;

const CARGO_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const LIB: &str = "/// Adds two numbers.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        x\n    } else {\n        x\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n}\n";
const API_TEST: &str = "#[test]\nfn add_is_public() {\n    assert_eq!(calc::add(1, 1), 2);\n}\n";
const ABS_TEST: &str =
    "#[test]\nfn abs_of_negative_is_positive() {\n    assert_eq!(calc::abs(-3), 3);\n}\n";

fn fixed() -> String {
    LIB.replace(
        "    if x < 0 {\n        x\n",
        "    if x < 0 {\n        -x\n",
    )
}

fn krate() -> Repo {
    Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", LIB),
        ("tests/api.rs", API_TEST),
    ])
}

#[test]
fn a_correct_rust_fix_with_its_test_passes() {
    let repo = krate();
    repo.write("src/lib.rs", &fixed());
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs");
    let before = repo.snapshot();
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["profile"]["name"], "rust");
    for step in ["fmt", "clippy", "build", "test"] {
        assert_eq!(g.step(step)["status"], "pass", "{step}: {}", g.explain());
    }
    assert_eq!(g.step("test")["tests"]["passed"], 3, "{}", g.explain());
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn a_rustfmt_violation_fails_naming_the_file() {
    let repo = krate();
    repo.write(
        "src/lib.rs",
        &fixed().replace("    a + b\n", "         a+b\n"),
    );
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, badly formatted");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("fmt")["status"], "fail");
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("fmt") && r.contains("src/lib.rs")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_clippy_warning_on_a_clippy_clean_base_fails_the_gate() {
    // LIB's bug is one clippy sees (`if_same_then_else`); this base's is not, so clippy passes at base and the
    // change is held to every warning.
    let clean = LIB.replace(
        "    if x < 0 {\n        x\n",
        "    if x < -5 {\n        -x\n",
    );
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", &clean),
        ("tests/api.rs", API_TEST),
    ]);
    repo.write(
        "src/lib.rs",
        &fixed().replace("    a + b\n", "    let sum = a + b;\n    return sum;\n"),
    );
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs with needless return");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "fail");
    assert!(
        g.step("clippy")["log_tail"]
            .as_str()
            .unwrap()
            .contains("needless_return"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_new_failing_rust_test_is_blamed_and_an_old_one_is_not() {
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", LIB),
        ("tests/api.rs", API_TEST),
        (
            "tests/legacy.rs",
            "#[test]\nfn legacy_is_broken() {\n    assert_eq!(1 + 1, 3);\n}\n",
        ),
    ]);
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("a test for abs, without the fix");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        g.tests("new_failures"),
        vec!["abs@tests/abs.rs::abs_of_negative_is_positive".to_string()]
    );
    assert_eq!(
        g.tests("preexisting_failures"),
        vec!["legacy@tests/legacy.rs::legacy_is_broken".to_string()]
    );
}
