//! Gate profiles: which paths are tests, production, generated or docs, and which steps judge a change.
//!
//! A profile is TOML (fields documented in the README). Presets for Rust, Go, Python and Node ship in `gates/`
//! and are compiled into the binary. The profile that judges a change is `--profile`, else the repository's own
//! `.vouch/gate.toml` *as of base* (so a change cannot loosen its own gate), else the preset whose marker file
//! (Cargo.toml, go.mod, ...) the base tree has at its root.
//!
//! A profile is parsed once, when it is read: durations become [`Duration`]s and path patterns compiled
//! matchers ([`paths`](crate::gate::paths)), so a bad value is a load error naming the profile and the key
//! (`steps[2].timeout`), never a surprise in the middle of a gate run. Serialized back to TOML (durations as
//! `90s`, `10m`, `1h30m`; patterns as written) a profile loads again to the same profile.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::VouchError;
use crate::gate::lint::config::Sign;
use crate::gate::results::Runner;

use crate::gate::paths::Paths;
use crate::gate::pyenv::PythonSettings;

/// The presets compiled into the binary, by name.
pub const PRESETS: &[(&str, &str)] = &[
    ("rust", include_str!("../../gates/rust.toml")),
    ("go", include_str!("../../gates/go.toml")),
    ("python", include_str!("../../gates/python.toml")),
    ("node", include_str!("../../gates/node.toml")),
];

/// Where a repository's own profile lives.
pub const REPO_PROFILE: &str = ".vouch/gate.toml";

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
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
    /// Python projects that declare a build system are installed into a venv per room ([`crate::gate::pyenv`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonSettings>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoomConfig {
    /// Top-level paths kept between runs of a reused room (build output that is not in the cache).
    #[serde(default)]
    pub preserve: Vec<String>,
    /// Fetch the room's dependencies with this tool before the first step that needs them (steps run
    /// without the network): `"cargo"`. See [`fetch`](crate::gate::fetch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch: Option<crate::gate::fetch::FetchTool>,
}

/// What the bite check requires (used by the bite step).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BitePolicy {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub require: BiteRequire,
    #[serde(default)]
    pub build_failure: BuildFailure,
    /// The timeout of one reverted run; derived from the head run when not set (see `bite::timeout`).
    #[serde(
        default,
        with = "optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// The per-hunk check: `advisory` (reported), `require` (an unguarded hunk fails the gate) or `off`.
    #[serde(default)]
    pub hunks: HunkPolicy,
    /// The time the per-hunk check may take; default twice what the bite check took.
    #[serde(
        default,
        with = "optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub hunk_budget: Option<Duration>,
}

impl Default for BitePolicy {
    fn default() -> Self {
        BitePolicy {
            enabled: true,
            require: BiteRequire::Any,
            build_failure: BuildFailure::Accept,
            timeout: None,
            hunks: HunkPolicy::Advisory,
            hunk_budget: None,
        }
    }
}

/// What the per-hunk check does with a production hunk no selected test notices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum HunkPolicy {
    /// Reported in the bite report, not blamed.
    #[default]
    Advisory,
    /// Fails the gate.
    Require,
    /// Not run.
    Off,
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

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
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
    #[serde(
        default,
        with = "optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
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
    /// Format steps: the command that formats the tree in place (`cargo fmt --all`). `vouch run` applies it
    /// before each commit and keeps what it changed in the run's own files; the gate never runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Vec<String>>,
    /// Fail when the tool's structured output has warnings, even if it exits 0: clippy run without `-D
    /// warnings`, so that a lint in a library does not stop its tests and benches from being checked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_on_warnings: bool,
    /// A `cargo clippy` lint step that reuses the build's dependencies instead of checking them again: the
    /// build's target directory (placeholders as in `argv`). The step waits for the build step, its own
    /// target directory (`CARGO_TARGET_DIR` in its `env`) gets that one's dependency artifacts, and clippy
    /// runs as a build with clippy-driver as the workspace's compiler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_build: Option<String>,
    /// Run only if one of these files exists in the tree (else skipped with a note).
    #[serde(default)]
    pub if_exists: Vec<String>,
    /// Run only if one of these files contains its text: `[["package.json", "\"vitest\""]]`.
    #[serde(default)]
    pub if_contains: Vec<[String; 2]>,
    /// Skip if any of these files contains its text.
    #[serde(default)]
    pub unless_contains: Vec<[String; 2]>,
    /// Run only where the repository configures the tool, by any of these signs (else skipped "not
    /// configured in this repository"): `{ file = "ruff.toml" }`, `{ file = "pyproject.toml", table =
    /// "tool.ruff" }`, `{ dependency = "ruff" }`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub if_configured: Vec<Sign>,
    /// Test steps: how to read per-test results (cargo, go, pytest, node, generic).
    #[serde(default)]
    pub runner: Option<Runner>,
    /// The step needs the network (it downloads); every other step runs without it under the sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}

