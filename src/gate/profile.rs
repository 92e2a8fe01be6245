//! Gate profiles: which paths are tests, production, generated or docs, and which steps judge a change.
//!
//! A profile is TOML (fields documented in the README). Presets for Rust, Go, Python and Node ship in `gates/`
//! and are compiled into the binary. The profile that judges a change is `--profile`, else the repository's own
//! `.vouch/gate.toml` *as of base* (so a change cannot loosen its own gate), else the preset whose marker file
//! (Cargo.toml, go.mod, ...) the base tree has at its root.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::error::VouchError;
use crate::gate::results::Runner;

/// The presets compiled into the binary, by name.
pub const PRESETS: &[(&str, &str)] = &[
    ("rust", include_str!("../../gates/rust.toml")),
    ("go", include_str!("../../gates/go.toml")),
    ("python", include_str!("../../gates/python.toml")),
    ("node", include_str!("../../gates/node.toml")),
];

/// Where a repository's own profile lives.
pub const REPO_PROFILE: &str = ".vouch/gate.toml";

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Marker files at the repository root that select this profile when none is given.
    #[serde(default)]
    pub detect: Vec<String>,
    #[serde(default)]
    pub paths: Paths,
    #[serde(default)]
    pub room: RoomConfig,
    /// Environment for every step (a step's own `env` wins).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub bite: BitePolicy,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// Path patterns. A pattern without `/` matches a file name anywhere; one ending in `/` matches a directory
/// anywhere; any other is a glob on the whole path from the repository root (`**` crosses directories).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    #[serde(default)]
    pub test: Vec<String>,
    /// Production code; empty means every path that is not test, generated or docs.
    #[serde(default)]
    pub production: Vec<String>,
    #[serde(default)]
    pub generated: Vec<String>,
    #[serde(default)]
    pub docs: Vec<String>,
    /// If not empty, a change may only touch paths matching one of these.
    #[serde(default)]
    pub allow: Vec<String>,
    /// A change may not touch paths matching any of these.
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoomConfig {
    /// Top-level paths kept between runs of a reused room (build output that is not in the cache).
    #[serde(default)]
    pub preserve: Vec<String>,
}

/// What the bite check requires (used by the bite step).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BitePolicy {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub require: BiteRequire,
    #[serde(default)]
    pub build_failure: BuildFailure,
    /// Per-test timeout for the reverted run.
    #[serde(default)]
    pub timeout: Option<String>,
}

