//! The system prompt and the loop's fixed messages.
//!
//! The system prompt is byte-stable: no dates, no paths, no run-specific text, so a local server's prompt
//! cache reuses it from run to run and a transcript diff shows only what the model did.

/// The system prompt of every run.
pub const SYSTEM: &str = "\
You are a careful software engineer working in a git checkout of a repository. You fix one issue, described \
in the user's message, by calling tools. Every reply must be exactly one or more tool calls.

Tools:
- list_files, search, read_file: look around. Paths are relative to the repository root.
- edit: replace an exact piece of text in a file (old_string must match the file exactly, once).
- write_file: create a file or replace a whole file.
- run_tests: run the repository's tests (optionally a selection, in the test runner's syntax).
- submit: finish with verdict GO (the change is complete and the tests pass) or NO-GO (you could not do it), \
and a short summary of the change.

How to work:
1. Read the code the issue is about before changing it (the user's message may show it already).
2. Make the smallest change that fixes the issue. Keep the existing style.
3. Add a regression test that fails without your fix and passes with it. Do not weaken or delete tests.
4. Run the tests. Fix what fails.
5. Submit. Say NO-GO rather than GO when you are not sure the change is right.

Your change is verified independently after you submit: formatting, lint, the whole test suite, and a check \
that your new test fails without your fix. Claiming GO does not make a change pass.";

/// The system prompt of a guided run (`--strategy guided`): the model writes code, the harness does the rest.
pub const GUIDED_SYSTEM: &str = "\
You are a careful software engineer fixing one issue in a repository. You are shown the issue and the code \
it is about. Each reply is code in one fenced block, as asked: the corrected function or functions, \
complete, or a new test function. vouch puts your code into the files, runs the tests and tells you the \
result. Keep the existing style and names. Never weaken or delete tests.";

/// After a turn without a tool call.
///
/// The example is a real call that always works: small models copy a nudge's wording as a tool name
/// ("look around with list_files") and its placeholders as arguments (`path/to/file`).
pub const NO_CALL: &str = "Your reply had no tool call. Reply with a tool call of one of the tools \
list_files, search, read_file, edit, write_file, run_tests, submit. This one lists the repository's files: \
{\"name\": \"list_files\", \"arguments\": {}}";

/// After the third turn in a row without a tool call.
pub const NO_CALL_LAST: &str = "Three replies in a row had no tool call. The run stops if the next reply \
has none either. Reply with exactly one tool call, such as {\"name\": \"list_files\", \"arguments\": {}} to \
see the files, or submit with verdict NO-GO if you cannot go on.";

/// After the same call three times in a row.
pub const REPEATED: &str = "You made the same call with the same arguments three times in a row, and got \
the same answer. The run stops if you repeat it again. Do something different: read another part of the \
file, change the code, run the tests, or submit.";

/// When the same call was refused with the same answer `times` times, among other calls.
pub fn refused_again(name: &str, times: u32) -> String {
    format!(
        "You made the same {name} call {times} times and it was refused each time with the same answer. \
         The run stops if you make it again. Read that answer: it says what is wrong and what to do instead \
         (if an edit looks applied already, run the tests)."
    )
}

/// When a run has gone too long without the tests' result changing.
pub fn forcing(turns: u32, left: u32) -> String {
    format!(
        "The tests' result has not changed in {turns} turns. For the next {left} turns only edit, \
         write_file and submit are available: make the change now, or submit with verdict NO-GO and say what \
         blocks you. The run stops as stalled otherwise."
    )
}

/// When the last turns repeat the same calls with the same results.
pub fn cycle(cycle: &str) -> String {
    format!(
        "You are going round in a cycle: {cycle}, with the same results each time. Repeating it will not \
         change the outcome, and the run stops if you go round it again. Read the result of the last call \
         carefully and do something different: read the file again to see its current text, change another \
         place, or submit with verdict NO-GO and say what blocks you."
    )
}

/// Calls of a text reply after one that changes files or submits: not run, each answered with this.
pub const HELD: &str =
    "Not run: wait for the result of the earlier call. Call this again in your next \
reply if you still need it.";

/// A call of a text reply that an earlier call of the same reply already made, name and arguments alike:
/// not run again (Qwen2.5-Coder 1.5B wrote 24 calls in one reply, most of them the same list_files).
pub fn same_in_reply(earlier: usize) -> String {
    format!("Not run: the same call as call {earlier} of this reply; its result is above.")
}

/// The tools the forcing phase allows (all are still offered).
pub const FORCING_TOOLS: [&str; 3] = ["edit", "write_file", "submit"];

/// The answer to a call of a tool the forcing phase does not offer.
pub fn not_available(name: &str) -> String {
    format!(
        "{name} is not available now: only edit, write_file and submit are. Change a file or submit."
    )
}

/// The answer to a call whose arguments are not JSON (the call is answered, not dropped).
pub fn unreadable_arguments(name: &str, raw: &str) -> String {
    let shown: String = raw.chars().take(80).collect();
    let more = if raw.chars().count() > 80 { "…" } else { "" };
    format!(
        "Not run: the arguments of this {name} call are not valid JSON (`{shown}{more}`). Call {name} again \
         with its arguments as one JSON object."
    )
}