impl Step {
    /// The step's timeout: its own, else its kind's default.
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or_else(|| self.kind.default_timeout())
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

/// Why a text is not a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadDuration {
    #[error("`{0}` is not a duration (use 90s, 10m, 1h30m)")]
    Malformed(String),
    #[error("a duration must be positive")]
    Zero,
}

/// Parses `90s`, `10m`, `1h30m`, `2h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, BadDuration> {
    let text = text.trim();
    let malformed = || BadDuration::Malformed(text.to_owned());
    if let Ok(secs) = text.parse::<u64>() {
        return match secs {
            0 => Err(BadDuration::Zero),
            s => Ok(Duration::from_secs(s)),
        };
    }
    let mut total = 0u64;
    let mut num = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().map_err(|_| malformed())?;
        num.clear();
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(malformed()),
        };
        total = n
            .checked_mul(unit)
            .and_then(|secs| total.checked_add(secs))
            .ok_or_else(malformed)?;
    }
    if !num.is_empty() {
        return Err(malformed());
    }
    match total {
        0 => Err(BadDuration::Zero),
        t => Ok(Duration::from_secs(t)),
    }
}

/// A duration as [`parse_duration`] reads it back: `90s` is `1m30s`, whole seconds only.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// Serde for an optional duration written as text (`timeout = "10m"`): a bad text is an error naming it.
mod optional_duration {
    use std::time::Duration;

    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::{format_duration, parse_duration, BadDuration};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        match parse_duration(&text) {
            Ok(d) => Ok(Some(d)),
            Err(BadDuration::Zero) => Err(de::Error::custom(format!(
                "`{text}`: a duration must be positive"
            ))),
            Err(e) => Err(de::Error::custom(e)),
        }
    }
}

