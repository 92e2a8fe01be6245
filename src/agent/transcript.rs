//! The transcript: one JSON object per line and per event (request, response, tool call, nudge, commit,
//! gate, stop), appended as the run goes, so a run that dies still leaves what happened until then.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

/// An append-only JSON Lines file.
pub struct Transcript {
    path: PathBuf,
    file: File,
}

impl Transcript {
    pub fn create(path: &Path) -> Result<Transcript> {
        let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `{"event": event, ...fields}`. A write failure is logged, not fatal: the run matters more.
    pub fn event(&mut self, event: &str, fields: Value) {
        let mut obj = json!({ "event": event });
        if let (Some(o), Value::Object(f)) = (obj.as_object_mut(), fields) {
            o.extend(f);
        }
        if let Err(e) = writeln!(self.file, "{obj}") {
            tracing::warn!("cannot write the transcript {}: {e}", self.path.display());
        }
    }
}
