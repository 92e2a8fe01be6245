//! What real servers leak (an eaten opening tag, a call after prose, calls glued together) and the
//! opposite failure: a JSON object in an explanation that names a tool is not a call unless it stands
//! where a call stands (the rule is on `keep_standing_bare` in recover.rs).

use pretty_assertions::assert_eq;

use super::*;

const READ_A: &str = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}";
const READ_B: &str = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"b.rs\"}}";

fn two_reads() -> Value {
    json!([
        {"name": "read_file", "arguments": {"path": "a.rs"}},
        {"name": "read_file", "arguments": {"path": "b.rs"}},
    ])
}

#[test]
fn a_hermes_call_whose_opening_tag_was_eaten_is_read_with_its_closing_tag_cut() {
    let text = format!("{READ_A}\n</tool_call>");
    assert_eq!(
        content(&text),
        expect(
            "hermes",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            ""
        )
    );
    let two = format!("{READ_A}\n</tool_call>\n{READ_B}</tool_call>");
    assert_eq!(content(&two), expect("hermes", two_reads(), ""));
}

#[test]
fn a_call_after_a_paragraph_of_prose_is_read_and_the_prose_kept() {
    let prose = "The failing test calls add() with two positive numbers, and the result is their \
                 difference. I will read the module first to see how add is written, then fix it.";
    let text = format!("{prose}\n\n<tool_call>\n{READ_A}\n</tool_call>");
    assert_eq!(
        content(&text),
        expect(
            "hermes",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            prose
        )
    );
    let bare = format!("{prose}\n\n{READ_A}");
    assert_eq!(
        content(&bare),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            prose
        )
    );
}

#[test]
fn two_calls_glued_without_a_separator_are_both_read() {
    let tags = format!("<tool_call>{READ_A}</tool_call><tool_call>{READ_B}</tool_call>");
    assert_eq!(content(&tags), expect("hermes", two_reads(), ""));
    let inside = format!("<tool_call>{READ_A}{READ_B}</tool_call>");
    assert_eq!(content(&inside), expect("hermes", two_reads(), ""));
    let bare = format!("{READ_A}{READ_B}");
    assert_eq!(content(&bare), expect("json", two_reads(), ""));
}

#[test]
fn a_fenced_json_call_in_an_explanation_with_text_after_it_is_no_call() {
    let text = format!(
        "To read a file, the agent sends a call like this:\n\n```json\n{READ_A}\n```\n\nThe server answers with the file's text."
    );
    assert_eq!(content(&text), expect("none", json!([]), &text));
}

#[test]
fn a_call_inside_a_sentence_that_goes_on_is_no_call() {
    let json_inline = format!("The agent sends {READ_A} and gets the text back.");
    assert_eq!(
        content(&json_inline),
        expect("none", json!([]), &json_inline)
    );
    let python_inline = "Some explanation.\n[read_file(path=\"a.rs\")] is how you would call it.";
    assert_eq!(
        content(python_inline),
        expect("none", json!([]), python_inline)
    );
}

#[test]
fn a_fenced_call_that_ends_the_reply_is_a_call() {
    let text = format!("Reading it.\n\n```json\n{READ_A}\n```");
    assert_eq!(
        content(&text),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            "Reading it."
        )
    );
}

#[test]
fn a_marked_call_is_a_call_wherever_it_stands() {
    // The rule is for calls without a marker: a tagged call with prose after it is still a call.
    let text = format!("<tool_call>{READ_A}</tool_call> and then I will summarise.");
    assert_eq!(
        content(&text)["calls"],
        json!([{"name": "read_file", "arguments": {"path": "a.rs"}}])
    );
}
