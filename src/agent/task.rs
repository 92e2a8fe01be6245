//! Tasks: a Markdown file with front matter (`---` simple `key: value` lines, or `+++` TOML) and the issue
//! text as its body, or a bare `--prompt`. The front matter is read by hand rather than with a YAML crate:
//! the fields are few and flat, and a task file should fail loudly on anything else.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::error::VouchError;

/// One task for the agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Task {
    /// The file stem or a slug of the prompt: names the workspace and the branch `vouch/<id>`.
    pub id: String,
    pub title: String,
    /// The issue text.
    pub body: String,
    pub repo: Option<PathBuf>,
    pub base: Option<String>,
    pub profile: Option<String>,
    /// Globs the change may touch (passed to the gate as `allow`).
    pub scope: Vec<String>,
    pub max_turns: Option<u32>,
}

/// The front matter fields, as TOML would spell them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    title: Option<String>,
    repo: Option<String>,
    base: Option<String>,
    profile: Option<String>,
    #[serde(default)]
    scope: Vec<String>,
    max_turns: Option<u32>,
}

impl Task {
    /// Reads a task file.
    pub fn load(path: &Path) -> Result<Task> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            VouchError::usage(format!("cannot read task file {}: {e}", path.display()))
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Task::parse(&text, &slug(&stem))
            .map_err(|e| VouchError::usage(format!("task file {}: {e}", path.display())).into())
    }

    /// A task from `--prompt`: the first line is the title, the id a slug of it.
    pub fn from_prompt(prompt: &str) -> Result<Task> {
        let prompt = prompt.trim();
        if prompt.is_empty() {
            return Err(VouchError::usage("--prompt is empty").into());
        }
        let title = prompt.lines().next().unwrap_or_default().trim().to_string();
        Ok(Task {
            id: slug(&title),
            title,
            body: prompt.to_string(),
            ..Task::default()
        })
    }

    /// Parses a task file's text; `id` is used as given.
    pub fn parse(text: &str, id: &str) -> Result<Task, String> {
        let text = text.trim_start_matches('\u{feff}');
        let (front, body) = match split_front(text, "---").or_else(|| split_front(text, "+++")) {
            Some((fence, front, body)) => {
                let front = if fence == "+++" {
                    toml::from_str::<Front>(front).map_err(|e| format!("bad front matter: {e}"))?
                } else {
                    simple_front(front)?
                };
                (front, body)
            }
            None => (Front::default(), text),
        };
        let body = body.trim().to_string();
        let title = match front.title {
            Some(t) if !t.trim().is_empty() => t.trim().to_string(),
            _ => body
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches('#')
                .trim()
                .to_string(),
        };
        if id.is_empty() {
            return Err("the task has no usable name".into());
        }
        if title.is_empty() && body.is_empty() {
            return Err("the task is empty: give a title and the issue text".into());
        }
        Ok(Task {
            id: id.to_string(),
            title,
            body,
            repo: front.repo.map(PathBuf::from),
            base: front.base,
            profile: front.profile,
            scope: front.scope,
            max_turns: front.max_turns,
        })
    }

    /// The first user message: the issue as the model reads it.
    pub fn message(&self) -> String {
        let mut out = format!("# Task: {}\n\n{}\n", self.title, self.body);
        if !self.scope.is_empty() {
            out.push_str(&format!(
                "\nOnly these paths may change: {}.\n",
                self.scope.join(", ")
            ));
        }
        out
    }
}

/// `(fence, front matter, body)` when `text` starts with a fence line and has a closing one.
fn split_front<'a>(text: &'a str, fence: &'static str) -> Option<(&'static str, &'a str, &'a str)> {
    let rest = text.strip_prefix(fence)?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == fence {
            return Some((fence, &rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// `key: value` and `key: [a, "b"]` lines; `#` comments and blank lines are skipped.
fn simple_front(text: &str) -> Result<Front, String> {
    let mut front = Front::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "front matter line {}: expected `key: value`, got `{line}`",
                n + 1
            ));
        };
        let value = value.trim();
        match key.trim() {
            "title" => front.title = Some(scalar(value)),
            "repo" => front.repo = Some(scalar(value)),
            "base" => front.base = Some(scalar(value)),
            "profile" => front.profile = Some(scalar(value)),
            "scope" => front.scope = list(value)?,
            "max_turns" => {
                front.max_turns = Some(scalar(value).parse().map_err(|_| {
                    format!("front matter: max_turns must be a number, got `{value}`")
                })?)
            }
            other => {
                return Err(format!(
                    "front matter: unknown field `{other}` (known: title, repo, base, profile, scope, max_turns)"
                ))
            }
        }
    }
    Ok(front)
}

fn scalar(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    v.to_string()
}

fn list(value: &str) -> Result<Vec<String>, String> {
    let inner = value
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| {
            format!("front matter: scope must be a list like [\"src/**\"], got `{value}`")
        })?;
    Ok(inner
        .split(',')
        .map(scalar)
        .filter(|s| !s.is_empty())
        .collect())
}

/// Lowercase ASCII letters and digits joined by single dashes, at most 48 characters.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    let mut cut = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() > 48 {
            cut = true;
            break;
        }
    }
    if cut {
        // Whole words only: drop the word that was cut.
        match out.rfind('-') {
            Some(i) if i > 0 => out.truncate(i),
            _ => out.truncate(48),
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_task_reads_its_front_matter_and_body() {
        let text = "---\ntitle: word_count counts words\nrepo: workspaces/example\nbase: main\nprofile: rust\nscope: [\"src/**\", \"tests/**\"]\n---\nThe body.\n";
        let task = Task::parse(text, "example").unwrap();
        assert_eq!(
            task,
            Task {
                id: "example".into(),
                title: "word_count counts words".into(),
                body: "The body.".into(),
                repo: Some(PathBuf::from("workspaces/example")),
                base: Some("main".into()),
                profile: Some("rust".into()),
                scope: vec!["src/**".into(), "tests/**".into()],
                max_turns: None,
            }
        );
    }

    #[test]
    fn toml_front_matter_works_too() {
        let text = "+++\ntitle = \"T\"\nmax_turns = 7\n+++\nbody";
        let task = Task::parse(text, "t").unwrap();
        assert_eq!(task.max_turns, Some(7));
        assert_eq!(task.title, "T");
    }

    #[test]
    fn an_unknown_field_is_an_error() {
        assert!(Task::parse("---\ntitel: x\n---\nb", "t")
            .unwrap_err()
            .contains("titel"));
    }

    #[test]
    fn a_prompt_becomes_a_slug() {
        let task = Task::from_prompt("Fix the  add() bug!\nmore").unwrap();
        assert_eq!(task.id, "fix-the-add-bug");
        assert_eq!(task.title, "Fix the  add() bug!");
        let long = slug("add() in calc.py subtracts instead of adding. Fix it and add a test.");
        assert_eq!(long, "add-in-calc-py-subtracts-instead-of-adding-fix");
    }
}
