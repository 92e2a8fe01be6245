//! Tool-call recovery through the real binary: `vouch toolcalls parse` with a chat template whose call
//! syntax none of vouch's parsers knows.

use std::process::{Command, Stdio};

/// A template with its own call syntax: `<<invoke>>NAME<<with>>{json}<</invoke>>`.
const TEMPLATE: &str = r#"{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.tool_calls %}{% for tc in m.tool_calls %}<<invoke>>{{ tc.function.name }}<<with>>{{ tc.function.arguments | tojson }}<</invoke>>{% endfor %}{% else %}{{ m.content }}{% endif %}
{% endfor -%}"#;

fn parse(args: &[&str], input: &str) -> (i32, serde_json::Value, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["toolcalls", "parse"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).ok();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn toolcalls_parse_reads_a_learned_syntax_given_its_template() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.jinja");
    std::fs::write(&path, TEMPLATE).unwrap();
    let reply = "Looking.\n<<invoke>>read_file<<with>>{\"path\": \"src/lib.rs\"}<</invoke>>";
    let (code, without, stderr) = parse(&[], reply);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(without["format"], "none");
    let (code, with, stderr) = parse(&["--template", path.to_str().unwrap()], reply);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        with,
        serde_json::json!({
            "format": "learned",
            "calls": [{"name": "read_file", "arguments": {"path": "src/lib.rs"}}],
            "content": "Looking."
        })
    );
}

#[test]
fn a_template_without_tool_calls_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.jinja");
    std::fs::write(&path, "{% for m in messages %}{{ m.content }}{% endfor %}").unwrap();
    let (code, _, stderr) = parse(&["--template", path.to_str().unwrap()], "hi");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("renders no tool calls"), "{stderr}");
}
