//! The transcript: one JSON object per line and per [`Event`], appended as the run goes, so a run that dies
//! still leaves what happened until then, and `--resume` ([`resume`]) rebuilds the run from it.
//!
//! Every line is an [`Event`] tagged by its `event` field. The loop writes them and [`resume`] reads them back
//! through the same type, so the writer and the reader cannot drift apart; a line that is not an event (cut
//! short by a crash, or written by an older vouch) is skipped. Every line passes a [`Redactor`] on its way
//! to the file, so the API key never lands in the transcript, whatever the server reflected.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::{Status, StopReason, Tokens};
use crate::gate::report::Report;
use crate::model::{ChatMessage, ChatTurn, Mode, Redactor, ToolCall, Usage};

/// One line of `transcript.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// A new run: its task, the base commit and the branch.
    Start {
        task: String,
        base: String,
        branch: String,
    },
    /// A run resumed from this transcript, with what it took over.
    Resume {
        turns: u32,
        messages: usize,
        sent: usize,
        tokens: Tokens,
        base: String,
    },
    /// Message `index` of the conversation, in its wire form. A later event with the same index replaces it.
    Message {
        index: usize,
        #[serde(with = "wire")]
        message: ChatMessage,
    },
    /// A request to the model: how many messages, their size, and the tools offered.
    Request {
        turn: u32,
        messages: usize,
        bytes: usize,
        tools: Vec<String>,
    },
    /// The model's answer to a request.
    Response {
        turn: u32,
        duration_ms: u64,
        content: String,
        /// The reply text as sent, when calls were cut out of it (`content` is then what is left).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_content: Option<String>,
        reasoning: String,
        calls: Vec<ToolCall>,
        finish_reason: Option<String>,
        usage: Option<Usage>,
        timings: Option<Value>,
        mode: Mode,
        recovered: bool,
        warnings: Vec<String>,
    },
    /// The model client failed; the run stops. `overflow` when the prompt did not fit the context: a
    /// resumed run elides old tool outputs before it sends it again.
    ModelError {
        turn: u32,
        error: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        overflow: bool,
    },
    /// One call and its result (`ok: false` for a failed call).
    Tool {
        turn: u32,
        id: String,
        name: String,
        arguments: Value,
        ok: bool,
        result: String,
    },
    /// A user message from the loop itself.
    Nudge {
        turn: u32,
        kind: NudgeKind,
        text: String,
    },
    /// Old tool outputs replaced by placeholders to save context.
    Elided {
        turn: u32,
        prompt_tokens: u64,
        context: u64,
        estimated_tokens: u64,
        messages: Vec<ElidedMessage>,
    },
    /// The commit of a `submit GO`; `commit` is null when nothing changed (`note` says so).
    Commit {
        commit: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branch: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The project's formatter ran before a commit: the run's files it changed, its steps, and the other
    /// files it touched, put back.
    Formatted {
        files: Vec<String>,
        steps: Vec<String>,
        restored: Vec<String>,
    },
    /// The gate's whole report on a commit.
    Gate { commit: String, report: Box<Report> },
    /// The gate could not run.
    GateError { error: String },
    /// The run ended.
    Stop {
        status: Status,
        stop_reason: StopReason,
        turns: u32,
    },
}

impl Event {
    /// The `response` event of turn `turn`, answered in `duration_ms`.
    pub fn response(turn: u32, duration_ms: u64, reply: &ChatTurn) -> Event {
        Event::Response {
            turn,
            duration_ms,
            content: reply.content.clone(),
            raw_content: (reply.raw != reply.content).then(|| reply.raw.clone()),
            reasoning: reply.reasoning.clone(),
            calls: reply.calls.clone(),
            finish_reason: reply.finish_reason.clone(),
            usage: reply.usage,
            timings: reply.timings.clone(),
            mode: reply.mode,
            recovered: reply.recovered,
            warnings: reply.warnings.clone(),
        }
    }
}

/// Why the loop added a user message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NudgeKind {
    /// A reply without a tool call.
    NoToolCall,
    /// The same call three times in a row.
    RepeatedCall,
    /// The same call refused with the same answer three times, wherever they fell.
    RepeatedRefusal,
    /// The start of the forcing phase.
    Forcing,
    /// The same turns again and again: the cycle named.
    Cycle,
    /// A gate failure sent back for repair.
    Repair,
    /// Calls of tools that do not exist (read from the text and dropped): what the tools are.
    UnknownTool,
    /// The guided strategy's ask for the next piece of code.
    Guided,
}

