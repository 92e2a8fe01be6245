//! Robustness: no input makes recovery panic, and the work it does grows linearly with the input, for
//! the detector and for every parser forced onto text it was not written for. Work is the byte count
//! the scanners charge, not time, so these tests do not depend on the machine's load.

use proptest::prelude::*;

use super::super::recover::recover_counted;
use super::*;

/// Pieces of every format's syntax, so random text hits the parsers' paths and not only their exits.
const PIECES: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    ">",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<tool_calls>",
    "<tool_sep>",
    "<seed:tool_call>",
    "<minimax:tool_call>",
    "<invoke name=\"",
    "<parameter name=\"",
    "</invoke>",
    "<｜DSML｜invoke name=\"",
    "<｜DSML｜parameter name=\"k\" string=\"false\">",
    "<steptml:invoke name=",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|python_tag|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|tool_call_start|>",
    "<function_calls>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|channel|>",
    "<|start|>",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    " to=functions.",
    "<|constrain|>",
    "<|tool_call|>",
    "<TOOLCALL>",
    "<|START_ACTION|>",
    "functools",
    "<|tool_call>",
    "call:",
    "<|\"|>",
    "<tool_call|>",
    "<start_function_call>",
    "<escape>",
    "<think>",
    "</think>",
    "[THINK]",
    "[/THINK]",
    "```json\n",
    "```",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "\"",
    "'",
    ":",
    ",",
    "=",
    ";",
    "\n",
    " ",
    "\\",
    "name",
    "\"name\"",
    "\"arguments\"",
    "read_file",
    "list_files",
    "path",
    "a.rs",
    "function",
    "True",
    "null",
    "42",
    "-1.5e3",
    "é",
    "日本",
    "🚀",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(PIECES).prop_map(str::to_string),
        1 => any::<String>(),
    ]
}

fn text_of(pieces: &[String]) -> String {
    pieces.concat()
}

/// The work recovery does on `text`, detected and with each parser forced.
fn work(text: &str) -> Vec<u64> {
    let tools = agent();
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    let mut out = vec![recover_counted(&msg, &tools, None, None).1];
    for f in Format::PARSERS {
        out.push(recover_counted(&msg, &tools, Some(f), None).1);
    }
    let as_reasoning = Message {
        content: None,
        reasoning_content: Some(text),
        tool_calls: &[],
    };
    out.push(recover_counted(&as_reasoning, &tools, None, None).1);
    out
}

/// Asserts that doubling `unit` repeated `n` times at most doubles the work (with slack), and that the
/// work is a bounded multiple of the length.
fn assert_linear(unit: &str, n: usize) {
    let small = unit.repeat(n);
    let large = unit.repeat(2 * n);
    let (ws, wl) = (work(&small), work(&large));
    for (k, (s, l)) in ws.iter().zip(&wl).enumerate() {
        let parser = if k == 0 {
            "detected".to_string()
        } else if k <= Format::PARSERS.len() {
            Format::PARSERS[k - 1].to_string()
        } else {
            "reasoning".to_string()
        };
        assert!(
            *l <= s * 5 / 2 + 4096,
            "{parser}: work grew from {s} to {l} when {unit:?} x{n} doubled"
        );
        assert!(
            *l <= 200 * large.len() as u64 + 4096,
            "{parser}: work {l} for {} bytes of {unit:?}",
            large.len()
        );
    }
}

