//! What went wrong talking to the model server, classified so that a caller can branch and a user knows
//! what to do. Messages hold the server's own words (trimmed), never the API key.

use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

/// The longest server message kept in an error.
const MESSAGE_MAX: usize = 2000;

/// A failed request, by what to do about it.
#[derive(Debug, Error)]
pub enum ModelError {
    /// Nothing listens at the endpoint (after the retries).
    #[error("cannot reach the model server at {address}: {detail}")]
    Unreachable { address: String, detail: String },
    /// The prompt does not fit the server's context window.
    #[error("the prompt exceeds the model's context window: {message}")]
    ContextOverflow { message: String },
    /// The server does not serve the model asked for.
    #[error("the server does not know model `{model}`: {message}")]
    ModelNotFound { model: String, message: String },
    /// 401 or 403.
    #[error("the server refused the credentials (HTTP {status}): {message}")]
    Unauthorized { status: u16, message: String },
    /// Any other 4xx: the request was wrong; retrying will not help.
    #[error("the server rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// 5xx or 429 after the retries.
    #[error("the server failed (HTTP {status}) after {attempts} attempt(s): {message}")]
    Server {
        status: u16,
        attempts: u32,
        message: String,
    },
    /// No answer, or a stream went silent, for too long.
    #[error("the model server did not answer within {after:?} ({what})")]
    Timeout { what: &'static str, after: Duration },
    /// The connection closed in the middle of a streamed reply.
    #[error("the reply stream was cut off before it finished: {detail}")]
    StreamCut { detail: String },
    /// The server answered with something that is not a Chat Completions response.
    #[error("the server's reply is not a chat completion: {detail}")]
    BadResponse { detail: String },
    /// The client's own configuration is unusable.
    #[error("{message}")]
    Config { message: String },
    /// The server asked to retry later than the caller's time allows.
    #[error("the server asked to retry after {retry_after:?}, past the {remaining:?} left of the run's wall time: {message}")]
    RetryPastDeadline {
        retry_after: Duration,
        remaining: Duration,
        message: String,
    },
}

impl ModelError {
    /// What the user should do, in one sentence.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            ModelError::Unreachable { address, .. } => format!(
                "start the model server (for example `llama-server -m MODEL.gguf --port PORT --jinja`) or check --endpoint (now {address})"
            ),
            ModelError::ContextOverflow { .. } => {
                "shorten the conversation or start the server with a larger context (llama-server: -c)".into()
            }
            ModelError::ModelNotFound { .. } => {
                "check --model against the server's model list (GET /v1/models)".into()
            }
            ModelError::Unauthorized { .. } => {
                "check the API key in the environment variable named by --api-key-env".into()
            }
            ModelError::Timeout { .. } => {
                "the server may be overloaded or stuck; raise the timeout or restart it".into()
            }
            ModelError::StreamCut { .. } => {
                "the server may have crashed or restarted; check its log".into()
            }
            ModelError::BadResponse { .. } => "check that --endpoint is an OpenAI-compatible server".into(),
            _ => return None,
        })
    }

    /// The same error with `secret` removed from every text it holds.
    pub(crate) fn redacted(self, secret: &str) -> ModelError {
        if secret.len() < 4 {
            return self;
        }
        let r = |s: String| s.replace(secret, "<redacted>");
        match self {
            ModelError::Unreachable { address, detail } => ModelError::Unreachable {
                address: r(address),
                detail: r(detail),
            },
            ModelError::ContextOverflow { message } => ModelError::ContextOverflow {
                message: r(message),
            },
            ModelError::ModelNotFound { model, message } => ModelError::ModelNotFound {
                model: r(model),
                message: r(message),
            },
            ModelError::Unauthorized { status, message } => ModelError::Unauthorized {
                status,
                message: r(message),
            },
            ModelError::BadRequest { status, message } => ModelError::BadRequest {
                status,
                message: r(message),
            },
            ModelError::Server {
                status,
                attempts,
                message,
            } => ModelError::Server {
                status,
                attempts,
                message: r(message),
            },
            ModelError::StreamCut { detail } => ModelError::StreamCut { detail: r(detail) },
            ModelError::BadResponse { detail } => ModelError::BadResponse { detail: r(detail) },
            ModelError::Config { message } => ModelError::Config {
                message: r(message),
            },
            ModelError::RetryPastDeadline {
                retry_after,
                remaining,
                message,
            } => ModelError::RetryPastDeadline {
                retry_after,
                remaining,
                message: r(message),
            },
            e @ ModelError::Timeout { .. } => e,
        }
    }

    /// Worth another attempt: connection errors, 5xx and 429 (unless the body says overflow or unknown model).
    pub(crate) fn retryable(&self) -> bool {
        matches!(
            self,
            ModelError::Unreachable { .. } | ModelError::Server { .. }
        )
    }
}