/// One tool output an [`Event::Elided`] replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElidedMessage {
    pub index: usize,
    pub name: String,
    /// The output's length before it was replaced.
    pub bytes: usize,
}

/// An append-only JSON Lines file.
pub struct Transcript {
    path: PathBuf,
    file: File,
    redactor: Redactor,
}

impl Transcript {
    pub fn create(path: &Path) -> Result<Transcript> {
        let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
            redactor: Redactor::default(),
        })
    }

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
            redactor: Redactor::default(),
        })
    }

    /// The transcript with every line scrubbed by `redactor`.
    pub fn redacting(mut self, redactor: Redactor) -> Transcript {
        self.redactor = redactor;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as one line. A write failure is logged, not fatal: the run matters more.
    pub fn event(&mut self, event: &Event) {
        // One whole line per write: a crash leaves only complete events behind, and writing through a
        // formatter into an unbuffered file cost hundreds of small writes per turn.
        let line = match serde_json::to_string(event) {
            Ok(line) => line,
            Err(e) => {
                tracing::warn!("cannot serialize a transcript event: {e}");
                return;
            }
        };
        let mut line = self.redactor.text(&line).into_bytes();
        line.push(b'\n');
        if let Err(e) = self.file.write_all(&line) {
            tracing::warn!("cannot write the transcript {}: {e}", self.path.display());
        }
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
    /// The report of the last `gate` event.
    pub gate: Option<Report>,
    /// The last commit made.
    pub commit: Option<String>,
    /// The run stopped because the prompt overflowed the context (its last model error).
    pub overflowed: bool,
}

/// Reads an earlier run's transcript. Lines that are not events (a last line cut short by a crash) are
/// skipped.
pub fn resume(path: &Path) -> Result<Resumed> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut r = Resumed::default();
    let mut by_index: Vec<Option<ChatMessage>> = Vec::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        match event {
            Event::Start { base, .. } => r.base = Some(base),
            Event::ModelError { overflow, .. } => r.overflowed = overflow,
            Event::Message { index, message } => {
                if by_index.len() <= index {
                    by_index.resize(index + 1, None);
                }
                by_index[index] = Some(message);
            }
            Event::Request { messages, .. } => r.sent = messages,
            Event::Response { usage, .. } => {
                r.overflowed = false;
                r.turns += 1;
                if let Some(u) = usage {
                    r.last_prompt = u.prompt;
                    r.tokens.prompt += u.prompt;
                    r.tokens.completion += u.completion;
                    r.tokens.cached += u.cached.unwrap_or(0);
                }
            }
            Event::Nudge {
                kind: NudgeKind::Repair,
                ..
            } => r.repairs += 1,
            Event::Gate { report, .. } => r.gate = Some(*report),
            Event::Commit {
                commit: Some(c), ..
            } => r.commit = Some(c),
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
    wire::Message::deserialize(v)
        .ok()
        .and_then(wire::Message::into_chat)
}

/// A [`ChatMessage`] in an event is written in its OpenAI wire form, so the transcript shows exactly what
/// was sent, and read back from it.
mod wire {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use crate::model::{ChatMessage, ToolCall};

    pub fn serialize<S: Serializer>(message: &ChatMessage, s: S) -> Result<S::Ok, S::Error> {
        message.to_openai().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ChatMessage, D::Error> {
        Message::deserialize(d)?
            .into_chat()
            .ok_or_else(|| serde::de::Error::custom("tool call arguments are not JSON"))
    }

    /// The wire form as read: a missing or null text is empty.
    #[derive(Deserialize)]
    #[serde(tag = "role", rename_all = "lowercase")]
    pub enum Message {
        System {
            #[serde(default)]
            content: Option<String>,
        },
        User {
            #[serde(default)]
            content: Option<String>,
        },
        Assistant {
            #[serde(default)]
            content: Option<String>,
            #[serde(default)]
            tool_calls: Option<Vec<Call>>,
        },
        Tool {
            #[serde(default)]
            tool_call_id: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            content: Option<String>,
        },
    }

    #[derive(Deserialize)]
    pub struct Call {
        id: String,
        function: Function,
    }

    #[derive(Deserialize)]
    pub struct Function {
        name: String,
        /// A JSON string on the wire; an object is taken as it is.
        #[serde(default = "no_arguments")]
        arguments: Value,
    }

    fn no_arguments() -> Value {
        Value::Object(Default::default())
    }

    impl Message {
        /// The message; `None` when a call's arguments are a string that is not JSON.
        pub fn into_chat(self) -> Option<ChatMessage> {
            let text = Option::unwrap_or_default;
            Some(match self {
                Message::System { content } => ChatMessage::system(text(content)),
                Message::User { content } => ChatMessage::user(text(content)),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut calls = Vec::new();
                    for c in tool_calls.unwrap_or_default() {
                        let arguments = match c.function.arguments {
                            Value::String(s) => serde_json::from_str(&s).ok()?,
                            other => other,
                        };
                        calls.push(ToolCall {
                            id: c.id,
                            name: c.function.name,
                            arguments,
                        });
                    }
                    ChatMessage::assistant(text(content), calls)
                }
                Message::Tool {
                    tool_call_id,
                    name,
                    content,
                } => ChatMessage::tool(text(tool_call_id), text(name), text(content)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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

    fn response(turn: u32, usage: Option<Usage>) -> Event {
        Event::Response {
            turn,
            duration_ms: 5,
            content: String::new(),
            raw_content: None,
            reasoning: String::new(),
            calls: vec![],
            finish_reason: None,
            usage,
            timings: None,
            mode: Mode::Native,
            recovered: false,
            warnings: vec![],
        }
    }

    #[test]
    fn resume_takes_the_last_text_of_each_message_and_counts_answered_turns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::create(&path).unwrap();
        t.event(&Event::Start {
            task: "t".into(),
            base: "abc".into(),
            branch: "vouch/t".into(),
        });
        t.event(&Event::Message {
            index: 0,
            message: ChatMessage::system("s"),
        });
        t.event(&Event::Message {
            index: 1,
            message: ChatMessage::user("u"),
        });
        t.event(&Event::Request {
            turn: 1,
            messages: 2,
            bytes: 10,
            tools: vec![],
        });
        t.event(&response(
            1,
            Some(Usage {
                prompt: 7,
                completion: 2,
                cached: Some(3),
            }),
        ));
        t.event(&Event::Message {
            index: 1,
            message: ChatMessage::user("u2"),
        });
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

    #[test]
    fn events_keep_the_names_the_transcript_has_always_had() {
        let lines: Vec<Value> = [
            response(
                1,
                Some(Usage {
                    prompt: 10,
                    completion: 1,
                    cached: Some(8),
                }),
            ),
            Event::Tool {
                turn: 1,
                id: "c".into(),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
                ok: false,
                result: "no".into(),
            },
            Event::Nudge {
                turn: 2,
                kind: NudgeKind::NoToolCall,
                text: "call".into(),
            },
            Event::Commit {
                commit: None,
                branch: None,
                note: Some("nothing changed".into()),
            },
            Event::GateError { error: "e".into() },
            Event::Stop {
                status: Status::NoGo,
                stop_reason: StopReason::Submitted,
                turns: 3,
            },
        ]
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
        assert_eq!(lines[0]["event"], "response");
        assert_eq!(
            lines[0]["usage"],
            json!({"prompt": 10, "completion": 1, "cached": 8})
        );
        assert_eq!(lines[0]["mode"], "native");
        assert_eq!(lines[0]["recovered"], false);
        assert_eq!(
            lines[1],
            json!({"event": "tool", "turn": 1, "id": "c", "name": "read_file",
                   "arguments": {"path": "a"}, "ok": false, "result": "no"})
        );
        assert_eq!(
            lines[2],
            json!({"event": "nudge", "turn": 2, "kind": "no-tool-call", "text": "call"})
        );
        assert_eq!(
            lines[3],
            json!({"event": "commit", "commit": null, "note": "nothing changed"})
        );
        assert_eq!(lines[4], json!({"event": "gate-error", "error": "e"}));
        assert_eq!(
            lines[5],
            json!({"event": "stop", "status": "no-go", "stop_reason": "submitted", "turns": 3})
        );
    }

    #[test]
    fn repairs_and_the_last_commit_are_taken_over_and_other_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut t = Transcript::create(&path).unwrap();
        for (kind, commit) in [
            (NudgeKind::Repair, Some("c1")),
            (NudgeKind::Forcing, None),
            (NudgeKind::Repair, Some("c2")),
        ] {
            t.event(&Event::Commit {
                commit: commit.map(String::from),
                branch: Some("b".into()),
                note: None,
            });
            t.event(&Event::Nudge {
                turn: 1,
                kind,
                text: String::new(),
            });
        }
        drop(t);
        let old =
            "{\"event\": \"gate\", \"commit\": \"c2\", \"verdict\": \"fail\", \"reasons\": []}\n";
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + old).unwrap();
        let r = resume(&path).unwrap();
        assert_eq!((r.repairs, r.commit.as_deref()), (2, Some("c2")));
        assert!(r.gate.is_none());
    }
}
