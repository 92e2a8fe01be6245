//! Cargo commands compared with the profile's cargo steps: features, workspace and packages, release, doc
//! and ignored tests, clippy lints, toolchains and `RUSTFLAGS`.

use std::collections::BTreeSet;

use super::{is_stable, Collector, Family, GateStep, Seen};
use crate::gate::ci::Kind;

/// Cargo's subcommand families and the profile subcommands that cover them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cargo {
    Test,
    Build,
    Clippy,
    Fmt,
    Doc,
}

impl Cargo {
    fn covered_by(self) -> &'static [&'static str] {
        match self {
            Cargo::Test => &["test", "nextest"],
            Cargo::Build => &["build", "check"],
            Cargo::Clippy => &["clippy"],
            Cargo::Fmt => &["fmt"],
            Cargo::Doc => &["doc", "rustdoc"],
        }
    }
}

/// Cargo subcommands that are checks of their own.
const CARGO_CHECKS: &[&str] = &[
    "miri",
    "minimal-versions",
    "udeps",
    "deny",
    "audit",
    "semver-checks",
    "msrv",
    "careful",
];

/// The flags of a cargo command that widen what it checks.
#[derive(Default)]
struct CargoFlags {
    all_features: bool,
    features: BTreeSet<String>,
    no_default: bool,
    workspace: bool,
    packages: Vec<String>,
    release: bool,
    doc: bool,
    /// Selects targets (`--lib`, `--tests`, ...): doc tests then do not run.
    targets: bool,
    nextest: bool,
    ignored: bool,
    /// Lints set after `--` (`-D warnings` as ("D", "warnings")).
    lints: Vec<(String, String)>,
    powerset: bool,
}

fn cargo_flags(args: &[String]) -> CargoFlags {
    let mut f = CargoFlags::default();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (pre, post) = (&args[..split], args.get(split + 1..).unwrap_or_default());
    let mut i = 0;
    let value = |i: &mut usize, a: &str, long: &str, short: Option<&str>| -> Option<String> {
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            return Some(v.to_owned());
        }
        if a == long || short == Some(a) {
            *i += 1;
            return pre.get(*i).cloned();
        }
        if let Some(s) = short {
            if let Some(v) = a
                .strip_prefix(s)
                .filter(|v| !v.is_empty() && !a.starts_with("--"))
            {
                return Some(v.to_owned());
            }
        }
        None
    };
    while i < pre.len() {
        let a = pre[i].as_str();
        match a {
            "--all-features" => f.all_features = true,
            "--no-default-features" => f.no_default = true,
            "--workspace" | "--all" => f.workspace = true,
            "--release" => f.release = true,
            "--doc" => f.doc = true,
            "--lib" | "--tests" | "--bins" | "--examples" | "--benches" | "--test" | "--bin"
            | "--example" | "--bench" => f.targets = true,
            "--feature-powerset" | "--each-feature" => f.powerset = true,
            _ => {
                if let Some(v) = value(&mut i, a, "--features", Some("-F")) {
                    f.features.extend(
                        v.split([',', ' '])
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned),
                    );
                } else if let Some(v) = value(&mut i, a, "--package", Some("-p")) {
                    f.packages.push(v);
                } else if let Some(v) = value(&mut i, a, "--manifest-path", None) {
                    let dir = v.trim_end_matches("Cargo.toml").trim_end_matches('/');
                    if !dir.is_empty() && dir != "." {
                        f.packages.push(dir.to_owned());
                    }
                }
            }
        }
        i += 1;
    }
    let mut j = 0;
    while j < post.len() {
        let a = post[j].as_str();
        if a == "--ignored" || a == "--include-ignored" {
            f.ignored = true;
        }
        let level = match a {
            "-D" | "--deny" => Some("D"),
            "-W" | "--warn" => Some("W"),
            "-F" | "--forbid" => Some("F"),
            _ => None,
        };
        if let Some(level) = level {
            if let Some(lint) = post.get(j + 1) {
                f.lints.push((level.to_owned(), lint.clone()));
                j += 1;
            }
        } else {
            for (prefix, level) in [
                ("-D", "D"),
                ("-W", "W"),
                ("-F", "F"),
                ("--deny=", "D"),
                ("--warn=", "W"),
            ] {
                if let Some(lint) = a.strip_prefix(prefix).filter(|l| !l.is_empty()) {
                    f.lints.push((level.to_owned(), lint.to_owned()));
                }
            }
        }
        j += 1;
    }
    f
}