impl Profile {
    /// Parses and checks a profile. An error names `origin` and, for a bad value, its key
    /// (`steps[2].timeout`) and line.
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile> {
        let profile: Profile = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| {
                VouchError::usage_hint(
                    format!("invalid gate profile {origin}: {}", load_error(text, &e)),
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
        if let Some((place, var)) = self.secret_expansion() {
            return Err(VouchError::usage_hint(
                format!(
                    "invalid gate profile {origin}: {place} expands `${{{var}}}`, a secret of vouch's \
                     environment: the code under judgement would see it"
                ),
                "vouch never expands a variable whose name looks secret (TOKEN, SECRET, PASSWORD, API_KEY, \
                 CREDENTIAL, AUTH, ...) into a step; give the step what it needs without the secret",
            )
            .into());
        }
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
            if step.runner.is_some() && step.kind != StepKind::Test {
                return Err(bad(format!(
                    "step `{}` has a runner but is not kind = \"test\"",
                    step.name
                )));
            }
        }
        Ok(())
    }

    /// The first `${VAR}` whose name looks secret ([`crate::secret::looks_secret`]) in what the profile
    /// expands into a step (`[env]`, a step's `env`, `argv` or `shell`): where, and the variable.
    fn secret_expansion(&self) -> Option<(String, String)> {
        let env = self.env.iter().map(|(k, v)| (format!("[env] {k}"), v));
        let steps = self.steps.iter().flat_map(|s| {
            let env = s
                .env
                .iter()
                .map(move |(k, v)| (format!("step `{}` env {k}", s.name), v));
            let argv = s.argv.iter().flatten().chain(&s.shell);
            env.chain(argv.map(move |a| (format!("step `{}` command", s.name), a)))
        });
        env.chain(steps).find_map(|(place, text)| {
            let mut rest = text.as_str();
            while let Some(start) = rest.find("${") {
                let tail = &rest[start + 2..];
                let end = tail.find('}')?;
                if crate::secret::looks_secret(&tail[..end]) {
                    return Some((place, tail[..end].to_string()));
                }
                rest = &tail[end..];
            }
            None
        })
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

/// A deserialization error as a sentence: the key and the message with its line, or toml's own account
/// (with the line shown) when the text is not TOML at all or the error is not about one key.
fn load_error(text: &str, e: &serde_path_to_error::Error<toml::de::Error>) -> String {
    let inner = e.inner();
    let path = e.path().to_string();
    if path == "." {
        return inner.to_string();
    }
    let line = inner
        .span()
        .map(|span| {
            let at = span.start.min(text.len());
            format!(" (line {})", text[..at].matches('\n').count() + 1)
        })
        .unwrap_or_default();
    format!("{path}: {}{line}", inner.message().trim_end())
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
    fn a_profile_expanding_a_secret_variable_is_rejected_naming_it() {
        for (toml, place) in [
            ("[env]\nX = \"${GITHUB_TOKEN}\"\n", "[env] X"),
            (
                "[[steps]]\nname = \"t\"\nkind = \"test\"\nargv = [\"t\", \"${my_api_key}\"]\n",
                "step `t` command",
            ),
            (
                "[[steps]]\nname = \"t\"\nkind = \"test\"\nshell = \"t\"\nenv = { Y = \"a${DB_PASSWORD}\" }\n",
                "step `t` env Y",
            ),
        ] {
            let err = Profile::from_toml(&format!("name = \"x\"\n{toml}"), "x.toml").unwrap_err();
            let text = format!("{err:#}");
            assert!(text.contains(place) && text.contains("expands `${"), "{text}");
            assert_eq!(crate::error::exit_code_of(&err), 2);
        }
        let ok = "name = \"x\"\n[env]\nP = \"{room}:${PATH}:${SSH_AUTH_SOCK}\"\n";
        assert!(Profile::from_toml(ok, "x.toml").is_ok());
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

    /// A profile with one format step and one test step; `extra` goes into the test step.
    fn two_steps(extra: &str) -> String {
        format!(
            "name = \"x\"\n[[steps]]\nname = \"fmt\"\nkind = \"format\"\nargv = [\"fmt\"]\n\
             [[steps]]\nname = \"t\"\nkind = \"test\"\nargv = [\"t\"]\n{extra}"
        )
    }

    fn load_error(text: &str) -> String {
        let err = Profile::from_toml(text, "gates/x.toml").unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), 2, "{err:#}");
        err.to_string()
    }

    #[test]
    fn a_bad_step_timeout_is_a_load_error_naming_the_file_and_the_key() {
        assert_eq!(
            load_error(&two_steps("timeout = \"5 minutes\"\n")),
            "invalid gate profile gates/x.toml: steps[1].timeout: `5 minutes` is not a duration (use 90s, 10m, 1h30m) (line 10)"
        );
        assert_eq!(
            load_error(&two_steps("timeout = \"0s\"\n")),
            "invalid gate profile gates/x.toml: steps[1].timeout: `0s`: a duration must be positive (line 10)"
        );
    }

    #[test]
    fn a_bad_bite_timeout_is_a_load_error_not_silently_dropped() {
        let err = load_error("name = \"x\"\n[bite]\ntimeout = \"soon\"\n");
        assert!(
            err.starts_with(
                "invalid gate profile gates/x.toml: bite.timeout: `soon` is not a duration"
            ),
            "{err}"
        );
        let p = Profile::from_toml("name = \"x\"\n[bite]\ntimeout = \"4s\"\n", "x.toml").unwrap();
        assert_eq!(p.bite.timeout, Some(Duration::from_secs(4)));
    }

    #[test]
    fn a_bad_pattern_is_a_load_error_naming_its_key() {
        let err = load_error("name = \"x\"\n[paths]\ntest = [\"tests/\", \"a[b\"]\n");
        assert!(
            err.starts_with("invalid gate profile gates/x.toml: paths.test: bad pattern `a[b`"),
            "{err}"
        );
    }

    #[test]
    fn timeouts_are_read_once_into_durations_with_defaults_by_kind() {
        let p = Profile::from_toml(&two_steps("timeout = \"1h30m\"\n"), "x.toml").unwrap();
        assert_eq!(p.steps[0].timeout, None);
        assert_eq!(p.steps[0].timeout(), Duration::from_secs(5 * 60));
        assert_eq!(p.steps[1].timeout(), Duration::from_secs(5400));
    }

    #[test]
    fn every_preset_prints_as_toml_that_loads_again_to_the_same_profile() {
        for (name, _) in PRESETS {
            let p = Profile::preset(name).unwrap();
            let text = toml::to_string(&p).unwrap();
            let back = Profile::from_toml(&text, "printed")
                .unwrap_or_else(|e| panic!("{name}: {e:#}\n{text}"));
            assert_eq!(back, p, "{name}");
        }
        let mut p = Profile::from_toml(&two_steps("timeout = \"90s\"\n"), "x.toml").unwrap();
        p.bite.timeout = Some(Duration::from_secs(3600));
        let text = toml::to_string(&p).unwrap();
        assert!(text.contains("timeout = \"1m30s\""), "{text}");
        assert!(text.contains("timeout = \"1h\""), "{text}");
        assert_eq!(Profile::from_toml(&text, "printed").unwrap(), p);
    }

    #[test]
    fn a_duration_too_long_to_count_is_malformed_not_a_panic() {
        assert_eq!(
            parse_duration("99999999999999999h"),
            Err(BadDuration::Malformed("99999999999999999h".into()))
        );
        assert_eq!(
            parse_duration("5 minutes").unwrap_err().to_string(),
            "`5 minutes` is not a duration (use 90s, 10m, 1h30m)"
        );
    }

    #[test]
    fn durations_are_printed_in_the_units_they_are_read_in() {
        for (secs, text) in [
            (1, "1s"),
            (90, "1m30s"),
            (600, "10m"),
            (3600, "1h"),
            (5430, "1h30m30s"),
        ] {
            assert_eq!(format_duration(Duration::from_secs(secs)), text);
        }
    }

    proptest::proptest! {
        #[test]
        fn a_printed_duration_reads_back_the_same(secs in 1u64..10_000_000) {
            let d = Duration::from_secs(secs);
            proptest::prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
