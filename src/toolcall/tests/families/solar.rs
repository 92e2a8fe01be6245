//! Solar Open.

use pretty_assertions::assert_eq;

use super::*;

const TWO_CALLS: &str = "<|think|>I should read the manifest, then look for main.<|end|>\
<|begin|>assistant<|tool_calls|>\
<|tool_call:begin|>call_a1<|tool_call:name|>read_file<|tool_call:args|>{\"path\": \"Cargo.toml\"}<|tool_call:end|>\
<|tool_call:begin|>call_a2<|tool_call:name|>search<|tool_call:args|>{\"pattern\": \"fn main\", \"path\": \".\"}<|tool_call:end|>\
<|calls|>";

#[test]
fn solar_open_calls_are_read_after_its_reasoning() {
    let mut want = expect(
        "solar-open",
        json!([
            {"name": "read_file", "arguments": {"path": "Cargo.toml"}},
            {"name": "search", "arguments": {"pattern": "fn main", "path": "."}},
        ]),
        "",
    );
    want["reasoning"] = json!("I should read the manifest, then look for main.");
    assert_eq!(content(TWO_CALLS), want);
}

#[test]
fn a_solar_open_call_inside_its_reasoning_is_not_made() {
    let text = "<|think|>Maybe <|tool_call:begin|>c1<|tool_call:name|>write_file<|tool_call:args|>\
{\"path\": \"x\", \"content\": \"\"}<|tool_call:end|> but no.<|end|><|begin|>assistant<|content|>The bug is in parse.";
    let got = content(text);
    assert_eq!(got["calls"], json!([]), "{got:#}");
    assert_eq!(got["format"], "none", "{got:#}");
}

#[test]
fn a_cut_off_solar_open_call_is_named() {
    let text = "<|tool_calls|><|tool_call:begin|>c1<|tool_call:name|>read_file<|tool_call:args|>{\"path\": \"src/li";
    let got = content(text);
    assert_eq!(got["calls"], json!([]), "{got:#}");
    assert_eq!(
        got["warnings"],
        json!(["a Solar Open tool call is cut off"]),
        "{got:#}"
    );
}

#[test]
fn an_end_tag_without_solar_reasoning_leaves_the_answer_alone() {
    // `<|end|>` closes every message of some templates (Phi): alone, it opens no reasoning block.
    let text = "I will submit now.\n<tool_call>{\"name\": \"submit\", \"arguments\": {\"summary\": \"done\"}}</tool_call><|end|>";
    let got = content(text);
    assert_eq!(got["format"], "hermes", "{got:#}");
    assert_eq!(got["calls"][0]["name"], "submit", "{got:#}");
    assert!(
        got["content"]
            .as_str()
            .is_some_and(|c| c.contains("I will submit now.")),
        "{got:#}"
    );
}

#[test]
fn solar_open_is_forced_by_its_name_and_aliases() {
    assert_eq!(Format::from_name("solar_open"), Some(Format::SolarOpen));
    assert_eq!(Format::from_name("solar"), Some(Format::SolarOpen));
    assert_eq!(
        forced(TWO_CALLS, Format::SolarOpen)["calls"][1]["name"],
        "search"
    );
}
