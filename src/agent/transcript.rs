//! The transcript: one JSON object per line and per event (request, response, tool call, nudge, commit,
//! gate, stop), appended as the run goes, so a run that dies still leaves what happened until then.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::Tokens;
use crate::model::{ChatMessage, ToolCall};

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
        // One whole line per write: a crash leaves only complete events behind, and writing through a
        // formatter into an unbuffered file cost hundreds of small writes per turn.
        let mut line = serde_json::to_vec(&obj).unwrap_or_default();
        line.push(b'\n');
        if let Err(e) = self.file.write_all(&line) {
            tracing::warn!("cannot write the transcript {}: {e}", self.path.display());
        }
    }
}

impl Transcript {
    /// Opens an existing transcript to go on appending (a resumed run).
    pub fn append(path: &Path) -> Result<Transcript> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("open {}", path.display()))?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
        })
    }
}

/// What a resumed run takes over from an earlier run's transcript.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The conversation, message for message as it was sent (and as it stood when the run stopped).
    pub messages: Vec<ChatMessage>,
    /// How many of `messages` the last request sent.
    pub sent: usize,
    /// Turns that got an answer.
    pub turns: u32,
    pub tokens: Tokens,
    /// Prompt tokens of the last answered request.
    pub last_prompt: u64,
    /// Gate failures already sent back for repair.
    pub repairs: u32,
    /// The base commit (`start` event).
    pub base: Option<String>,
    /// The last `gate` event (`verdict`, `reasons`).
    pub gate: Option<Value>,
    /// The last commit made.
    pub commit: Option<String>,
}

/// Reads an earlier run's transcript. A last line cut short by a crash is skipped.
pub fn resume(path: &Path) -> Result<Resumed> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut r = Resumed::default();
    let mut by_index: Vec<Option<ChatMessage>> = Vec::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match event.get("event").and_then(Value::as_str) {
            Some("start") => {
                r.base = event.get("base").and_then(Value::as_str).map(String::from);
            }
            Some("message") => {
                let index = event.get("index").and_then(Value::as_u64);
                let message = event.get("message").and_then(from_openai);
                if let (Some(i), Some(m)) = (index, message) {
                    let i = i as usize;
                    if by_index.len() <= i {
                        by_index.resize(i + 1, None);
                    }
                    by_index[i] = Some(m);
                }
            }
            Some("request") => {
                r.sent = event.get("messages").and_then(Value::as_u64).unwrap_or(0) as usize;
            }
            Some("response") => {
                r.turns += 1;
                if let Some(u) = event.get("usage").filter(|u| u.is_object()) {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    r.last_prompt = n("prompt");
                    r.tokens.prompt += n("prompt");
                    r.tokens.completion += n("completion");
                    r.tokens.cached += n("cached");
                }
            }
            Some("nudge") if event.get("kind").and_then(Value::as_str) == Some("repair") => {
                r.repairs += 1;
            }
            Some("gate") => r.gate = Some(event),
            Some("commit") => {
                if let Some(c) = event.get("commit").and_then(Value::as_str) {
                    r.commit = Some(c.to_string());
                }
            }
            _ => {}
        }
    }
    // The messages up to the first gap (a gap only comes from a damaged file).
    r.messages = by_index.into_iter().map_while(|m| m).collect();
    r.sent = r.sent.min(r.messages.len());
    Ok(r)
}

/// A message back from its OpenAI wire form ([`ChatMessage::to_openai`]).
pub fn from_openai(v: &Value) -> Option<ChatMessage> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Some(match v.get("role")?.as_str()? {
        "system" => ChatMessage::system(text("content")),
        "user" => ChatMessage::user(text("content")),
        "assistant" => {
            let mut calls = Vec::new();
            for c in v
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = c.get("function")?;
                let arguments = match f.get("arguments") {
                    Some(Value::String(s)) => serde_json::from_str(s).ok()?,
                    Some(other) => other.clone(),
                    None => Value::Object(Default::default()),
                };
                calls.push(ToolCall {
                    id: c.get("id")?.as_str()?.to_string(),
                    name: f.get("name")?.as_str()?.to_string(),
                    arguments,
                });
            }
            ChatMessage::assistant(text("content"), calls)
        }
        "tool" => ChatMessage::tool(text("tool_call_id"), text("name"), text("content")),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_back_from_their_wire_form_unchanged() {
        let messages = vec![
            ChatMessage::system("sys"),
            ChatMessage::user("task"),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "edit".into(),
                    arguments: json!({"path": "a.py", "old_string": "x\n", "n": 1.5}),
                }],
            ),
            ChatMessage::tool("call_1", "edit", "ok"),
            ChatMessage::assistant("done", vec![]),
        ];
        for m in &messages {
            let wire = m.to_openai();
            let back = from_openai(&wire).unwrap();
            assert_eq!(&back, m);
            assert_eq!(back.to_openai(), wire);
        }
    }

    #[test]
    fn resume_takes_the_last_text_of_each_message_and_counts_answered_turns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::create(&path).unwrap();
        t.event("start", json!({"base": "abc"}));
        t.event(
            "message",
            json!({"index": 0, "message": {"role": "system", "content": "s"}}),
        );
        t.event(
            "message",
            json!({"index": 1, "message": {"role": "user", "content": "u"}}),
        );
        t.event("request", json!({"turn": 1, "messages": 2}));
        t.event(
            "response",
            json!({"turn": 1, "usage": {"prompt": 7, "completion": 2, "cached": 3}}),
        );
        t.event(
            "message",
            json!({"index": 1, "message": {"role": "user", "content": "u2"}}),
        );
        drop(t);
        std::fs::write(
            &path,
            std::fs::read_to_string(&path).unwrap() + "{\"event\": \"mess",
        )
        .unwrap();
        let r = resume(&path).unwrap();
        assert_eq!(
            r.messages,
            vec![ChatMessage::system("s"), ChatMessage::user("u2")]
        );
        assert_eq!((r.turns, r.sent, r.last_prompt), (1, 2, 7));
        assert_eq!(
            r.tokens,
            Tokens {
                prompt: 7,
                cached: 3,
                completion: 2
            }
        );
        assert_eq!(r.base.as_deref(), Some("abc"));
    }
}