impl Default for BitePolicy {
    fn default() -> Self {
        BitePolicy {
            enabled: true,
            require: BiteRequire::Any,
            build_failure: BuildFailure::Accept,
            timeout: None,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BiteRequire {
    #[default]
    Any,
    All,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BuildFailure {
    #[default]
    Accept,
    Reject,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Format,
    Vet,
    Lint,
    Build,
    Test,
    Codegen,
    Custom,
}

impl StepKind {
    /// Checks that read the tree and can run side by side.
    pub fn parallel(self) -> bool {
        matches!(self, StepKind::Format | StepKind::Vet | StepKind::Lint)
    }

    fn default_timeout(self) -> Duration {
        let mins = match self {
            StepKind::Format => 5,
            StepKind::Vet | StepKind::Lint | StepKind::Codegen | StepKind::Custom => 10,
            StepKind::Build => 20,
            StepKind::Test => 30,
        };
        Duration::from_secs(mins * 60)
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    pub kind: StepKind,
    /// The command as an argument vector (no shell). Placeholders: `{room}`, `{cache}`, `{junit}`.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    /// A shell command line (run with `sh -c`), instead of `argv`.
    #[serde(default)]
    pub shell: Option<String>,
    /// `90s`, `10m`, `1h`; defaults by kind (format 5m, build 20m, test 30m, others 10m).
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A missing required tool is an error; a missing optional one skips the step with a note.
    #[serde(default = "yes")]
    pub required: bool,
    /// How to install the tool, shown when it is missing.
    #[serde(default)]
    pub install: Option<String>,
    /// A command that succeeds only when the tool is usable (default: the program is on PATH).
    #[serde(default)]
    pub probe: Option<Vec<String>>,
    /// Fail when the command prints anything on stdout (like `gofmt -l`), even if it exits 0.
    #[serde(default)]
    pub fail_if_output: bool,
    /// Run only if one of these files exists in the tree (else skipped with a note).
    #[serde(default)]
    pub if_exists: Vec<String>,
    /// Run only if one of these files contains its text: `[["package.json", "\"vitest\""]]`.
    #[serde(default)]
    pub if_contains: Vec<[String; 2]>,
    /// Skip if any of these files contains its text.
    #[serde(default)]
    pub unless_contains: Vec<[String; 2]>,
    /// Test steps: how to read per-test results (cargo, go, pytest, node, generic).
    #[serde(default)]
    pub runner: Option<Runner>,
}

impl Step {
    pub fn timeout(&self) -> Result<Duration> {
        match &self.timeout {
            Some(t) => parse_duration(t)
                .with_context(|| format!("step `{}`: bad timeout `{t}`", self.name)),
            None => Ok(self.kind.default_timeout()),
        }
    }

    /// The argument vector, before placeholders are filled in.
    pub fn raw_argv(&self) -> Vec<String> {
        match (&self.argv, &self.shell) {
            (Some(argv), _) => argv.clone(),
            (None, Some(shell)) => vec!["sh".into(), "-c".into(), shell.clone()],
            (None, None) => Vec::new(),
        }
    }

    pub fn runner(&self) -> Runner {
        self.runner.unwrap_or(Runner::Generic)
    }
}

/// Parses `90s`, `10m`, `1h30m`, `2h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        anyhow::ensure!(secs > 0, "a duration must be positive");
        return Ok(Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut num = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().context("expected a number before the unit")?;
        num.clear();
        total += match c {
            's' => n,
            'm' => n * 60,
            'h' => n * 3600,
            _ => anyhow::bail!("unknown unit `{c}` (use s, m or h)"),
        };
    }
    anyhow::ensure!(num.is_empty(), "a number needs a unit (s, m or h)");
    anyhow::ensure!(total > 0, "a duration must be positive");
    Ok(Duration::from_secs(total))
}

impl Profile {
    /// Parses and checks a profile.
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile> {
        let profile: Profile = toml::from_str(text).map_err(|e| {
            VouchError::usage_hint(
                format!("invalid gate profile {origin}: {e}"),
                "see the README section \"Gate profiles\" for the fields",
            )
        })?;
        profile.validate(origin)?;
        Ok(profile)
    }

    fn validate(&self, origin: &str) -> Result<()> {
        let bad = |msg: String| -> anyhow::Error {
            VouchError::usage(format!("invalid gate profile {origin}: {msg}")).into()
        };
        let mut names = std::collections::BTreeSet::new();
        for step in &self.steps {
            if !names.insert(step.name.as_str()) {
                return Err(bad(format!("two steps are named `{}`", step.name)));
            }
            match (&step.argv, &step.shell) {
                (Some(_), Some(_)) => {
                    return Err(bad(format!("step `{}` has both argv and shell", step.name)))
                }
                (None, None) => {
                    return Err(bad(format!("step `{}` needs argv or shell", step.name)))
                }
                (Some(a), None) if a.is_empty() => {
                    return Err(bad(format!("step `{}` has an empty argv", step.name)))
                }
                _ => {}
            }
            step.timeout().map_err(|e| bad(format!("{e:#}")))?;
            if step.runner.is_some() && step.kind != StepKind::Test {
                return Err(bad(format!(
                    "step `{}` has a runner but is not kind = \"test\"",
                    step.name
                )));
            }
        }
        for (field, pats) in [
            ("test", &self.paths.test),
            ("production", &self.paths.production),
            ("generated", &self.paths.generated),
            ("docs", &self.paths.docs),
            ("allow", &self.paths.allow),
            ("deny", &self.paths.deny),
        ] {
            PathMatcher::new(pats).map_err(|e| bad(format!("paths.{field}: {e:#}")))?;
        }
        if let Some(t) = &self.bite.timeout {
            parse_duration(t).map_err(|e| bad(format!("bite.timeout: {e:#}")))?;
        }
        Ok(())
    }

    /// A shipped preset by name.
    pub fn preset(name: &str) -> Result<Profile> {
        let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            VouchError::usage_hint(
                format!("no preset named `{name}`"),
                format!(
                    "use one of {} or a path to a profile TOML file",
                    PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        Profile::from_toml(text, &format!("preset `{name}`"))
    }

    /// `--profile`: a preset name or a file.
    pub fn from_arg(arg: &str) -> Result<Profile> {
        let path = Path::new(arg);
        if arg.ends_with(".toml") || path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| VouchError::usage(format!("cannot read gate profile {arg}: {e}")))?;
            Profile::from_toml(&text, arg)
        } else {
            Profile::preset(arg)
        }
    }

    /// The preset whose marker files exist among `root_files` (file names at the repository root).
    pub fn detect(root_files: &[String]) -> Option<Profile> {
        PRESETS.iter().find_map(|(name, _)| {
            let p = Profile::preset(name).ok()?;
            p.detect
                .iter()
                .any(|m| root_files.iter().any(|f| f == m))
                .then_some(p)
        })
    }

    pub fn test_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.kind == StepKind::Test)
    }
}

/// Matches repository paths against profile patterns.
#[derive(Clone, Debug)]
pub struct PathMatcher {
    set: GlobSet,
    empty: bool,
}

impl PathMatcher {
    pub fn new(patterns: &[String]) -> Result<PathMatcher> {
        let mut b = GlobSetBuilder::new();
        for pat in patterns {
            for glob in expand_pattern(pat) {
                b.add(
                    GlobBuilder::new(&glob)
                        .literal_separator(true)
                        .build()
                        .with_context(|| format!("bad pattern `{pat}`"))?,
                );
            }
        }
        Ok(PathMatcher {
            set: b.build()?,
            empty: patterns.is_empty(),
        })
    }

    pub fn is_match(&self, path: &str) -> bool {
        !self.empty && self.set.is_match(path)
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }
}

fn expand_pattern(pat: &str) -> Vec<String> {
    let pat = pat.trim_start_matches("./");
    if let Some(dir) = pat.strip_suffix('/') {
        if dir.contains('/') {
            vec![format!("{dir}/**")]
        } else {
            vec![format!("{dir}/**"), format!("**/{dir}/**")]
        }
    } else if !pat.contains('/') {
        vec![pat.to_owned(), format!("**/{pat}")]
    } else {
        vec![pat.to_owned()]
    }
}

/// What a changed path is, by the profile's patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathClass {
    Test,
    Production,
    Generated,
    Docs,
    Other,
}

/// The profile's patterns, compiled.
#[derive(Clone, Debug)]
pub struct Classifier {
    test: PathMatcher,
    production: PathMatcher,
    generated: PathMatcher,
    docs: PathMatcher,
    pub allow: PathMatcher,
    pub deny: PathMatcher,
}

impl Classifier {
    pub fn new(paths: &Paths, extra_allow: &[String], extra_deny: &[String]) -> Result<Classifier> {
        let mut allow = paths.allow.clone();
        allow.extend_from_slice(extra_allow);
        let mut deny = paths.deny.clone();
        deny.extend_from_slice(extra_deny);
        Ok(Classifier {
            test: PathMatcher::new(&paths.test)?,
            production: PathMatcher::new(&paths.production)?,
            generated: PathMatcher::new(&paths.generated)?,
            docs: PathMatcher::new(&paths.docs)?,
            allow: PathMatcher::new(&allow)?,
            deny: PathMatcher::new(&deny)?,
        })
    }

