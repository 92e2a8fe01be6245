//! The comparison on short excerpts of real workflows (named in each test) against the shipped presets.

use super::*;
use crate::gate::ci::workflow::{parse, Format};

fn diffs(workflow: &str, preset: &str, facts: &RepoFacts) -> Vec<(String, Kind)> {
    let jobs = parse(".github/workflows/ci.yml", workflow, Format::Github).unwrap_or_default();
    let profile = Profile::preset(preset).unwrap_or_else(|e| panic!("{e}"));
    compare(&jobs, &profile, facts)
        .differences
        .into_iter()
        .map(|d| (d.job, d.kind))
        .collect()
}

fn package() -> RepoFacts {
    RepoFacts {
        root_package: Some("ripgrep".into()),
        ..RepoFacts::default()
    }
}

#[test]
fn ripgrep_tests_features_and_the_workspace_the_rust_preset_does_not() {
    let wf = r#"
jobs:
  test:
    env:
      CARGO: cargo
      TARGET_FLAGS:
    strategy:
      matrix:
        include:
        - build: pinned
          rust: 1.96.0
        - build: stable
          rust: stable
        - build: nightly
          rust: nightly
    steps:
    - uses: dtolnay/rust-toolchain@master
      with:
        toolchain: ${{ matrix.rust }}
    - run: ${{ env.CARGO }} test --verbose --workspace --features pcre2 ${{ env.TARGET_FLAGS }}
    - run: ci/test-complete
  rustfmt:
    steps:
    - run: cargo fmt --all --check
  docs:
    steps:
      - env:
          RUSTDOCFLAGS: -D warnings
        run: cargo doc --no-deps --document-private-items --workspace
"#;
    assert_eq!(
        diffs(wf, "rust", &package()),
        vec![
            (
                "docs".into(),
                Kind::Env {
                    var: "RUSTDOCFLAGS".into(),
                    value: "-D warnings".into()
                }
            ),
            (
                "docs".into(),
                Kind::MissingCheck {
                    tool: "cargo doc".into()
                }
            ),
            (
                "test".into(),
                Kind::Features {
                    features: vec!["pcre2".into()]
                }
            ),
            ("test".into(), Kind::Workspace),
            (
                "test".into(),
                Kind::Toolchains {
                    toolchains: vec!["1.96.0".into(), "nightly".into()]
                }
            ),
            ("test".into(), Kind::NotCompared),
        ]
    );
}

#[test]
fn a_virtual_workspace_needs_no_workspace_flag() {
    let wf = "jobs:\n  t:\n    steps:\n    - run: cargo test --workspace\n";
    let facts = RepoFacts {
        virtual_workspace: true,
        ..RepoFacts::default()
    };
    assert_eq!(diffs(wf, "rust", &facts), vec![]);
    assert_eq!(
        diffs(wf, "rust", &package()),
        vec![("t".into(), Kind::Workspace)]
    );
}

#[test]
fn fd_clippy_with_all_features_and_deny_warnings_is_narrower_only_in_features() {
    // The rust preset's clippy step fails on warnings already: `-Dwarnings` is no difference.
    let wf = "jobs:\n  lint_check:\n    steps:\n    - run: cargo clippy --all-targets --all-features -- -Dwarnings -W clippy::pedantic\n";
    assert_eq!(
        diffs(wf, "rust", &package()),
        vec![
            ("lint_check".into(), Kind::AllFeatures),
            (
                "lint_check".into(),
                Kind::ClippyLints {
                    lints: vec!["-W clippy::pedantic".into()]
                }
            ),
        ]
    );
}