impl<'a> Collector<'a> {
    pub(super) fn cargo(&mut self, seen: &Seen, argv: &[String]) -> Family {
        let mut idx = 1;
        let mut toolchain = seen.toolchain.map(str::to_owned);
        if let Some(t) = argv.get(1).and_then(|a| a.strip_prefix('+')) {
            toolchain = Some(t.to_owned());
            idx = 2;
        }
        let Some(sub) = argv.get(idx).map(String::as_str) else {
            return Family::Ignored;
        };
        let mut args = &argv[(idx + 1).min(argv.len())..];
        let family = match sub {
            "test" => Cargo::Test,
            "nextest" if args.first().is_some_and(|a| a == "run") => {
                args = &args[1..];
                Cargo::Test
            }
            "build" | "check" => Cargo::Build,
            "clippy" => Cargo::Clippy,
            "fmt" if args.iter().any(|a| a == "--check") => Cargo::Fmt,
            "doc" | "rustdoc" => Cargo::Doc,
            "hack" => {
                let flags = cargo_flags(args);
                if flags.powerset {
                    let step = self
                        .steps_for("cargo", &["hack"])
                        .first()
                        .map(|s| s.name.clone());
                    if step.is_none() {
                        self.report(seen, None, Kind::FeatureCombinations);
                    }
                    self.rust_env(seen, None, false);
                    self.note_toolchain(seen, toolchain);
                    return Family::Compared;
                }
                // `cargo hack check --rust-version`: the inner command, compared as such.
                let inner: Vec<String> = ["cargo".to_owned()]
                    .into_iter()
                    .chain(args.iter().cloned())
                    .collect();
                return self.cargo(seen, &inner);
            }
            s if CARGO_CHECKS.contains(&s) => {
                if self.steps_for("cargo", &[s]).is_empty() {
                    self.report(
                        seen,
                        None,
                        Kind::MissingCheck {
                            tool: format!("cargo {s}"),
                        },
                    );
                }
                self.note_toolchain(seen, toolchain);
                return Family::Compared;
            }
            _ => return Family::Ignored,
        };
        self.note_toolchain(seen, toolchain);
        let mut steps = self.steps_for("cargo", family.covered_by());
        if steps.is_empty() && family == Cargo::Build {
            steps = self.steps_for("cargo", Cargo::Test.covered_by());
        }
        let Some(&step) = steps.first() else {
            let tool = match family {
                Cargo::Test => "cargo test",
                Cargo::Build => "cargo build",
                Cargo::Clippy => "cargo clippy",
                Cargo::Fmt => "cargo fmt --check",
                Cargo::Doc => "cargo doc",
            };
            self.report(
                seen,
                None,
                Kind::MissingCheck {
                    tool: tool.to_owned(),
                },
            );
            self.rust_env(seen, None, family == Cargo::Doc || family == Cargo::Test);
            return Family::Compared;
        };
        let step_name = step.name.clone();
        let ci = cargo_flags(args);
        let gate = {
            let mut g = CargoFlags::default();
            for s in &steps {
                let sub_at = s
                    .argv
                    .iter()
                    .position(|a| family.covered_by().contains(&a.as_str()))
                    .unwrap_or(0);
                let sf = cargo_flags(s.argv.get(sub_at + 1..).unwrap_or_default());
                g.all_features |= sf.all_features;
                g.features.extend(sf.features);
                g.no_default |= sf.no_default;
                g.workspace |= sf.workspace;
                g.packages.extend(sf.packages);
                g.release |= sf.release;
                g.targets |= sf.targets;
                g.nextest |= s.argv.iter().any(|a| a == "nextest");
                g.ignored |= sf.ignored;
                g.lints.extend(sf.lints);
            }
            g
        };
        let fail_on_warnings = steps.iter().any(|s| s.fail_on_warnings);
        let gstep = steps.first().copied();
        let mut kinds = Vec::new();
        if family != Cargo::Fmt {
            if ci.all_features && !gate.all_features {
                kinds.push(Kind::AllFeatures);
            }
            let missing: Vec<String> = ci.features.difference(&gate.features).cloned().collect();
            if !missing.is_empty() && !gate.all_features {
                kinds.push(Kind::Features { features: missing });
            }
            if ci.no_default && !gate.no_default {
                kinds.push(Kind::NoDefaultFeatures);
            }
            let covers_all = gate.workspace || self.facts.virtual_workspace;
            if ci.workspace && !covers_all {
                kinds.push(Kind::Workspace);
            }
            let mut packages = ci.packages.clone();
            if let Some(dir) = &seen.cmd.dir {
                packages.push(dir.clone());
            }
            for p in packages {
                if !covers_all
                    && self.facts.root_package.as_ref() != Some(&p)
                    && !gate.packages.contains(&p)
                {
                    kinds.push(Kind::Package { package: p });
                }
            }
            if ci.release && !gate.release {
                kinds.push(Kind::Release);
            }
        }
        if family == Cargo::Test {
            if ci.doc && (gate.nextest || gate.targets) {
                kinds.push(Kind::DocTests);
            }
            if ci.ignored && !gate.ignored {
                kinds.push(Kind::IgnoredTests);
            }
        }
        if family == Cargo::Clippy {
            let mut lints = Vec::new();
            for (level, lint) in &ci.lints {
                if lint == "warnings" {
                    if level != "W"
                        && !fail_on_warnings
                        && !gate.lints.iter().any(|(_, l)| l == "warnings")
                    {
                        kinds.push(Kind::ClippyDenyWarnings);
                    }
                } else if !gate.lints.iter().any(|(l, g)| l == level && g == lint) {
                    lints.push(format!("-{level} {lint}"));
                }
            }
            if !lints.is_empty() {
                kinds.push(Kind::ClippyLints { lints });
            }
        }
        for kind in kinds {
            self.add(
                &seen.job.file,
                &seen.job.name,
                Some(seen.cmd.text()),
                Some(step_name.clone()),
                kind,
            );
        }
        if family != Cargo::Fmt {
            self.rust_env(seen, gstep, family == Cargo::Doc || family == Cargo::Test);
        }
        Family::Compared
    }

    fn note_toolchain(&mut self, seen: &Seen, toolchain: Option<String>) {
        if let Some(t) = toolchain.filter(|t| !is_stable(t)) {
            self.toolchains
                .entry((seen.job.file.clone(), seen.job.name.clone()))
                .or_default()
                .insert(t);
        }
    }

    fn rust_env(&mut self, seen: &Seen, step: Option<&GateStep>, rustdoc: bool) {
        let vars: &[&str] = if rustdoc {
            &["RUSTFLAGS", "RUSTDOCFLAGS"]
        } else {
            &["RUSTFLAGS"]
        };
        self.env(seen, step, vars);
    }
}
