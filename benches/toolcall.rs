//! Tool-call recovery cost on a long reply: detection alone (no call to find) and detection plus parsing
//! (five calls). Target: at most 1 ms each. And hostile replies of 1 MB and 4 MB (unclosed braces and
//! openers, brackets, quotes, calls inline in prose, a call after megabytes of junk): the 4 MB case should
//! take about four times the 1 MB one, not sixteen. `cargo bench --bench toolcall`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vouch::toolcall::{recover, Message, ToolSpec};
use vouch::tools::definitions as agent_tools;

/// About 32 KB of the prose and code a coding model writes: Markdown, Rust with generics and braces,
/// HTML, JSON that is not a call.
fn prose(bytes: usize) -> String {
    let paragraph = "The scheduler keeps a `Vec<Pod>` per node and compares `len(pods) < limit` before it \
        admits another one; see <b>Scheduling</b> in the docs. A config such as {\"name\": \"vouch\", \
        \"version\": 2} is data, not a call, and [1, 2, 3] is a list.\n\n```rust\nimpl<T: Ord> Queue<T> {\n    \
        pub fn push(&mut self, item: T) -> Result<(), Error> {\n        if self.items.len() >= self.cap { \
        return Err(Error::Full); }\n        self.items.push(item);\n        Ok(())\n    }\n}\n```\n\n";
    let mut out = String::with_capacity(bytes + paragraph.len());
    while out.len() < bytes {
        out.push_str(paragraph);
    }
    out
}

/// The prose with five Qwen3-Coder calls spread through it.
fn with_five_calls(bytes: usize) -> String {
    let text = prose(bytes);
    let step = text.len() / 5;
    let mut out = String::with_capacity(text.len() + 2048);
    let mut from = 0;
    for k in 0..5 {
        let to = text[..(k + 1) * step]
            .rfind("\n\n")
            .map_or((k + 1) * step, |i| i + 2);
        out.push_str(&text[from..to]);
        out.push_str(&format!(
            "<tool_call>\n<function=edit>\n<parameter=path>\nsrc/queue_{k}.rs\n</parameter>\n\
             <parameter=old_string>\n        if self.items.len() >= self.cap {{\n</parameter>\n\
             <parameter=new_string>\n        if self.items.len() > self.cap {{ // <= was wrong\n</parameter>\n\
             <parameter=replace_all>\nfalse\n</parameter>\n</function>\n</tool_call>\n"
        ));
        from = to;
    }
    out.push_str(&text[from..]);
    out
}

/// About `bytes` of one hostile shape.
fn hostile(shape: &str, bytes: usize) -> String {
    let unit = match shape {
        "braces" => "{",
        "openers" => "<tool_call>",
        "brackets" => "[",
        "quotes" => "he said \"yes\" and 'no' ",
        "inline" => "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}} is how ",
        _ => "{ [ \"x <tool_call> ",
    };
    let mut out = unit.repeat(bytes / unit.len());
    if shape == "junk_then_call" {
        out.push_str("\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>");
    }
    out
}

#[allow(
    clippy::panic,
    reason = "a benchmark that cannot build its input has nothing to measure"
)]
fn bench(c: &mut Criterion) {
    let tools = match ToolSpec::from_openai(&agent_tools()) {
        Ok(tools) => tools,
        Err(e) => panic!("agent tools: {e:#}"),
    };
    let none = prose(32 * 1024);
    let five = with_five_calls(32 * 1024);
    let mut group = c.benchmark_group("recover");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("32k_no_calls", |b| {
        let msg = Message {
            content: Some(&none),
            ..Message::default()
        };
        b.iter(|| {
            let r = recover(black_box(&msg), &tools, None);
            assert!(r.calls.is_empty());
            r
        })
    });
    group.bench_function("32k_five_calls", |b| {
        let msg = Message {
            content: Some(&five),
            ..Message::default()
        };
        b.iter(|| {
            let r = recover(black_box(&msg), &tools, None);
            assert_eq!(r.calls.len(), 5);
            r
        })
    });
    group.finish();
    let mut group = c.benchmark_group("recover_hostile");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for shape in [
        "braces",
        "openers",
        "brackets",
        "quotes",
        "inline",
        "junk_then_call",
    ] {
        for mb in [1, 4] {
            let text = hostile(shape, mb << 20);
            let msg = Message {
                content: Some(&text),
                ..Message::default()
            };
            group.bench_function(format!("{shape}_{mb}mb"), |b| {
                b.iter(|| recover(black_box(&msg), &tools, None))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