#[test]
fn adversarial_repetitions_cost_linear_work() {
    for unit in [
        "<tool_call>",
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {",
        "{",
        "[",
        "{\"name\":",
        "{\"name\": [1, ",
        "[{\"name\": \"a\", \"arguments\": \"",
        "<function=a>",
        "<function=a>\n<parameter=b>x",
        "<tool_call>a<arg_key>b</arg_key><arg_value>",
        "<tool_call>a<arg_key>",
        "<invoke name=\"a\"><parameter name=\"b\">",
        "[TOOL_CALLS]",
        "[TOOL_CALLS]a[ARGS]{\"x\": [",
        "<|python_tag|>{\"name\": \"x\", \"parameters\": {",
        "[a(",
        "[read_file(path=",
        "<|python_start|>[read_file(path='",
        "<|channel|>",
        "<|message|>",
        "<|start|>assistant to=functions.a<|message|>{",
        " to=functions.read_file json{",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁begin｜>a<｜tool▁sep｜>{",
        "<|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>{",
        "<|tool_call>call:a{k:<|\"|>",
        "<think>",
        "</think>",
        "'",
        "\"",
        "\\",
        "functools[",
        "<function=a>{\"b\": ",
        // Calls inline in prose on one line: each one's line was searched for afresh.
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} is how ",
    ] {
        assert_linear(unit, 2000);
    }
}

/// F-35 taken to the extreme.
#[test]
fn ten_thousand_unclosed_tool_calls_are_parsed_quickly_in_work() {
    let text = "<tool_call>".repeat(10_000);
    let (r, steps) = recover_counted(
        &Message {
            content: Some(&text),
            ..Message::default()
        },
        &agent(),
        None,
        None,
    );
    assert_eq!(r.calls, vec![]);
    assert!(
        steps < 40 * text.len() as u64,
        "{steps} steps for {} bytes",
        text.len()
    );
}

/// A 4 MB reply of every hostile shape at once, on one line and on many, with a real call at its very end:
/// recovery finds the call in work linear in the length (the 4 MB reply took 67.5 s before).
#[test]
fn a_4_mb_hostile_reply_with_a_call_at_its_end_costs_linear_work() {
    let shapes = [
        "{",
        "<tool_call>",
        "[",
        "he said \"yes\" and 'no' ",
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} is how ",
        "{\"name\": \"x\"} ",
    ];
    let mut text = String::new();
    for (k, unit) in shapes.iter().enumerate() {
        text.push_str(&unit.repeat((4 << 20) / shapes.len() / unit.len()));
        if k % 2 == 1 {
            text.push('\n');
        }
    }
    // A bare call, so that every parser reads the whole reply before the JSON one finds it.
    text.push_str("\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}");
    let (r, steps) = recover_counted(
        &Message {
            content: Some(&text),
            ..Message::default()
        },
        &agent(),
        None,
        None,
    );
    assert_eq!(
        r.calls,
        vec![super::super::Call {
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "a.rs"}),
            unclosed: false,
        }]
    );
    assert!(
        steps < 40 * text.len() as u64,
        "{steps} steps for {} bytes",
        text.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn recovery_never_panics_and_never_names_a_tool_not_offered(
        pieces in proptest::collection::vec(piece(), 0..60),
        native_args in any::<String>(),
    ) {
        let text = text_of(&pieces);
        let tools = agent();
        let calls = [native("read_file", &native_args)];
        for msg in [
            Message { content: Some(&text), ..Message::default() },
            Message { content: None, reasoning_content: Some(&text), tool_calls: &[] },
            Message { content: Some(&text), reasoning_content: Some(&text), tool_calls: &calls },
        ] {
            let r = recover(&msg, &tools, None);
            for c in &r.calls {
                prop_assert!(tools.iter().any(|t| t.name == c.name), "{} not offered", c.name);
                prop_assert!(c.arguments.is_object());
            }
            if !r.calls.is_empty() {
                prop_assert!(r.format != Format::None);
            }
        }
        for f in Format::PARSERS {
            let msg = Message { content: Some(&text), ..Message::default() };
            let r = recover(&msg, &tools, Some(f));
            prop_assert!(r.calls.iter().all(|c| c.arguments.is_object()));
        }
    }

    #[test]
    fn work_on_a_repeated_random_pattern_grows_linearly(
        pieces in proptest::collection::vec(piece(), 1..8),
    ) {
        let unit = text_of(&pieces);
        prop_assume!(!unit.is_empty());
        let n = (2000 / unit.len()).max(8);
        assert_linear(&unit, n);
    }
}