    /// Generated wins over test, test over docs; production is explicit or everything left.
    pub fn classify(&self, path: &str) -> PathClass {
        if self.generated.is_match(path) {
            PathClass::Generated
        } else if self.test.is_match(path) {
            PathClass::Test
        } else if self.docs.is_match(path) {
            PathClass::Docs
        } else if self.production.is_empty() || self.production.is_match(path) {
            PathClass::Production
        } else {
            PathClass::Other
        }
    }

    pub fn is_test(&self, path: &str) -> bool {
        self.classify(path) == PathClass::Test
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_has_a_test_step() {
        for (name, _) in PRESETS {
            let p = Profile::preset(name).unwrap();
            assert_eq!(&p.name, name);
            assert!(p.test_steps().count() >= 1, "{name}");
            assert!(p.test_steps().all(|s| s.runner.is_some()), "{name}");
        }
    }

    #[test]
    fn an_unknown_field_is_a_usage_error_naming_it() {
        let err = Profile::from_toml("name = \"x\"\nstepz = []\n", "x.toml").unwrap_err();
        assert!(format!("{err:#}").contains("stepz"), "{err:#}");
        assert_eq!(crate::error::exit_code_of(&err), 2);
    }

    #[test]
    fn a_step_without_a_command_is_rejected() {
        let err = Profile::from_toml(
            "name = \"x\"\n[[steps]]\nname = \"t\"\nkind = \"test\"\n",
            "x.toml",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("needs argv or shell"));
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("10").is_ok());
        assert!(parse_duration("m").is_err());
    }

