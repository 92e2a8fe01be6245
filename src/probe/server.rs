//! What the server says about itself: the models it lists (`GET /v1/models`, with llama-server's `meta`)
//! and llama-server's `GET /props` (per-slot context, slots, the chat template and its capabilities).

use anyhow::Result;
use serde_json::Value;

use super::http::Endpoint;
use super::report::Context;

/// What the two endpoints told.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub models: Vec<String>,
    pub llama_server: bool,
    pub context: Context,
    pub chat_template: Option<String>,
}

/// Asks both; an unreachable server is an error, an endpoint that does not answer is a gap.
pub async fn facts(ep: &Endpoint) -> Result<Facts> {
    let models = ep.get("/v1/models").await?;
    let props = ep.get("/props").await.ok().flatten().filter(|p| {
        [
            "default_generation_settings",
            "chat_template",
            "total_slots",
        ]
        .iter()
        .any(|k| p.get(k).is_some())
    });
    Ok(read(models.as_ref(), props.as_ref()))
}

/// The facts from the two bodies (pure, for tests).
pub fn read(models: Option<&Value>, props: Option<&Value>) -> Facts {
    let list: Vec<&Value> = models
        .and_then(|m| m.get("data").or_else(|| m.get("models")))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let ids = list
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect();
    let first = list.first();
    let meta = |key: &str| {
        first
            .and_then(|m| m.pointer(&format!("/meta/{key}")))
            .and_then(Value::as_u64)
    };
    // vLLM says `max_model_len`, LM Studio `loaded_context_length` / `max_context_length`.
    let listed_ctx = first.and_then(|m| {
        ["max_model_len", "loaded_context_length", "context_length"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_u64))
    });
    let p = |ptr: &str| props.and_then(|p| p.pointer(ptr));
    let n_ctx_slot = p("/default_generation_settings/n_ctx").and_then(Value::as_u64);
    let context = Context {
        advertised: n_ctx_slot.or(listed_ctx),
        n_ctx_slot,
        n_ctx_train: meta("n_ctx_train").or_else(|| {
            first
                .and_then(|m| m.get("max_context_length"))
                .and_then(Value::as_u64)
        }),
        slots: p("/total_slots").and_then(Value::as_u64),
        supports_tools: p("/chat_template_caps/supports_tools").and_then(Value::as_bool),
        measured: None,
    };
    Facts {
        models: ids,
        llama_server: props.is_some(),
        context,
        chat_template: p("/chat_template")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn llama_server_facts_are_read_from_models_and_props() {
        let models = json!({"data": [{"id": "smollm2", "meta": {"n_ctx_train": 8192}}]});
        let props = json!({
            "default_generation_settings": {"n_ctx": 2048},
            "total_slots": 4,
            "chat_template": "{{ x }}",
            "chat_template_caps": {"supports_tools": true}
        });
        let f = read(Some(&models), Some(&props));
        assert_eq!(f.models, ["smollm2"]);
        assert!(f.llama_server);
        assert_eq!(f.context.advertised, Some(2048));
        assert_eq!(f.context.n_ctx_train, Some(8192));
        assert_eq!(f.context.slots, Some(4));
        assert_eq!(f.context.supports_tools, Some(true));
        assert_eq!(f.chat_template.as_deref(), Some("{{ x }}"));
    }

    #[test]
    fn a_vllm_listing_gives_its_max_model_len() {
        let models = json!({"data": [{"id": "q", "max_model_len": 32768}]});
        let f = read(Some(&models), None);
        assert!(!f.llama_server);
        assert_eq!(f.context.advertised, Some(32768));
    }
}
