//! CI definitions read into jobs: GitHub Actions (`.github/workflows/`, also Forgejo's and Gitea's
//! `workflows/` directories, which use the same format), `.gitlab-ci.yml` and Woodpecker (`.woodpecker.yml`,
//! `.woodpecker/*.yml`).
//!
//! YAML is read with `yaml-rust2` (a maintained, pure-Rust YAML 1.2 parser). A job with a
//! `strategy.matrix` becomes one [`Job`] per combination (`include`/`exclude` as GitHub applies them), with
//! `${{ matrix.x }}` and `${{ env.X }}` filled in wherever their value is known; any other expression stays
//! as written. Nothing here decides what a command means: that is [`compare`](super::compare).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// One job of one CI file, for one matrix combination.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// The file, relative to the repository root.
    pub file: String,
    /// The job's id (GitHub), its name (GitLab) or its step's name (Woodpecker).
    pub name: String,
    pub steps: Vec<JobStep>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum JobStep {
    /// A shell script, with the variables the workflow, job and step define.
    Run {
        script: String,
        env: BTreeMap<String, String>,
        dir: Option<String>,
    },
    /// `uses: owner/action@ref` with its `with:` inputs.
    Action {
        uses: String,
        with: BTreeMap<String, String>,
    },
}

/// A CI file that could not be read as YAML.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Unreadable {
    pub file: String,
    pub error: String,
}

/// Where CI definitions live, relative to the repository root: directories of workflow files and single files.
const GITHUB_DIRS: &[&str] = &[
    ".github/workflows",
    ".forgejo/workflows",
    ".gitea/workflows",
];
const GITLAB: &str = ".gitlab-ci.yml";
const WOODPECKER_FILES: &[&str] = &[".woodpecker.yml", ".woodpecker.yaml"];
const WOODPECKER_DIR: &str = ".woodpecker";

/// The CI files of a repository, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CiFiles {
    /// Every CI file found, relative to the repository root.
    pub files: Vec<String>,
    pub jobs: Vec<Job>,
    pub unreadable: Vec<Unreadable>,
    /// Workflows that never run on a push to a branch or a pull request (releases, schedules): not compared.
    pub skipped: Vec<String>,
}

/// Every CI file found under `root`, each read into its jobs.
pub fn read_all(root: &Path) -> CiFiles {
    let mut files: Vec<(String, Format)> = Vec::new();
    for dir in GITHUB_DIRS {
        files.extend(
            yaml_files(root, dir)
                .into_iter()
                .map(|f| (f, Format::Github)),
        );
    }
    if root.join(GITLAB).is_file() {
        files.push((GITLAB.to_owned(), Format::Gitlab));
    }
    for f in WOODPECKER_FILES {
        if root.join(f).is_file() {
            files.push(((*f).to_owned(), Format::Woodpecker));
        }
    }
    files.extend(
        yaml_files(root, WOODPECKER_DIR)
            .into_iter()
            .map(|f| (f, Format::Woodpecker)),
    );
    let mut out = CiFiles::default();
    for (file, format) in files {
        let text = match std::fs::read_to_string(root.join(&file)) {
            Ok(t) => t,
            Err(e) => {
                out.unreadable.push(Unreadable {
                    file,
                    error: e.to_string(),
                });
                continue;
            }
        };
        match parse(&file, &text, format) {
            Ok(j) if j.is_empty() && format == Format::Github && !on_changes(&text) => {
                out.skipped.push(file.clone())
            }
            Ok(mut j) => out.jobs.append(&mut j),
            Err(error) => out.unreadable.push(Unreadable {
                file: file.clone(),
                error,
            }),
        }
        out.files.push(file);
    }
    out
}

/// Whether a workflow's text says it runs on changes (for [`CiFiles::skipped`]).
fn on_changes(text: &str) -> bool {
    YamlLoader::load_from_str(text)
        .ok()
        .and_then(|d| d.first().map(|doc| runs_on_changes(&doc["on"])))
        .unwrap_or(true)
}

/// `on:` names a push to branches, a pull request or a merge queue (not only tags, schedules, releases).
fn runs_on_changes(on: &Yaml) -> bool {
    const CHANGES: &[&str] = &["push", "pull_request", "pull_request_target", "merge_group"];
    match on {
        Yaml::String(s) => CHANGES.contains(&s.as_str()),
        Yaml::Array(a) => a.iter().any(runs_on_changes),
        Yaml::Hash(h) => h.iter().any(|(k, v)| match scalar(k).as_deref() {
            Some("push") => match v.as_hash() {
                Some(p) => p
                    .keys()
                    .any(|k| !matches!(scalar(k).as_deref(), Some("tags" | "tags-ignore"))),
                None => true,
            },
            Some(k) => CHANGES.contains(&k),
            None => false,
        }),
        // No `on:` at all: not a GitHub trigger this reader understands; compare rather than hide it.
        _ => true,
    }
}