    #[test]
    fn a_zero_duration_is_refused_with_or_without_a_unit() {
        for zero in ["0", " 0 ", "0s", "0m", "0h0m"] {
            let err = parse_duration(zero).unwrap_err();
            assert_eq!(err.to_string(), "a duration must be positive", "{zero:?}");
        }
        assert_eq!(parse_duration("1").unwrap(), Duration::from_secs(1));
    }

    #[test]
    fn patterns_match_names_anywhere_directories_anywhere_and_rooted_globs() {
        let go = Profile::preset("go").unwrap();
        let c = Classifier::new(&go.paths, &[], &[]).unwrap();
        assert_eq!(c.classify("calc_test.go"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/calc_test.go"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/testdata/in.txt"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/calc.go"), PathClass::Production);
        assert_eq!(c.classify("README.md"), PathClass::Docs);
        assert_eq!(
            c.classify("api/zz_generated.deepcopy.go"),
            PathClass::Generated
        );
        let rooted = PathMatcher::new(&["src/**/*.rs".into()]).unwrap();
        assert!(rooted.is_match("src/a/b.rs"));
        assert!(!rooted.is_match("x/src/a.rs"));
    }

    #[test]
    fn the_python_preset_knows_tests_and_conftest() {
        let p = Profile::preset("python").unwrap();
        let c = Classifier::new(&p.paths, &[], &[]).unwrap();
        for t in [
            "tests/test_a.py",
            "pkg/test_b.py",
            "pkg/b_test.py",
            "conftest.py",
            "tests/helpers.py",
        ] {
            assert_eq!(c.classify(t), PathClass::Test, "{t}");
        }
        assert_eq!(c.classify("pkg/b.py"), PathClass::Production);
        assert_eq!(c.classify("CHANGELOG.md"), PathClass::Docs);
    }

    #[test]
    fn detection_follows_marker_files() {
        assert_eq!(Profile::detect(&["go.mod".into()]).unwrap().name, "go");
        assert_eq!(
            Profile::detect(&["Cargo.toml".into()]).unwrap().name,
            "rust"
        );
        assert_eq!(
            Profile::detect(&["setup.py".into()]).unwrap().name,
            "python"
        );
        assert_eq!(
            Profile::detect(&["package.json".into()]).unwrap().name,
            "node"
        );
        assert!(Profile::detect(&["Makefile".into()]).is_none());
    }
}
