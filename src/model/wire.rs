//! Reading Chat Completions responses as servers actually send them: a whole JSON body, or SSE chunks whose
//! content, reasoning and tool-call argument fragments are accumulated by call index.

use serde_json::Value;

use super::error::{server_message, ModelError};
use super::Usage;

/// A call as the server sent it: the id, the name and the arguments as a JSON string.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RawCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The parts of one reply that vouch reads, before tool-call recovery.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RawReply {
    pub content: String,
    pub reasoning: String,
    pub calls: Vec<RawCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub timings: Option<Value>,
}

/// An error object inside a 200 answer or an SSE event (llama-server reports failures mid-stream so).
fn embedded_error(v: &Value) -> Option<ModelError> {
    let e = v.get("error")?;
    if e.is_null() {
        return None;
    }
    let status = e
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(500);
    Some(super::error::classify(status, &v.to_string(), "", 1))
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

fn reasoning_of(v: &Value) -> Option<&str> {
    text(v.get("reasoning_content")).or_else(|| text(v.get("reasoning")))
}

fn usage_of(v: &Value, timings: Option<&Value>) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    Some(Usage {
        prompt: n(u.get("prompt_tokens")).unwrap_or(0),
        completion: n(u.get("completion_tokens")).unwrap_or(0),
        cached: n(u.pointer("/prompt_tokens_details/cached_tokens"))
            .or_else(|| n(timings.and_then(|t| t.get("cache_n")))),
    })
}

/// Reads a whole (non-streamed) response body.
pub(crate) fn parse_response(body: &str) -> Result<RawReply, ModelError> {
    let v: Value = serde_json::from_str(body).map_err(|e| ModelError::BadResponse {
        detail: format!("{e}: {}", server_message(body)),
    })?;
    if let Some(e) = embedded_error(&v) {
        return Err(e);
    }
    let choice =
        v.get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| ModelError::BadResponse {
                detail: format!("no `choices`: {}", server_message(body)),
            })?;
    let msg = choice.get("message").unwrap_or(&Value::Null);
    let calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(c);
                    RawCall {
                        id: text(c.get("id")).unwrap_or_default().to_string(),
                        name: text(f.get("name")).unwrap_or_default().to_string(),
                        arguments: match f.get("arguments") {
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Null) | None => String::new(),
                            Some(other) => other.to_string(),
                        },
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let timings = v.get("timings").filter(|t| t.is_object()).cloned();
    Ok(RawReply {
        content: text(msg.get("content")).unwrap_or_default().to_string(),
        reasoning: reasoning_of(msg).unwrap_or_default().to_string(),
        calls,
        finish_reason: text(choice.get("finish_reason")).map(str::to_string),
        usage: usage_of(&v, timings.as_ref()),
        timings,
    })
}

/// Splits an SSE byte stream into the payloads of its `data:` fields, one per event.
#[derive(Debug, Default)]
pub(crate) struct SseLines {
    buf: Vec<u8>,
    data: String,
}

impl SseLines {
    /// Feeds bytes; returns the payloads of the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(std::mem::take(&mut self.data));
                }
            } else if let Some(rest) = line.strip_prefix("data:") {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            }
            // `event:`, `id:`, `retry:` and comments carry nothing vouch needs.
        }
        events
    }

    /// The payload of a last event that the server did not end with a blank line.
    pub fn finish(&mut self) -> Option<String> {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).to_string();
        if let Some(d) = rest.trim_end().strip_prefix("data:") {
            if !self.data.is_empty() {
                self.data.push('\n');
            }
            self.data.push_str(d.trim_start());
        }
        (!self.data.is_empty()).then(|| std::mem::take(&mut self.data))
    }
}

/// Accumulates streamed chunks into one reply.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    reply: RawReply,
    /// Tool calls by their `index`.
    calls: Vec<(u64, RawCall)>,
    pub done: bool,
    /// The text's length at the last check for a runaway repetition.
    checked: usize,
}

/// The finish reason of a reply vouch cut because it repeated itself.
pub(crate) const REPETITION: &str = "repetition";
/// How much new text comes between two checks for a runaway repetition.
const CHECK_EVERY: usize = 64;

