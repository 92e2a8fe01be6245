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

/// A crate with registry dependencies (memchr, and anyhow, which has a build script; at the versions vouch
/// itself builds with, so cargo has them offline) and a binary that its integration test runs, saying
/// whether clippy compiled it.
fn finder() -> Repo {
    Repo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"finder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nanyhow = \"=1.0.105\"\nmemchr = \"=2.8.3\"\n",
        ),
        (".gitignore", "/target\n"),
        (
            "src/lib.rs",
            "/// Where `needle` first occurs in `haystack`.\n\
             pub fn find(haystack: &[u8], needle: u8) -> Option<usize> {\n    \
             memchr::memrchr(needle, haystack)\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    if cfg!(clippy) {\n        println!(\"clippy\");\n    } else {\n        \
             println!(\"plain\");\n    }\n}\n",
        ),
        (
            "tests/bin.rs",
            "#[test]\nfn the_binary_is_the_plain_build() {\n    \
             std::thread::sleep(std::time::Duration::from_secs(2));\n    \
             let out = std::process::Command::new(env!(\"CARGO_BIN_EXE_finder\"))\n        \
             .output()\n        .unwrap();\n    \
             assert_eq!(String::from_utf8_lossy(&out.stdout), \"plain\\n\");\n}\n",
        ),
    ])
}

/// Commits a fix of [`finder`]'s library (each `(from, to)` replaced) with a test that it finds the first
/// occurrence.
fn commit_fix(repo: &Repo, replace: &[(&str, &str)], message: &str) {
    let lib = std::fs::read_to_string(repo.dir.join("src/lib.rs")).unwrap();
    let fixed = replace
        .iter()
        .fold(lib, |text, (from, to)| text.replace(from, to));
    repo.write("src/lib.rs", &fixed);
    repo.write(
        "tests/first.rs",
        "#[test]\nfn finds_the_first() {\n    assert_eq!(finder::find(b\"abca\", b'a'), Some(0));\n}\n",
    );
    repo.commit(message);
}

/// The files under `dir` whose name starts with `prefix` and ends with `suffix`, recursively.
fn files_named(dir: &std::path::Path, prefix: &str, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            out.extend(files_named(&p, prefix, suffix));
        } else if name.starts_with(prefix) && name.ends_with(suffix) {
            out.push(p);
        }
    }
    out
}

#[test]
fn clippy_reuses_the_builds_dependencies_and_the_tests_run_the_plain_binary() {
    use std::os::unix::fs::MetadataExt;
    let repo = finder();
    commit_fix(&repo, &[("memrchr", "memchr")], "find the first occurrence");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "pass", "{}", g.explain());
    // Integration tests ran the build's binary while clippy built its own beside them.
    assert_eq!(g.step("test")["status"], "pass", "{}", g.explain());
    let command = g.step("clippy")["command"].as_str().unwrap_or_default();
    assert!(
        command.starts_with("RUSTC_WORKSPACE_WRAPPER=clippy-driver cargo build --all-targets"),
        "{command}"
    );
    // The trusted cache's clippy target directory holds the build's memchr and anyhow, the same files: no
    // dependency was compiled again, not even one with a build script (whose run cargo judges by
    // modification times); and the change's own build layers compiled neither again.
    let deps = |name: &str| files_named(&repo.cache, name, ".rlib");
    let rlibs = |dir: &str| -> Vec<u64> {
        ["libmemchr-", "libanyhow-"]
            .iter()
            .flat_map(|name| deps(name))
            .filter(|p| {
                p.parent()
                    .is_some_and(|d| d.ends_with(format!("base.cache/{dir}/debug/deps")))
            })
            .map(|p| std::fs::metadata(p).unwrap().ino())
            .collect()
    };
    let rebuilt: Vec<_> = ["libmemchr-", "libanyhow-"]
        .iter()
        .flat_map(|name| deps(name))
        .filter(|p| p.components().any(|c| c.as_os_str() == "layers"))
        .collect();
    assert_eq!(rebuilt, Vec::<std::path::PathBuf>::new());
    let (built, linted) = (rlibs("target"), rlibs("target-lint"));
    assert_eq!(
        built.len(),
        2,
        "{:?}",
        files_named(&repo.cache, "lib", ".rlib")
    );
    assert_eq!(linted, built);
}

