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
        let text = read_text(path, "task file")?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Task::parse(&text, &slug(&stem))
            .map_err(|e| VouchError::usage(format!("task file {}: {e}", path.display())).into())
    }

    /// A task from `--prompt`: the first line is the title, the id a slug of it.
    pub fn from_prompt(prompt: &str) -> Result<Task> {
        check_size(prompt.len() as u64, "--prompt")?;
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

/// The most task text vouch sends: a task is an issue, not a data set. More would fill the model's context
/// before it reads a line of code (a 100 MB task file made a 105.8 MB request).
pub const TASK_CAP: u64 = 256 * 1024;

/// Refuses task text of `len` bytes over [`TASK_CAP`]; `what` names where it came from.
pub fn check_size(len: u64, what: &str) -> Result<()> {
    if len > TASK_CAP {
        return Err(VouchError::usage(format!(
            "{what} is too large: {} ({len} bytes); the cap on task text is {}",
            human(len),
            human(TASK_CAP)
        ))
        .into());
    }
    Ok(())
}

/// Reads a text file of task input (`--task`, `--prior-findings`), refusing what is not a regular file
/// before opening it (opening a FIFO blocks until a writer comes; a device or `/dev/zero` never ends) and
/// reading at most [`TASK_CAP`] + 1 bytes, so memory stays bounded whatever the file is.
pub fn read_text(path: &Path, what: &str) -> Result<String> {
    use std::io::Read;
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| VouchError::usage(format!("cannot read {what} {shown}: {e}")))?;
    refuse_special(&meta, what, path)?;
    // Opened without blocking in case it became a FIFO since the look; the open file is looked at again.
    let file = open_nonblocking(path)
        .map_err(|e| VouchError::usage(format!("cannot read {what} {shown}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| VouchError::usage(format!("cannot read {what} {shown}: {e}")))?;
    refuse_special(&meta, what, path)?;
    check_size(meta.len(), &format!("{what} {shown}"))?;
    let mut bytes = Vec::new();
    file.take(TASK_CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| VouchError::usage(format!("cannot read {what} {shown}: {e}")))?;
    // A file that grew since the look (or a /proc file, which reports no size).
    check_size(bytes.len() as u64, &format!("{what} {shown}"))?;
    String::from_utf8(bytes).map_err(|_| {
        VouchError::usage(format!("cannot read {what} {shown}: it is not UTF-8 text")).into()
    })
}

/// A usage error for anything but a regular file, naming what it is.
fn refuse_special(meta: &std::fs::Metadata, what: &str, path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(VouchError::usage(format!(
        "{what} {} is {kind}; give a regular file",
        path.display()
    ))
    .into())
}

fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// `1.5 MiB`, `256 KiB`, `900 bytes`.
fn human(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else if bytes >= KIB {
        format!("{:.1} KiB", bytes as f64 / KIB as f64)
    } else {
        format!("{bytes} bytes")
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
    fn task_text_over_the_cap_is_refused_with_its_size() {
        let e = Task::from_prompt(&"y".repeat(300 * 1024)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--prompt is too large: 300 KiB (307200 bytes); the cap on task text is 256 KiB"
        );
        assert!(Task::from_prompt(&"y".repeat(256 * 1024)).is_ok());
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
