//! The needle test: a unique code planted at a depth of a long document, asked back, judged verbatim.

use serde_json::{json, Value};

use super::http::Endpoint;
use super::report::Needle;
use super::text;

/// One needle per depth in a document of `total` tokens; the depths are where the needle sits.
pub async fn run(ep: &Endpoint, total: u64, depths: &[u64], per_sentence: f64) -> Vec<Needle> {
    let mut out = Vec::new();
    for &depth in depths {
        let n = text::needle_document(total, depth, per_sentence);
        let fields = json!({
            "messages": [
                {"role": "system", "content": "Answer with the exact code only."},
                {"role": "user", "content": format!(
                    "{}\n\nWhat is the secret access code in the text above? Reply with the code only.",
                    n.document
                )}
            ],
            "temperature": 0,
            "max_tokens": 24,
        });
        out.push(match ep.chat(fields).await {
            Ok(reply) => Needle {
                depth_tokens: depth,
                prompt_tokens: reply
                    .body
                    .pointer("/usage/prompt_tokens")
                    .and_then(Value::as_u64),
                found: text::found_verbatim(reply.content(), &n.code),
                error: None,
            },
            Err(e) => Needle {
                depth_tokens: depth,
                prompt_tokens: None,
                found: false,
                error: Some(format!("{e:#}")),
            },
        });
    }
    out
}

/// The deepest depth retrieved verbatim with every shallower one retrieved too.
pub fn measured(needles: &[Needle]) -> Option<u64> {
    let mut sorted: Vec<&Needle> = needles.iter().collect();
    sorted.sort_by_key(|n| n.depth_tokens);
    sorted
        .iter()
        .take_while(|n| n.found)
        .last()
        .map(|n| n.prompt_tokens.unwrap_or(n.depth_tokens))
}
