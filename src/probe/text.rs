//! The prompts the probe sends: filler documents of a given length in tokens, each opened by a nonce so no
//! two requests share a cached prefix, and the needle planted in them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::http::Endpoint;

/// Tokens per character assumed when the server cannot count them (`/tokenize`).
const CHARS_PER_TOKEN: f64 = 4.0;

/// A fresh string no earlier request used: a cold prompt starts with one.
pub fn nonce() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{:x}{:04x}",
        (t as u64) ^ (std::process::id() as u64) << 20,
        n
    )
}

/// One filler sentence; varied so a model cannot shortcut a document.
fn sentence(i: usize) -> String {
    const PLACES: [&str; 8] = [
        "the harbour",
        "the north mill",
        "the old school",
        "the river bank",
        "the station",
        "the market hall",
        "the east farm",
        "the library",
    ];
    const THINGS: [&str; 6] = [
        "crates of apples",
        "bolts of cloth",
        "barrels of oil",
        "sacks of flour",
        "boxes of nails",
        "rolls of paper",
    ];
    format!(
        "Record {i}: on day {} the clerk at {} counted {} {}. ",
        i % 28 + 1,
        PLACES[i % PLACES.len()],
        (i * 37) % 500 + 3,
        THINGS[(i / 3) % THINGS.len()],
    )
}

/// How many tokens the filler takes, per sentence: counted by the server's `/tokenize` when it has one.
pub async fn tokens_per_sentence(ep: &Endpoint, llama_server: bool) -> f64 {
    let sample: String = (0..40).map(sentence).collect();
    if llama_server {
        if let Ok(v) = ep.post("/tokenize", &json!({"content": sample})).await {
            if let Some(n) = v.get("tokens").and_then(Value::as_array).map(Vec::len) {
                if n > 0 {
                    return n as f64 / 40.0;
                }
            }
        }
    }
    sample.len() as f64 / CHARS_PER_TOKEN / 40.0
}

/// A document of about `tokens` tokens, starting at sentence `from`.
pub fn filler(tokens: u64, per_sentence: f64, from: usize) -> String {
    let n = ((tokens as f64) / per_sentence.max(1.0)).ceil() as usize;
    (from..from + n.max(1)).map(sentence).collect()
}

/// The needle and the code it hides.
pub struct Needle {
    pub code: String,
    pub document: String,
}

/// A document of about `total` tokens with the needle planted after about `depth` tokens.
pub fn needle_document(total: u64, depth: u64, per_sentence: f64) -> Needle {
    let code = format!("VX-{}", nonce().to_uppercase());
    let before = filler(depth, per_sentence, 0);
    let after = filler(total.saturating_sub(depth), per_sentence, 100_000);
    let document = format!(
        "Session {}.\n{before}The secret access code is {code}. {after}",
        nonce()
    );
    Needle { code, document }
}

/// The needle was retrieved verbatim: the exact code, not a near miss.
pub fn found_verbatim(answer: &str, code: &str) -> bool {
    answer.contains(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }

    #[test]
    fn the_needle_is_planted_at_its_depth() {
        let n = needle_document(1000, 500, 10.0);
        let at = n.document.find(&n.code).unwrap();
        let frac = at as f64 / n.document.len() as f64;
        assert!((0.4..0.6).contains(&frac), "{frac}");
    }

    #[test]
    fn a_near_miss_is_not_found() {
        assert!(found_verbatim("The code is VX-AB12.", "VX-AB12"));
        assert!(!found_verbatim("The code is VX-AB1.", "VX-AB12"));
        assert!(!found_verbatim("the code is vx-ab12", "VX-AB12"));
    }
}