/// The error message in a server's error body: `{"error": {"message"}}`, `{"error": "…"}`, `{"message"}`,
/// `{"detail"}` (vLLM), or the body's text.
pub(crate) fn server_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error").unwrap_or(&v);
        e.get("message")
            .or_else(|| e.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| e.as_str().map(str::to_string))
            .or_else(|| v.get("detail").map(|d| d.to_string()))
    });
    trim(from_json.unwrap_or_else(|| body.trim().to_string()))
}

fn trim(mut s: String) -> String {
    if s.len() > MESSAGE_MAX {
        let mut end = MESSAGE_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str(" …");
    }
    s
}

/// Classifies an error answer by its status and body. `attempts` counts the requests made so far.
pub(crate) fn classify(status: u16, body: &str, model: &str, attempts: u32) -> ModelError {
    let message = server_message(body);
    let lower = message.to_lowercase();
    if is_context_overflow(&lower) {
        return ModelError::ContextOverflow { message };
    }
    if lower.contains("model") && (lower.contains("not found") || lower.contains("does not exist"))
        || status == 404 && lower.contains("model")
    {
        return ModelError::ModelNotFound {
            model: model.to_string(),
            message,
        };
    }
    match status {
        401 | 403 => ModelError::Unauthorized { status, message },
        429 | 500..=599 => ModelError::Server {
            status,
            attempts,
            message,
        },
        _ => ModelError::BadRequest { status, message },
    }
}

/// llama-server: "the request exceeds the available context size", "… context length …"; vLLM: "maximum
/// context length"; OpenAI: `context_length_exceeded`.
fn is_context_overflow(lower: &str) -> bool {
    lower.contains("exceeds the available context size")
        || lower.contains("context length")
        || lower.contains("context_length_exceeded")
        || lower.contains("context size")
        || lower.contains("context window")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_overflow_is_classified_whatever_the_status() {
        let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert!(matches!(
            classify(400, body, "m", 1),
            ModelError::ContextOverflow { .. }
        ));
        assert!(matches!(
            classify(500, body, "m", 1),
            ModelError::ContextOverflow { .. }
        ));
    }

    #[test]
    fn vllm_overflow_and_missing_model_are_classified() {
        let body = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}"#;
        assert!(matches!(
            classify(400, body, "m", 1),
            ModelError::ContextOverflow { .. }
        ));
        let body = r#"{"object":"error","message":"The model `qwen` does not exist.","type":"NotFoundError","code":404}"#;
        assert!(matches!(
            classify(404, body, "qwen", 1),
            ModelError::ModelNotFound { .. }
        ));
        let body = r#"{"error":"model \"qwen\" not found, try pulling it first"}"#;
        let e = classify(404, body, "qwen", 1);
        assert!(matches!(e, ModelError::ModelNotFound { .. }));
        assert!(e.to_string().contains("try pulling it first"));
    }

    #[test]
    fn other_statuses_keep_the_servers_message() {
        let e = classify(422, r#"{"detail":[{"msg":"field required"}]}"#, "m", 1);
        assert!(matches!(e, ModelError::BadRequest { status: 422, .. }));
        assert!(e.to_string().contains("field required"), "{e}");
        assert!(matches!(
            classify(503, "overloaded", "m", 3),
            ModelError::Server {
                status: 503,
                attempts: 3,
                ..
            }
        ));
        assert!(matches!(
            classify(401, "", "m", 1),
            ModelError::Unauthorized { .. }
        ));
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let body = "é".repeat(3000);
        let m = server_message(&body);
        assert!(m.len() <= MESSAGE_MAX + 4);
        assert!(m.ends_with(" …"));
    }
}