#[test]
fn clippy_run_on_the_build_still_finds_a_new_warning() {
    let repo = finder();
    // `return` at the end of a function: clippy's needless_return, a warning rustc does not give.
    commit_fix(
        &repo,
        &[(
            "    memchr::memrchr(needle, haystack)\n",
            "    return memchr::memchr(needle, haystack);\n",
        )],
        "find the first occurrence, with a needless return",
    );
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("clippy")["status"], "fail", "{}", g.explain());
    assert!(
        g.step("clippy")["note"]
            .as_str()
            .unwrap_or_default()
            .contains("needless_return"),
        "{}",
        g.explain()
    );
    assert_eq!(g.step("test")["status"], "pass", "{}", g.explain());
}

#[test]
fn crates_missing_from_cargos_cache_are_fetched_before_the_offline_steps() {
    // A fresh cargo home holds no crate: the steps run offline, so without a fetch every cargo step failed
    // ("no matching package named `memchr` found") and a correct fix got `fail`.
    let repo = finder();
    let home = repo.tmp.path().join("cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    // A committed lock file, as fd has: the rooms remember the lock of their last fetch.
    let locked = std::process::Command::new("cargo")
        .args(["generate-lockfile", "--quiet"])
        .current_dir(&repo.dir)
        .env("CARGO_HOME", repo.tmp.path().join("cargo-home-lock"))
        .output()
        .unwrap();
    assert!(locked.status.success(), "{locked:?}");
    commit_fix(&repo, &[("memrchr", "memchr")], "find the first occurrence");
    let home_s = home.to_string_lossy().into_owned();
    let g = repo.gate_env(&["--base", "HEAD~1"], &[("CARGO_HOME", &home_s)]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("test")["status"], "pass", "{}", g.explain());
    assert!(
        !files_named(&home.join("registry"), "memchr-2.8.3", ".crate").is_empty(),
        "memchr was not downloaded into the cargo home"
    );
    // The second gate finds everything in the cache and says the same.
    let again = repo.gate_env(&["--base", "HEAD~1"], &[("CARGO_HOME", &home_s)]);
    assert_eq!(again.verdict(), "pass", "{}", again.explain());
    // Another empty cargo home, with the rooms of the first: the rooms' record of the last fetch must not
    // pass for crates the new home lacks (on fd, every step failed offline and the fix got `fail`).
    let other = repo.tmp.path().join("cargo-home-2");
    std::fs::create_dir_all(&other).unwrap();
    let other_s = other.to_string_lossy().into_owned();
    let moved = repo.gate_env(&["--base", "HEAD~1"], &[("CARGO_HOME", &other_s)]);
    assert_eq!(moved.verdict(), "pass", "{}", moved.explain());
    assert!(
        !files_named(&other.join("registry"), "memchr-2.8.3", ".crate").is_empty(),
        "memchr was not downloaded into the second cargo home"
    );
}

#[test]
fn a_change_that_adds_a_production_file_beside_its_fix_is_judged_hunk_by_hunk() {
    // The per-hunk check reverts each production hunk alone; reverting an added file took it out of base's
    // tree, which does not have it, and git refused: exit 3 on every change that adds a file (a module, a
    // committed Cargo.lock) beside another production change.
    let repo = krate();
    repo.write("src/lib.rs", &format!("pub mod sign;\n\n{}", fixed()));
    repo.write(
        "src/sign.rs",
        "/// Whether `x` is below zero.\npub fn negative(x: i64) -> bool {\n    x < 0\n}\n",
    );
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, and a sign module");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.run.code, 0, "{}", g.explain());
    assert_eq!(
        (g.verdict(), g.report()["bite"]["status"].as_str()),
        ("pass", Some("bites")),
        "{}",
        g.explain()
    );
    let hunks = serde_json::to_string(&g.report()["bite"]["hunks"]).unwrap();
    assert!(hunks.contains("src/sign.rs"), "{hunks}");
}

#[test]
fn a_dependency_that_cannot_be_fetched_is_an_error_not_the_changes_failure() {
    let repo = krate();
    let toml = format!("{CARGO_TOML}vouch-no-such-crate-4f1c = \"1\"\n");
    repo.write("Cargo.toml", &toml);
    repo.write("src/lib.rs", &fixed());
    repo.write("tests/abs.rs", ABS_TEST);
    repo.commit("fix abs, with a dependency that does not exist");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "error", "{}", g.explain());
    assert_eq!(g.run.code, 3, "{}", g.explain());
    let why = serde_json::to_string(&g.report()["steps"]).unwrap();
    assert!(
        why.contains("the dependencies could not be fetched")
            && why.contains("vouch-no-such-crate-4f1c"),
        "{}",
        g.explain()
    );
}
