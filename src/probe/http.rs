//! The probe's own HTTP: plain JSON requests whose replies are kept whole.
//!
//! The probe must see what the server really sent (`tool_calls` beside `content`, `timings`, `/props`), ask
//! for things the agent's client never sends (`tool_choice`, `ignore_eos`, `id_slot`) and time each request,
//! so it does not go through `model::Client`, which turns replies into turns.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _, Result};
use serde_json::{json, Value};

/// One endpoint, with the extra fields every chat request carries (`id_slot` on a llama-server with slots).
pub struct Endpoint {
    http: reqwest::Client,
    base: String,
    api_key: Option<String>,
    pub model: String,
    /// Fields added to every chat request.
    pub extra: serde_json::Map<String, Value>,
}

/// A chat reply and the wall time it took.
pub struct Reply {
    pub body: Value,
    pub elapsed: Duration,
}

impl Reply {
    /// `choices[0].message`.
    pub fn message(&self) -> &Value {
        self.body
            .pointer("/choices/0/message")
            .unwrap_or(&Value::Null)
    }

    pub fn content(&self) -> &str {
        self.message()
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// llama-server's `timings`, when sent.
    pub fn timing(&self, key: &str) -> Option<f64> {
        self.body.get("timings")?.get(key)?.as_f64()
    }
}

impl Endpoint {
    /// `endpoint` with or without a trailing `/v1`.
    pub fn new(
        endpoint: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Self> {
        let trimmed = endpoint.trim_end_matches('/');
        let base = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(anyhow!(
                "the endpoint {endpoint:?} is not an http:// or https:// URL"
            ));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(timeout)
            .build()
            .context("build the HTTP client")?;
        Ok(Endpoint {
            http,
            base,
            api_key,
            model: model.to_string(),
            extra: serde_json::Map::new(),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn auth(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }

    /// `GET path`: the JSON body of a 2xx answer, `None` for any other status or a body that is not JSON;
    /// an error only when the server cannot be reached.
    pub async fn get(&self, path: &str) -> Result<Option<Value>> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .auth(self.http.get(&url))
            .send()
            .await
            .with_context(|| format!("GET {url}"))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        Ok(resp.json::<Value>().await.ok())
    }

    /// `POST path` with a JSON body: the JSON answer of a 2xx, else an error with the server's message.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let resp = self
            .auth(self.http.post(&url))
            .json(body)
            .send()
            .await
            .with_context(|| format!("POST {url}"))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .with_context(|| format!("read POST {url}"))?;
        if !status.is_success() {
            let msg = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| text.chars().take(300).collect());
            return Err(anyhow!("HTTP {} from POST {url}: {msg}", status.as_u16()));
        }
        serde_json::from_str(&text).with_context(|| format!("POST {url}: the answer is not JSON"))
    }

    /// One non-streamed chat completion with `fields` (messages, tools, max_tokens, ...) plus the model and
    /// the endpoint's extra fields.
    pub async fn chat(&self, fields: Value) -> Result<Reply> {
        let mut body = json!({"model": self.model, "stream": false});
        if let (Some(b), Value::Object(f)) = (body.as_object_mut(), fields) {
            b.extend(f);
            for (k, v) in &self.extra {
                b.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let start = Instant::now();
        let body = self.post("/v1/chat/completions", &body).await?;
        let elapsed = start.elapsed();
        if let Some(err) = body.get("error") {
            return Err(anyhow!("the server answered with an error: {err}"));
        }
        Ok(Reply { body, elapsed })
    }
}