impl Accumulator {
    /// Takes one event's payload. `[DONE]` ends the stream.
    pub fn push(&mut self, data: &str) -> Result<(), ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| ModelError::BadResponse {
            detail: format!("a stream chunk is not JSON ({e}): {}", server_message(data)),
        })?;
        if let Some(e) = embedded_error(&v) {
            return Err(e);
        }
        if let Some(t) = v.get("timings").filter(|t| t.is_object()) {
            self.reply.timings = Some(t.clone());
        }
        if let Some(u) = usage_of(&v, self.reply.timings.as_ref()) {
            self.reply.usage = Some(u);
        }
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = text(choice.get("finish_reason")) {
                self.reply.finish_reason = Some(r.to_string());
            }
            let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
                continue;
            };
            if let Some(c) = text(delta.get("content")) {
                self.reply.content.push_str(c);
            }
            if let Some(r) = reasoning_of(delta) {
                self.reply.reasoning.push_str(r);
            }
            for (pos, c) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                self.push_call(pos, c);
            }
        }
        self.check_runaway();
        Ok(())
    }

    /// Ends the reply when its text has become one unit repeated back to back: the text is cut after the
    /// unit's first copy and the finish reason is [`REPETITION`]; the caller then drops the stream, which
    /// stops the server generating.
    fn check_runaway(&mut self) {
        let text = &mut self.reply.content;
        if text.len() < self.checked + CHECK_EVERY {
            return;
        }
        self.checked = text.len();
        if let Some(at) = super::runaway::cut(text) {
            tracing::info!(
                "the reply repeated one text from byte {at} on; cut there after {} bytes",
                text.len()
            );
            text.truncate(at);
            self.reply.finish_reason = Some(REPETITION.to_string());
            self.done = true;
        }
    }

    fn push_call(&mut self, pos: usize, c: &Value) {
        let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
        let slot = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(k) => k,
            None => {
                self.calls.push((index, RawCall::default()));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot].1;
        if let Some(id) = text(c.get("id")).filter(|s| !s.is_empty()) {
            call.id = id.to_string();
        }
        let f = c.get("function").unwrap_or(&Value::Null);
        if let Some(name) = text(f.get("name")).filter(|s| !s.is_empty()) {
            // The name comes once; a server that repeats it whole must not double it.
            if call.name != name {
                call.name.push_str(name);
            }
        }
        match f.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
    }

    /// Whether the reply looks complete without a `[DONE]`: the server gave a finish reason.
    pub fn finished(&self) -> bool {
        self.done || self.reply.finish_reason.is_some()
    }

    pub fn into_reply(mut self) -> RawReply {
        self.calls.sort_by_key(|(i, _)| *i);
        self.reply.calls = self.calls.into_iter().map(|(_, c)| c).collect();
        self.reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_that_repeats_itself_ends_cut_after_the_first_copy() {
        let mut acc = Accumulator::default();
        acc.push(&json_chunk("Searching.\n<output>\n")).unwrap();
        let mut pushed = 0;
        while !acc.done && pushed < 1000 {
            acc.push(&json_chunk("src/lib.rs\n")).unwrap();
            pushed += 1;
        }
        assert!(acc.done, "the repetition ends the stream");
        assert!(pushed < 80, "ended after {pushed} chunks");
        let reply = acc.into_reply();
        assert_eq!(reply.content, "Searching.\n<output>\nsrc/lib.rs");
        assert_eq!(reply.finish_reason.as_deref(), Some(REPETITION));
    }

    fn json_chunk(content: &str) -> String {
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": content}}]}).to_string()
    }

    #[test]
    fn sse_events_split_across_reads_are_joined() {
        let mut sse = SseLines::default();
        assert!(sse.push(b"data: {\"a\"").is_empty());
        assert_eq!(
            sse.push(b":1}\r\n\r\ndata: [DONE]\n\n"),
            vec!["{\"a\":1}", "[DONE]"]
        );
        assert!(sse.push(b": keep-alive\n\n").is_empty());
        assert_eq!(sse.finish(), None);
    }

    #[test]
    fn streamed_call_fragments_are_joined_by_index() {
        let mut acc = Accumulator::default();
        for chunk in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"abc","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"def","function":{"name":"search","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.go\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":7}},"timings":{"cache_n":7,"prompt_n":3}}"#,
            "[DONE]",
        ] {
            acc.push(chunk).unwrap();
        }
        assert!(acc.done);
        let r = acc.into_reply();
        assert_eq!(
            r.calls,
            vec![
                RawCall {
                    id: "abc".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.go"}"#.into()
                },
                RawCall {
                    id: "def".into(),
                    name: "search".into(),
                    arguments: r#"{"pattern":"x"}"#.into()
                },
            ]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt: 10,
                completion: 5,
                cached: Some(7)
            })
        );
        assert!(r.timings.is_some());
    }

    #[test]
    fn an_error_event_in_the_stream_is_classified() {
        let mut acc = Accumulator::default();
        let e = acc
            .push(r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#)
            .unwrap_err();
        assert!(matches!(e, ModelError::ContextOverflow { .. }));
    }

    #[test]
    fn a_whole_response_keeps_reasoning_timings_and_cached_tokens() {
        let r = parse_response(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":"think","tool_calls":[{"id":"x","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2},"timings":{"cache_n":1}}"#,
        )
        .unwrap();
        assert_eq!(r.reasoning, "think");
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.usage.and_then(|u| u.cached), Some(1));
    }
}