fn yaml_files(root: &Path, dir: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    out.sort();
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Github,
    Gitlab,
    Woodpecker,
}

/// The jobs of one CI file; the error is the YAML parser's message.
pub fn parse(file: &str, text: &str, format: Format) -> Result<Vec<Job>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    let mut jobs = Vec::new();
    for doc in &docs {
        match format {
            Format::Github => github(file, doc, &mut jobs),
            Format::Gitlab => gitlab(file, doc, &mut jobs),
            Format::Woodpecker => woodpecker(file, doc, &mut jobs),
        }
    }
    Ok(jobs)
}

fn github(file: &str, doc: &Yaml, jobs: &mut Vec<Job>) {
    if !runs_on_changes(&doc["on"]) {
        return;
    }
    let workflow_env = string_map(&doc["env"]);
    let workflow_dir = scalar(&doc["defaults"]["run"]["working-directory"]);
    let Some(all) = doc["jobs"].as_hash() else {
        return;
    };
    for (id, job) in all {
        let Some(id) = scalar(id) else { continue };
        for combo in matrix(&job["strategy"]["matrix"]) {
            let ctx = Context {
                matrix: Value::Object(combo),
                env: BTreeMap::new(),
            };
            let mut env = ctx.fill_map(&workflow_env);
            let ctx = Context {
                env: env.clone(),
                ..ctx
            };
            env.extend(ctx.fill_map(&string_map(&job["env"])));
            let ctx = Context {
                env: env.clone(),
                ..ctx
            };
            let job_dir =
                scalar(&job["defaults"]["run"]["working-directory"]).or(workflow_dir.clone());
            let mut steps = Vec::new();
            for step in job["steps"].as_vec().map(Vec::as_slice).unwrap_or_default() {
                let mut step_env = env.clone();
                step_env.extend(ctx.fill_map(&string_map(&step["env"])));
                let sctx = Context {
                    env: step_env.clone(),
                    matrix: ctx.matrix.clone(),
                };
                if let Some(script) = scalar(&step["run"]) {
                    let dir = scalar(&step["working-directory"])
                        .or(job_dir.clone())
                        .map(|d| sctx.fill(&d));
                    steps.push(JobStep::Run {
                        script: sctx.fill(&script),
                        env: step_env,
                        dir,
                    });
                } else if let Some(uses) = scalar(&step["uses"]) {
                    let with = sctx.fill_map(&string_map(&step["with"]));
                    steps.push(JobStep::Action { uses, with });
                }
            }
            jobs.push(Job {
                file: file.to_owned(),
                name: id.clone(),
                steps,
            });
        }
    }
}

/// GitLab keys that are not jobs.
const GITLAB_RESERVED: &[&str] = &[
    "stages",
    "variables",
    "default",
    "include",
    "workflow",
    "image",
    "services",
    "before_script",
    "after_script",
    "cache",
    "pages",
];

fn gitlab(file: &str, doc: &Yaml, jobs: &mut Vec<Job>) {
    let Some(all) = doc.as_hash() else { return };
    let global = string_map(&doc["variables"]);
    for (name, job) in all {
        let Some(name) = scalar(name) else { continue };
        if name.starts_with('.') || GITLAB_RESERVED.contains(&name.as_str()) {
            continue;
        }
        let Some(script) = lines(&job["script"]) else {
            continue;
        };
        let mut env = global.clone();
        env.extend(string_map(&job["variables"]));
        jobs.push(Job {
            file: file.to_owned(),
            name,
            steps: vec![JobStep::Run {
                script,
                env,
                dir: None,
            }],
        });
    }
}

fn woodpecker(file: &str, doc: &Yaml, jobs: &mut Vec<Job>) {
    let steps = if doc["steps"].is_badvalue() {
        &doc["pipeline"]
    } else {
        &doc["steps"]
    };
    let named: Vec<(String, &Yaml)> = match steps {
        Yaml::Hash(h) => h
            .iter()
            .filter_map(|(k, v)| Some((scalar(k)?, v)))
            .collect(),
        Yaml::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    scalar(&s["name"]).unwrap_or_else(|| format!("step {}", i + 1)),
                    s,
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    for (name, step) in named {
        let Some(script) = lines(&step["commands"]) else {
            continue;
        };
        let env = string_map(&step["environment"]);
        jobs.push(Job {
            file: file.to_owned(),
            name,
            steps: vec![JobStep::Run {
                script,
                env,
                dir: None,
            }],
        });
    }
}

/// A script given as one string or as a list of lines.
fn lines(y: &Yaml) -> Option<String> {
    match y {
        Yaml::Array(a) => Some(a.iter().filter_map(scalar).collect::<Vec<_>>().join("\n")),
        other => scalar(other),
    }
}

/// A scalar as text (numbers as written, so `3.10` stays `3.10`).
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_map(y: &Yaml) -> BTreeMap<String, String> {
    let Some(h) = y.as_hash() else {
        return BTreeMap::new();
    };
    h.iter()
        .filter_map(|(k, v)| Some((scalar(k)?, scalar(v).unwrap_or_default())))
        .collect()
}

fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .filter_map(|(k, v)| Some((scalar(k)?, to_json(v))))
                .collect(),
        ),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Boolean(b) => Value::Bool(*b),
        other => scalar(other).map(Value::String).unwrap_or(Value::Null),
    }
}