#[test]
fn bytes_rustflags_loom_and_nightly_jobs_are_seen() {
    let wf = r#"
env:
  RUSTFLAGS: -Dwarnings
  nightly: nightly-2024-09-15
jobs:
  loom:
    steps:
      - run: rustup update $nightly && rustup default $nightly
      - run: RUSTFLAGS="--cfg loom -Dwarnings" cargo test --lib
  minrust:
    steps:
      - run: cargo hack check --feature-powerset --optional-deps --rust-version
  panic-abort:
    steps:
      - run: ci/panic-abort.sh
"#;
    assert_eq!(
        diffs(wf, "rust", &RepoFacts::default()),
        vec![
            (
                "loom".into(),
                Kind::Toolchains {
                    toolchains: vec!["nightly-2024-09-15".into()]
                }
            ),
            (
                "loom".into(),
                Kind::Env {
                    var: "RUSTFLAGS".into(),
                    value: "--cfg loom -Dwarnings".into()
                }
            ),
            ("minrust".into(), Kind::FeatureCombinations),
            (
                "minrust".into(),
                Kind::Env {
                    var: "RUSTFLAGS".into(),
                    value: "-Dwarnings".into()
                }
            ),
            ("panic-abort".into(), Kind::NotCompared),
        ]
    );
}

#[test]
fn tracing_release_no_default_features_doc_tests_and_subdirectories() {
    let wf = r#"
jobs:
  test-features-stable:
    steps:
    - run: cargo nextest run --profile ci --all-features -p tracing-subscriber
    - run: cargo test --doc --all-features -p tracing-subscriber
    - run: cargo test --release
      working-directory: "tracing/test_static_max_level_features"
    - run: cargo test --no-default-features
"#;
    let got = diffs(wf, "rust", &RepoFacts::default());
    assert_eq!(
        got,
        vec![
            ("test-features-stable".into(), Kind::AllFeatures),
            ("test-features-stable".into(), Kind::NoDefaultFeatures),
            (
                "test-features-stable".into(),
                Kind::Package {
                    package: "tracing-subscriber".into()
                }
            ),
            (
                "test-features-stable".into(),
                Kind::Package {
                    package: "tracing/test_static_max_level_features".into()
                }
            ),
            ("test-features-stable".into(), Kind::Release),
        ]
    );
}

#[test]
fn bat_ignored_tests_and_msrv_features_from_env() {
    let wf = r#"
env:
  MSRV_FEATURES: --no-default-features --features minimal-application,bugreport
jobs:
  min_version:
    steps:
    - run: cargo test --locked ${{ env.MSRV_FEATURES }}
  test_with_new_syntaxes:
    steps:
    - run: cargo test --locked --release --test assets -- --ignored
"#;
    assert_eq!(
        diffs(wf, "rust", &RepoFacts::default()),
        vec![
            (
                "min_version".into(),
                Kind::Features {
                    features: vec!["bugreport".into(), "minimal-application".into()]
                }
            ),
            ("min_version".into(), Kind::NoDefaultFeatures),
            ("test_with_new_syntaxes".into(), Kind::Release),
            ("test_with_new_syntaxes".into(), Kind::IgnoredTests),
        ]
    );
}

#[test]
fn pflag_race_and_go_versions_and_toml_goarch() {
    let wf = r#"
jobs:
  test:
    strategy:
      matrix:
        go: ["1.21", "1.22", "1.23"]
    steps:
      - uses: actions/setup-go@v5
        with:
          go-version: ${{ matrix.go }}
      - run: go test -race -v ./...
      - run: GOARCH=386 go test ./...
  lint:
    steps:
      - uses: golangci/golangci-lint-action@v6
        with:
          version: v1.63.4
"#;
    assert_eq!(
        diffs(wf, "go", &RepoFacts::default()),
        vec![
            (
                "test".into(),
                Kind::Env {
                    var: "GOARCH".into(),
                    value: "386".into()
                }
            ),
            (
                "test".into(),
                Kind::Versions {
                    runtime: Runtime::Go,
                    versions: vec!["1.21".into(), "1.22".into(), "1.23".into()]
                }
            ),
            ("test".into(), Kind::GoRace),
        ]
    );
}

