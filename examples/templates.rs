//! Template learning over a directory of chat templates (llama.cpp's `models/templates/`): for each, what
//! was learned (or why not), and whether vouch recovers a call rendered by the template itself, with and
//! without the learned syntax. Prints a Markdown table.
//!
//! `cargo run --example templates -- DIR`

use std::path::PathBuf;

use serde_json::{json, Value};
use vouch::toolcall::learn::{self, Shape};
use vouch::toolcall::{recover_with, Message, ToolSpec};

fn tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "end_line": {"type": "integer"}
                },
                "required": ["path"]
            }
        }
    })
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', "\\n")
}

fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or_else(|| anyhow::anyhow!("usage: templates DIR"))?,
    );
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    let tools = ToolSpec::from_openai(&json!([tool()]))?;
    let want = json!({"path": "src/lib.rs", "end_line": 5});
    println!("| template | learned | known format | recovered | how |");
    println!("|---|---|---|---|---|");
    let (mut n, mut learned_n, mut recovered_n) = (0, 0, 0);
    for path in paths {
        n += 1;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let template = std::fs::read_to_string(&path)?;
        let learned = learn::learn(&template);
        let what = match &learned {
            Ok(l) => {
                learned_n += 1;
                let shape = match &l.shape {
                    Shape::Json { name_field, .. } => match name_field {
                        Some(f) => format!("JSON, name at {}", f.join(".")),
                        None => "JSON, name as key".to_string(),
                    },
                    Shape::TagJson { name_to_args } => {
                        format!("tag, name, `{}`, JSON", cell(name_to_args.trim()))
                    }
                    Shape::Tagged { key_to_value, .. } => {
                        format!("tagged keys, `{}` to value", cell(key_to_value.trim()))
                    }
                };
                format!("`{}` … `{}`; {shape}", cell(&l.open), cell(&l.close))
            }
            Err(e) => cell(&format!("not learned: {e}")),
        };
        let known = learned
            .as_ref()
            .ok()
            .and_then(|l| l.known_format.clone())
            .unwrap_or_else(|| "-".into());
        let rendered = learn::render_calls(
            &template,
            &[("read_file".to_string(), want.clone())],
            &[tool()],
        );
        let (ok, how) = match rendered {
            Ok(text) if text.contains("read_file") => {
                let msg = Message {
                    content: Some(&text),
                    ..Message::default()
                };
                let plain = recover_with(&msg, &tools, None, None);
                let with = recover_with(&msg, &tools, None, learned.as_ref().ok());
                let good = |r: &vouch::toolcall::Recovered| {
                    r.calls.len() == 1
                        && r.calls[0].name == "read_file"
                        && r.calls[0].arguments == want
                };
                if good(&plain) {
                    (true, format!("{}", plain.format))
                } else if good(&with) {
                    (true, format!("{} (learned only)", with.format))
                } else {
                    (false, format!("no: read as {}", with.format))
                }
            }
            Ok(_) => (false, "the template renders no call".to_string()),
            Err(e) => (false, format!("render failed: {}", cell(&e.to_string()))),
        };
        if ok {
            recovered_n += 1;
        }
        let what: String = what.chars().take(160).collect();
        println!(
            "| {name} | {what} | {known} | {} | {} |",
            if ok { "yes" } else { "no" },
            cell(&how)
        );
    }
    println!();
    println!("{n} templates: {learned_n} learned, {recovered_n} rendered calls recovered.");
    Ok(())
}