/// The combinations of a `strategy.matrix`, as GitHub builds them: the cross product of its lists, less
/// `exclude`, then each `include` added to every combination it does not contradict, or as a new one.
/// No matrix (or one given by an expression) is one empty combination.
pub fn matrix(y: &Yaml) -> Vec<Map<String, Value>> {
    let Some(h) = y.as_hash() else {
        return vec![Map::new()];
    };
    let mut base: Vec<(String, Vec<Value>)> = Vec::new();
    for (k, v) in h {
        let Some(k) = scalar(k) else { continue };
        if k == "include" || k == "exclude" {
            continue;
        }
        if let Yaml::Array(a) = v {
            base.push((k, a.iter().map(to_json).collect()));
        }
    }
    let mut combos = vec![Map::new()];
    for (k, values) in &base {
        combos = combos
            .iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(k.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    let entries = |key: &str| -> Vec<Map<String, Value>> {
        match to_json(&y[key]) {
            Value::Array(a) => a
                .into_iter()
                .filter_map(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    for ex in entries("exclude") {
        combos.retain(|c| !ex.iter().all(|(k, v)| c.get(k) == Some(v)));
    }
    let include = entries("include");
    if base.is_empty() && !include.is_empty() {
        return include;
    }
    let original: Vec<&String> = base.iter().map(|(k, _)| k).collect();
    let mut extra = Vec::new();
    for inc in include {
        let mut added = false;
        for c in combos.iter_mut() {
            let fits = inc
                .iter()
                .filter(|(k, _)| original.contains(k))
                .all(|(k, v)| c.get(k) == Some(v));
            if fits {
                c.extend(inc.clone());
                added = true;
            }
        }
        if !added {
            extra.push(inc);
        }
    }
    combos.extend(extra);
    combos
}

static EXPR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\$\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}").ok());

/// What `${{ ... }}` can be filled from.
struct Context {
    matrix: Value,
    env: BTreeMap<String, String>,
}

impl Context {
    /// `${{ matrix.a.b }}` and `${{ env.X }}` replaced where known; other expressions left as written.
    fn fill(&self, text: &str) -> String {
        let Some(re) = EXPR.as_ref() else {
            return text.to_owned();
        };
        re.replace_all(text, |c: &regex::Captures| {
            let whole = c.get(0).map(|m| m.as_str()).unwrap_or_default().to_owned();
            let path = c.get(1).map(|m| m.as_str()).unwrap_or_default();
            self.lookup(path).unwrap_or(whole)
        })
        .into_owned()
    }

    fn lookup(&self, path: &str) -> Option<String> {
        let mut parts = path.split('.');
        match parts.next()? {
            "matrix" => {
                let mut v = &self.matrix;
                for p in parts {
                    v = v.get(p)?;
                }
                match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Bool(b) => Some(b.to_string()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                }
            }
            "env" => self.env.get(parts.next()?).cloned(),
            _ => None,
        }
    }

    fn fill_map(&self, map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        map.iter().map(|(k, v)| (k.clone(), self.fill(v))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn combos(text: &str) -> Vec<String> {
        let docs = YamlLoader::load_from_str(text).unwrap_or_default();
        matrix(&docs[0])
            .into_iter()
            .map(|m| Value::Object(m).to_string())
            .collect()
    }

    fn runs(job: &Job) -> Vec<String> {
        job.steps
            .iter()
            .filter_map(|s| match s {
                JobStep::Run { script, .. } => Some(script.clone()),
                JobStep::Action { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_matrix_is_the_cross_product_with_include_merged_or_added() {
        // tracing's test job: three toolchains on Linux, stable on two more systems.
        let m = "os: [ubuntu-latest]\nrust: [stable, beta, nightly]\ninclude:\n  - rust: stable\n    os: windows-latest\n  - rust: stable\n    os: macos-latest\n";
        assert_eq!(
            combos(m),
            vec![
                r#"{"os":"ubuntu-latest","rust":"stable"}"#,
                r#"{"os":"ubuntu-latest","rust":"beta"}"#,
                r#"{"os":"ubuntu-latest","rust":"nightly"}"#,
                r#"{"os":"windows-latest","rust":"stable"}"#,
                r#"{"os":"macos-latest","rust":"stable"}"#,
            ]
        );
    }

    #[test]
    fn include_extends_matching_combinations_and_exclude_removes() {
        let m = "go: ['1.20', '1.21']\nos: [linux, mac]\nexclude:\n  - go: '1.20'\n    os: mac\ninclude:\n  - go: '1.21'\n    race: true\n";
        assert_eq!(
            combos(m),
            vec![
                r#"{"go":"1.20","os":"linux"}"#,
                r#"{"go":"1.21","os":"linux","race":true}"#,
                r#"{"go":"1.21","os":"mac","race":true}"#,
            ]
        );
    }

    #[test]
    fn a_github_job_is_read_once_per_combination_with_matrix_and_env_filled_in() {
        // Shortened from ripgrep's ci.yml.
        let text = r#"
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
        - build: nightly
          rust: nightly
    steps:
    - uses: dtolnay/rust-toolchain@master
      with:
        toolchain: ${{ matrix.rust }}
    - name: Build ripgrep with PCRE2
      run: ${{ env.CARGO }} build --verbose --workspace --features pcre2 ${{ env.TARGET_FLAGS }}
"#;
        let jobs = parse("ci.yml", text, Format::Github).unwrap_or_default();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            runs(&jobs[0]),
            vec!["cargo build --verbose --workspace --features pcre2 "]
        );
        assert_eq!(
            jobs[1].steps[0],
            JobStep::Action {
                uses: "dtolnay/rust-toolchain@master".into(),
                with: BTreeMap::from([("toolchain".into(), "nightly".into())]),
            }
        );
    }

    #[test]
    fn nested_matrix_values_are_reached_by_their_path() {
        // fd's and bat's `matrix.job.target`.
        let text = "jobs:\n  build:\n    strategy:\n      matrix:\n        job:\n          - { target: x86_64-unknown-linux-gnu, os: ubuntu }\n    steps:\n    - run: cargo build --target=${{ matrix.job.target }} ${{ needs.meta.outputs.msrv }}\n";
        let jobs = parse("CICD.yml", text, Format::Github).unwrap_or_default();
        assert_eq!(
            runs(&jobs[0]),
            vec!["cargo build --target=x86_64-unknown-linux-gnu ${{ needs.meta.outputs.msrv }}"]
        );
    }

    #[test]
    fn json_workflows_are_yaml_too() {
        // BurntSushi/toml writes its workflow as JSON.
        let text = r#"{"jobs": {"test": {"strategy": {"matrix": {"go-version": ["1.13.x", "1.19.x"]}},
            "steps": [{"run": "go test ./..."}, {"run": "GOARCH=386 go test ./..."}]}}}"#;
        let jobs = parse("test.yml", text, Format::Github).unwrap_or_default();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            runs(&jobs[1]),
            vec!["go test ./...", "GOARCH=386 go test ./..."]
        );
    }

    #[test]
    fn gitlab_and_woodpecker_jobs_are_their_scripts() {
        let gl = "variables:\n  RUSTFLAGS: -Dwarnings\n.tpl:\n  script: [echo]\ntest:\n  script:\n    - cargo test --all-features\n";
        let jobs = parse(".gitlab-ci.yml", gl, Format::Gitlab).unwrap_or_default();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].name, "test");
        let wp = "steps:\n  lint:\n    image: rust\n    commands:\n      - cargo clippy -- -D warnings\n";
        let jobs = parse(".woodpecker.yml", wp, Format::Woodpecker).unwrap_or_default();
        assert_eq!(runs(&jobs[0]), vec!["cargo clippy -- -D warnings"]);
    }

    #[test]
    fn release_and_scheduled_workflows_are_not_read() {
        let steps = "jobs:\n  a:\n    steps:\n    - run: cargo build --release\n";
        for (on, read) in [
            ("on:\n  push:\n    tags: ['*']\n", false),
            ("on: [schedule, workflow_dispatch]\n", false),
            (
                "on:\n  push:\n    branches: [master]\n    tags: ['*']\n",
                true,
            ),
            ("on: [push]\n", true),
            ("on:\n  pull_request:\n", true),
        ] {
            let jobs = parse("w.yml", &format!("{on}{steps}"), Format::Github).unwrap_or_default();
            assert_eq!(jobs.len(), usize::from(read), "{on}");
        }
    }

    #[test]
    fn broken_yaml_is_an_error_not_an_empty_ci() {
        assert!(parse("x.yml", "jobs:\n  a: [\n", Format::Github).is_err());
    }
}