#[test]
fn marshmallow_tox_sessions_and_python_versions_are_reported_not_parsed() {
    let wf = r#"
jobs:
  mypy:
    steps:
      - run: python -m tox -e mypy-test
  tests:
    strategy:
      matrix:
        include:
          - { name: "3.9", python: "3.9", tox: py39 }
          - { name: "3.13", python: "3.13", tox: py313 }
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
      - run: python -m pip install tox
      - run: python -m tox -e ${{ matrix.tox }}
"#;
    let s = |v: &str| Kind::Sessions {
        tool: "tox".into(),
        sessions: vec![v.into()],
    };
    assert_eq!(
        diffs(wf, "python", &RepoFacts::default()),
        vec![
            ("mypy".into(), s("mypy-test")),
            (
                "tests".into(),
                Kind::Versions {
                    runtime: Runtime::Python,
                    versions: vec!["3.13".into(), "3.9".into()]
                }
            ),
            ("tests".into(), s("py313")),
            ("tests".into(), s("py39")),
        ]
    );
}

#[test]
fn pytest_paths_and_markers_count_but_verbosity_and_coverage_do_not() {
    let wf = "jobs:\n  t:\n    steps:\n      - run: |\n          pytest -v --cov=pkg -n auto -m 'not slow' tests/unit\n          mypy src\n          ruff check .\n";
    assert_eq!(
        diffs(wf, "python", &RepoFacts::default()),
        vec![
            (
                "t".into(),
                Kind::PytestArgs {
                    args: vec!["-m".into(), "not slow".into(), "tests/unit".into()]
                }
            ),
            (
                "t".into(),
                Kind::MissingCheck {
                    tool: "mypy".into()
                }
            ),
        ]
    );
}

#[test]
fn npm_scripts_the_gate_does_not_run_are_listed() {
    let wf = "jobs:\n  t:\n    steps:\n      - run: npm ci && npm run lint && npm test && npm run docs\n      - run: pnpm typecheck\n";
    // The node preset's `npm test` step covers `npm test`; lint and typecheck it does not run.
    assert_eq!(
        diffs(wf, "node", &RepoFacts::default()),
        vec![
            (
                "t".into(),
                Kind::Script {
                    runner: "npm".into(),
                    script: "lint".into()
                }
            ),
            (
                "t".into(),
                Kind::Script {
                    runner: "pnpm".into(),
                    script: "typecheck".into()
                }
            ),
        ]
    );
}

#[test]
fn a_profile_without_a_step_makes_the_check_missing() {
    let text = "name = \"mine\"\n[[steps]]\nname = \"t\"\nkind = \"test\"\nargv = [\"cargo\", \"test\", \"--workspace\", \"--all-features\"]\n";
    let profile = Profile::from_toml(text, "test").unwrap_or_else(|e| panic!("{e}"));
    let wf = "jobs:\n  a:\n    steps:\n    - run: cargo test --workspace --all-features && cargo clippy -- -D warnings && make test\n";
    let jobs = parse("ci.yml", wf, Format::Github).unwrap_or_default();
    let out = compare(&jobs, &profile, &RepoFacts::default());
    let kinds: Vec<Kind> = out.differences.iter().map(|d| d.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            Kind::MissingCheck {
                tool: "cargo clippy".into()
            },
            Kind::NotCompared
        ]
    );
    assert_eq!(out.differences[1].command.as_deref(), Some("make test"));
    assert_eq!((out.commands, out.compared), (3, 3));
}

#[test]
fn a_non_stable_toolchain_file_is_reported_once() {
    let facts = RepoFacts {
        toolchain_file: Some(("rust-toolchain.toml".into(), "1.70".into())),
        ..RepoFacts::default()
    };
    let wf = "jobs:\n  a:\n    steps:\n    - run: cargo test\n";
    assert_eq!(
        diffs(wf, "rust", &facts),
        vec![(
            "-".into(),
            Kind::ToolchainFile {
                channel: "1.70".into()
            }
        )]
    );
}
