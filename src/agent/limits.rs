//! Limits that keep one run bounded whatever the model sends: the wall time as a cancellation that reaches
//! every tool and the gate, and the size of what one call or one reply may put into the conversation and
//! the records.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::model::{ChatTurn, ToolCall};

/// The most a call's arguments may hold (as JSON). Larger calls are not run, and their arguments are
/// replaced by their size and hash in the conversation and the records.
pub const MAX_CALL_BYTES: usize = 1024 * 1024;
/// The most of a reply's text or reasoning that is kept; the rest is replaced by its size and hash.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;

/// The run's wall time as a token: cancelled when the user cancels or when the time is up, so that a
/// `run_tests` call or a gate run stops with the run instead of outliving it.
pub struct WallClock {
    pub token: CancellationToken,
    pub deadline: Option<Instant>,
    timer: Option<tokio::task::JoinHandle<()>>,
}

impl WallClock {
    /// A child of `cancel` that is also cancelled `wall_time` after now.
    pub fn start(cancel: &CancellationToken, wall_time: Option<Duration>) -> WallClock {
        let token = cancel.child_token();
        let deadline = wall_time.map(|w| Instant::now() + w);
        let timer = deadline.map(|at| {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                token.cancel();
            })
        });
        WallClock {
            token,
            deadline,
            timer,
        }
    }
}

impl Drop for WallClock {
    fn drop(&mut self) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
    }
}

/// What stands for content that was too large to keep.
fn stand_in(bytes: &[u8]) -> Value {
    json!({
        "elided": format!("{} bytes, over the limit of {} bytes", bytes.len(), MAX_CALL_BYTES),
        "sha256": hex::encode(Sha256::digest(bytes)),
    })
}

/// Caps a reply in place: calls whose arguments are too large keep only their size and hash (their ids
/// are returned: they are not run), and text beyond [`MAX_TEXT_BYTES`] is cut with its size and hash.
pub fn cap_turn(turn: &mut ChatTurn) -> HashSet<String> {
    let mut oversized = HashSet::new();
    for call in &mut turn.calls {
        if let Some(id) = cap_call(call) {
            oversized.insert(id);
        }
    }
    cap_text(&mut turn.content);
    cap_text(&mut turn.reasoning);
    drop_residue(&mut turn.content);
    oversized
}

/// Empties a reply text that holds no word outside markup tags: what is left of `{{"name": …}` or of a fenced block of
/// commas once the calls are cut out (`{`, "```json\n,\n,\n```"). Kept in the history, a small model copies
/// it as the start of its next reply, which then ends there (Qwen2.5-Coder 1.5B replied `{` four times).
fn drop_residue(text: &mut String) {
    let words = without_tags(text)
        .lines()
        .map(|line| line.trim().trim_start_matches("```"))
        .filter(|line| !matches!(*line, "json" | "tool_call" | "python" | "xml"))
        .any(|line| line.chars().any(char::is_alphanumeric));
    if !words {
        text.clear();
    }
}

/// `text` with its markup tags (`<tools>`, `</tool_response>`) replaced by spaces.
fn without_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        match crate::toolcall::markup_tag(rest) {
            Some(len) => {
                out.push(' ');
                rest = &rest[len..];
            }
            None => {
                out.push('<');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The call's id when its arguments were too large and were replaced.
fn cap_call(call: &mut ToolCall) -> Option<String> {
    let text = call.arguments.to_string();
    if text.len() <= MAX_CALL_BYTES {
        return None;
    }
    call.arguments = stand_in(text.as_bytes());
    Some(call.id.clone())
}

fn cap_text(text: &mut String) {
    if text.len() <= MAX_TEXT_BYTES {
        return;
    }
    let hash = hex::encode(Sha256::digest(text.as_bytes()));
    let total = text.len();
    let mut cut = MAX_TEXT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n[... cut: the text was {total} bytes, sha256 {hash} ...]"
    ));
}

/// The answer to a call that was not run because of its size.
pub fn oversized_message(name: &str) -> String {
    format!(
        "Not run: the arguments of this {name} call are larger than {} bytes. Write a large file in several \
         smaller parts (write_file for the first part, then edit to append).",
        MAX_CALL_BYTES
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    fn turn(calls: Vec<ToolCall>, content: String) -> ChatTurn {
        ChatTurn {
            raw: content.clone(),
            content,
            reasoning: String::new(),
            calls,
            finish_reason: None,
            usage: None,
            timings: None,
            mode: Mode::Native,
            recovered: false,
            warnings: vec![],
            unknown_tools: vec![],
        }
    }

    #[test]
    fn a_reply_text_without_a_word_is_dropped_and_one_with_words_is_kept() {
        for junk in [
            "{",
            "{\n",
            "```json\n,\n,\n,\n\n```",
            "  }\n]",
            "```\n```",
            "<tool_response></tool_response>",
            "<tools>\n\n</tools>",
        ] {
            let mut t = turn(vec![], junk.to_string());
            cap_turn(&mut t);
            assert_eq!(t.content, "", "{junk:?}");
        }
        for kept in ["I'll read it first.", "```json\n{\"a\": 1}\n```", "ok"] {
            let mut t = turn(vec![], kept.to_string());
            cap_turn(&mut t);
            assert_eq!(t.content, kept);
        }
    }

    #[test]
    fn an_oversized_call_keeps_its_size_and_hash_and_small_ones_are_untouched() {
        let big = "x".repeat(MAX_CALL_BYTES + 10);
        let mut t = turn(
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "write_file".into(),
                    arguments: json!({"path": "f", "content": big}),
                },
                ToolCall {
                    id: "b".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "f"}),
                },
            ],
            "y".repeat(MAX_TEXT_BYTES + 100),
        );
        let ids = cap_turn(&mut t);
        assert_eq!(ids, HashSet::from(["a".to_string()]));
        assert!(t.calls[0].arguments.to_string().len() < 300);
        assert_eq!(t.calls[0].arguments["sha256"].as_str().unwrap().len(), 64);
        assert_eq!(t.calls[1].arguments, json!({"path": "f"}));
        assert!(t.content.len() < MAX_TEXT_BYTES + 200);
        assert!(t.content.contains("sha256"));
    }

    #[tokio::test]
    async fn the_wall_clock_cancels_its_token_when_the_time_is_up_and_with_its_parent() {
        let parent = CancellationToken::new();
        let clock = WallClock::start(&parent, Some(Duration::from_millis(20)));
        tokio::time::timeout(Duration::from_secs(5), clock.token.cancelled())
            .await
            .unwrap();
        assert!(!parent.is_cancelled());
        let clock = WallClock::start(&parent, None);
        parent.cancel();
        assert!(clock.token.is_cancelled());
    }
}
