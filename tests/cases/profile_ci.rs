//! `vouch profile --ci`: the real binary on a fixture repository with a GitHub workflow.

use serde_json::json;

use crate::util::Repo;

const CARGO_TOML: &str = "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";

const WORKFLOW: &str = r#"name: ci
on:
  pull_request:
  push:
    branches: [main]
env:
  RUSTFLAGS: -Dwarnings
jobs:
  test:
    strategy:
      matrix:
        rust: [stable, nightly]
    steps:
      - uses: actions/checkout@v4
      - uses: dtolnay/rust-toolchain@master
        with:
          toolchain: ${{ matrix.rust }}
      - run: |
          cargo test --workspace \
            --features serde
          make check
  lint:
    steps:
      - run: cargo clippy --all-targets -- -D warnings -W clippy::pedantic
      - run: cargo fmt --all --check
"#;

fn ci(repo: &Repo, extra: &[&str]) -> (crate::util::Run, serde_json::Value) {
    let json = repo.tmp.path().join("ci.json");
    let dir = repo.dir.to_string_lossy().into_owned();
    let json_s = json.to_string_lossy().into_owned();
    let mut args = vec!["profile", "--repo", &dir, "--ci", "--json", &json_s];
    args.extend_from_slice(extra);
    let run = repo.vouch(&args);
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (run, report)
}

#[test]
fn profile_ci_reports_what_the_workflow_checks_that_the_rust_preset_does_not() {
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", "pub fn f() {}\n"),
        (".github/workflows/ci.yml", WORKFLOW),
    ]);
    let (run, report) = ci(&repo, &[]);
    let file = ".github/workflows/ci.yml";
    let cmd = "cargo test --workspace --features serde";
    assert_eq!(
        report["differences"],
        json!([
            {"file": file, "job": "lint", "command": "cargo clippy --all-targets -- -D warnings -W clippy::pedantic",
             "gate_step": "clippy", "kind": "clippy_lints", "lints": ["-W clippy::pedantic"]},
            {"file": file, "job": "lint", "command": "cargo clippy --all-targets -- -D warnings -W clippy::pedantic",
             "gate_step": "clippy", "kind": "env", "var": "RUSTFLAGS", "value": "-Dwarnings"},
            {"file": file, "job": "test", "command": cmd, "gate_step": "test", "kind": "features", "features": ["serde"]},
            {"file": file, "job": "test", "command": cmd, "gate_step": "test", "kind": "workspace"},
            {"file": file, "job": "test", "command": null, "gate_step": null, "kind": "toolchains", "toolchains": ["nightly"]},
            {"file": file, "job": "test", "command": cmd, "gate_step": "test", "kind": "env", "var": "RUSTFLAGS", "value": "-Dwarnings"},
            {"file": file, "job": "test", "command": "make check", "gate_step": null, "kind": "not_compared"},
        ])
    );
    assert_eq!(report["profile"], "rust");
    assert_eq!(report["files"], json!([file]));
    assert!(
        run.stdout.contains("The gate is narrower than CI here:"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(".github/workflows/ci.yml (test): CI runs `make check`, not compared"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout
            .lines()
            .filter(|l| l.starts_with("  .github"))
            .count(),
        7,
        "{}",
        run.stdout
    );
}

#[test]
fn profile_ci_compares_the_repositorys_own_profile_and_finds_it_covers_ci() {
    let own = r#"name = "own"
env = { RUSTFLAGS = "-Dwarnings" }
[[steps]]
name = "test"
kind = "test"
argv = ["cargo", "test", "--workspace", "--all-features"]
"#;
    let workflow = "on: [push]\nenv:\n  RUSTFLAGS: -Dwarnings\njobs:\n  t:\n    steps:\n      - run: cargo test --workspace --features serde\n";
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".vouch/gate.toml", own),
        (".github/workflows/ci.yml", workflow),
    ]);
    let (run, report) = ci(&repo, &[]);
    assert_eq!(report["profile"], "own");
    assert_eq!(report["differences"], json!([]));
    assert_eq!(
        (report["commands"].clone(), report["compared"].clone()),
        (json!(1), json!(1))
    );
    assert!(
        run.stdout.contains("The gate covers every check CI runs"),
        "{}",
        run.stdout
    );
    // The same CI against the shipped preset (`--name`) is narrower.
    let (_, preset) = ci(&repo, &["--name", "rust"]);
    let kinds: Vec<&str> = preset["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["features", "workspace", "env"]);
}

#[test]
fn plain_profile_output_is_unchanged_by_a_workflow() {
    let repo = Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        (".github/workflows/ci.yml", WORKFLOW),
    ]);
    let dir = repo.dir.to_string_lossy().into_owned();
    let run = repo.vouch(&["profile", "--repo", &dir]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("# detected: preset `rust`"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("narrower"), "{}", run.stdout);
}
