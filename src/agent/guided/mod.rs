//! The guided strategy (`--strategy guided`): the harness drives, the model writes code.
//!
//! A 0.5B or 1.5B coder asked to drive tools copies placeholders (`"old_string": "old string"`), calls
//! functions of the code as tools, plans six calls before any result and invents their results; asked
//! "here is the code and the issue, reply with the corrected function", the same model writes the right
//! fix in one short reply (measured on the benchmark's tasks). So this strategy asks for code, one step at a
//! time, and does everything else itself:
//! 1. **Fix**: the task and the text of the files it is about; the reply is the corrected function(s) in a
//!    fenced block.
//! 2. Each block goes where its definitions are: a block naming functions of a file is written into that
//!    file through `write_file` (so its guards hold, and part of a file merges by definition); a block of
//!    new test functions goes into the test file. The repository's tests run after every change.
//! 3. **Test**: once the tests pass, a regression test for the test file, as a block.
//! 4. When the tests pass with a new test, the change is submitted GO and the gate decides, bite check
//!    included. Every failure (a block that does not apply, failing tests, the gate's reasons) goes back to
//!    the model, short, with what to send next.
//!
//! What the 0.5B's replies taught (benchmark transcripts): code sent back as it was, comments reworded at
//! most, is asked for again at once, hotter, not answered; the repository's own tests stay as they are while
//! the rest of a block that rewrites one goes in; a test that fails with the fix comes out again, and goes
//! back in with the next fix alone, so a failing test never sits in the file for later turns. A block that
//! loads a source file is a test of it, never put into it; a JavaScript test written as a plain function gets
//! its runner's call, so it runs.
//!
//! The turns, wall time, transcript, commit and gate are the tool loop's.

mod asks;
mod blocks;

use std::collections::BTreeSet;

use serde_json::json;

use super::next_step::has_test_mark;
use super::{Agent, Flow, NudgeKind, Status, StopReason};
use crate::agent::transcript::Event;
use crate::gate::outcome::Claim;
use crate::tools::same_code::same_code;
use crate::tools::{definitions, merge};
use crate::tools::{Submission, TestResult, ToolError};
use asks::{ask_fix, ask_test, short_output, show_code};
pub(super) use asks::{first_message, focus, focus_defs, symptom};
pub(super) use blocks::is_code;
use blocks::{code_blocks, fence, is_test_code, is_test_name, register_js_tests, target};

/// What a turn's blocks changed.
#[derive(Debug, Default)]
struct Applied {
    /// A source file changed (not a test file, not only a test in a Rust source).
    fix: bool,
    /// The tests it added, by name.
    tests: Vec<String>,
    /// A test went into a source file (a Rust tests module): putting the sources back at base would take
    /// it out too, so only the gate can check that it bites.
    tests_in_sources: bool,
    /// Definitions the blocks added to source files where they replaced none of the files' own: code
    /// nothing calls.
    only_added: Vec<String>,
    /// A write did more than add definitions to a source file.
    changed_code: bool,
    /// The files it wrote and what they held before.
    undo: Vec<(String, String)>,
    /// One line for each write, for the commit's summary.
    done: Vec<String>,
    /// Existing tests the blocks rewrote, kept as they were (the blocks' other code went in).
    held: Vec<String>,
    /// Existing tests the blocks rewrote and nothing else, added as new tests: (existing, new name).
    renamed: Vec<(String, String)>,
}

impl Applied {
    /// Adds what more blocks changed (the files they wrote first keep their text from before both).
    fn extend(&mut self, more: Applied) {
        self.fix |= more.fix;
        self.only_added.extend(more.only_added);
        self.changed_code |= more.changed_code;
        self.tests.extend(more.tests);
        self.tests_in_sources |= more.tests_in_sources;
        for (rel, old) in more.undo {
            if !self.undo.iter().any(|(r, _)| *r == rel) {
                self.undo.push((rel, old));
            }
        }
        self.done.extend(more.done);
        self.held.extend(more.held);
        self.renamed.extend(more.renamed);
    }
}

/// Why a turn's blocks were not applied.
#[derive(Debug)]
enum NotApplied {
    /// The code is what the files have already (comments, docstrings and layout aside).
    Unchanged,
    /// What to tell the model.
    Refused(String),
}

/// The files of the task, split by the profile's test patterns, and their language's fence name.
pub(super) struct Files {
    pub sources: Vec<String>,
    pub tests: Vec<String>,
    /// Where the task points in the sources, for the ask ([`focus`]).
    pub focus: String,
    /// The definitions it points at, as (file, name) ([`focus_defs`]).
    pub focus_defs: Vec<(String, String)>,
    /// The task's sentence that shows the bug with a call, for the ask for a test ([`symptom`]).
    pub symptom: Option<String>,
}

/// Restarts in a row (the same code, or code the files have already) before the conversation starts afresh.
const AFRESH_AFTER: u32 = 3;

impl Agent<'_> {
    /// The guided run: a failing test first, then the fix, then the gate; until the gate passes a change
    /// or the limits stop it.
    pub(super) async fn run_guided(&mut self, files: Files) -> (Status, StopReason) {
        let lang = files
            .sources
            .iter()
            .chain(&files.tests)
            .map(|f| fence(f))
            .find(|f| !f.is_empty())
            .unwrap_or("");
        let test_file = files
            .tests
            .first()
            .or(files.sources.first())
            .cloned()
            .unwrap_or_default();
        let mut added_tests: BTreeSet<String> = BTreeSet::new();
        // A test of the run fails on the code as it was: the issue is shown, the fix comes next.
        let mut reproduced = false;
        // A fix is in and the tests passed with it before any test was written.
        let mut fixed_first = false;
        // A fix was tried since the test showed the issue: until then only the fix is taken, not more tests.
        let mut fix_tried = false;
        let mut done: Vec<String> = Vec::new();
        // The code of every reply so far: a small model sends the same wrong code again, turn after turn.
        let mut replies: Vec<Vec<String>> = Vec::new();
        let mut repeats = 0u32;
        // Restarts in a row without a reply that applied: the model copies its own replies.
        let mut stuck = 0u32;
        let mut tests_in_sources = false;
        // A test that failed with the fix in place, taken out: it goes back in with the next fix alone.
        let mut pending: Vec<String> = Vec::new();
        // The messages up to the ask of the step in progress: what a restart goes back to.
        let mut checkpoint;
        // The fix first: small coders write a corrected function well, and a test before it they write
        // for the behaviour the issue reports (`pytest.raises(IndexError)`), which passes and shows nothing.
        let ask = |_reproduced: bool, fixed_first: bool| {
            if fixed_first {
                ask_test(&test_file, lang, files.symptom.as_deref())
            } else {
                ask_fix(lang, &files.focus)
            }
        };
        self.nudge(NudgeKind::Guided, &ask(false, false));
        checkpoint = self.messages.len();
        loop {
            let turn = match self.next_turn().await {
                Ok(turn) => turn,
                Err(end) => return end,
            };
            self.messages.push(crate::model::ChatMessage::assistant(
                turn.content.clone(),
                Vec::new(),
            ));
            let blocks = code_blocks(&turn.content);
            if blocks.is_empty() {
                let again = ask(reproduced, fixed_first);
                self.nudge(
                    NudgeKind::Guided,
                    &format!("Your reply had no ```{lang} block. {again}"),
                );
                continue;
            }
            let unchanged = if replies.contains(&blocks) {
                // The same code again. A small model copies its own replies from the conversation (the
                // 0.5B sent one test eight times, at temperature 1.4 too, and copied a placeholder put in
                // its place): go back to the last step that worked, whose request the server has cached,
                // and sample it hotter (llama-server's default is 0.8).
                Some("the same code as an earlier reply")
            } else {
                None
            };
            let applied = match unchanged {
                Some(why) => Err(why),
                None => {
                    replies.push(blocks.clone());
                    match self.apply_blocks(&blocks, &files).await {
                        // The code sent back as it was (its comments reworded at most). Told so, the
                        // 0.5B sent it once more on 7 of 12 tasks: ask the last step again, hotter.
                        Err(NotApplied::Unchanged) => Err("the code as the files have it already"),
                        other => Ok(other),
                    }
                }
            };
            let applied = match applied {
                Err(why) => {
                    stuck += 1;
                    if stuck >= AFRESH_AFTER {
                        // Hotter did not help: the 1.5B sent the same code fourteen times at up to 1.4.
                        // What it copies is in the conversation; a new one holds the code as it is now.
                        stuck = 0;
                        replies.clear();
                        let state = self.guided_state(reproduced, fixed_first, &test_file);
                        let again = if self.gate_failed() {
                            format!(
                                "Reply with the corrected code (the function, or the test) in one ```{lang} \
                                 block, and nothing else."
                            )
                        } else if reproduced && !fixed_first {
                            format!("{}{}", self.focus_code(&files, lang), ask(true, false))
                        } else {
                            ask(reproduced, fixed_first)
                        };
                        self.start_afresh(&files, &format!("{state}{again}"), why);
                        checkpoint = self.messages.len();
                    } else {
                        self.restart_hotter(checkpoint, &mut repeats, why);
                    }
                    continue;
                }
                Ok(applied) => applied,
            };
            let mut applied = match applied {
                Ok(applied) => {
                    stuck = 0;
                    applied
                }
                // Taken as a restart above.
                Err(NotApplied::Unchanged) => continue,
                Err(NotApplied::Refused(why)) => {
                    let again = ask(reproduced, fixed_first);
                    self.nudge(NudgeKind::Guided, &format!("Not applied: {why}\n\n{again}"));
                    continue;
                }
            };
            if applied.fix && applied.tests.is_empty() && !applied.changed_code {
                // Only new functions in the sources (the 0.5B, asked for a test, wrote `function
                // testTheIssue() { assert... }`): nothing calls them, so nothing changed.
                self.undo(&applied.undo);
                let names: Vec<String> = applied
                    .only_added
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect();
                let what = if fixed_first {
                    format!(
                        "is a new function in the code, not a test: a test goes in `{test_file}`, written \
                         the way its tests are"
                    )
                } else {
                    "is a new function that nothing calls, so it changes nothing".to_string()
                };
                let again = ask(reproduced, fixed_first);
                self.nudge(
                    NudgeKind::Guided,
                    &format!("Not applied: {} {what}.\n\n{again}", names.join(", ")),
                );
                continue;
            }
            if reproduced && !fix_tried && !applied.fix && !applied.tests.is_empty() {
                // More tests where the fix was asked for (the 1.5B rewrote its failing test file nine times
                // running on the quick start's task): the test is there already; the fix comes next.
                self.undo(&applied.undo);
                let code = self.focus_code(&files, lang);
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "Not applied: vouch has your test already, and it fails on the current code as it \
                         should. Now the fix, not another test.\n\n{code}{}",
                        ask_fix(lang, &files.focus)
                    ),
                );
                continue;
            }
            fix_tried |= reproduced && applied.fix;
            if applied.fix && applied.tests.is_empty() && !pending.is_empty() {
                // The fix the failing test asked for: the test goes back in with it.
                if let Ok(more) = self.apply_blocks(&pending, &files).await {
                    applied.extend(more);
                }
            }
            if !applied.tests.is_empty() {
                pending.clear();
            }
            for (was, now) in &applied.renamed {
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "vouch kept the existing test `{was}` as it was (existing tests stay as they are) and \
                         added your version of it as the new test `{now}`."
                    ),
                );
            }
            if !applied.held.is_empty() {
                let names: Vec<String> = applied.held.iter().map(|n| format!("`{n}`")).collect();
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "vouch kept the existing test {} as it was (existing tests stay as they are) and \
                         put in the rest of your code.",
                        names.join(", ")
                    ),
                );
            }
            let (passed, output) = self
                .guided_call("run_tests", &json!({}), blocks.len())
                .await;
            let new_test = applied.tests.iter().any(|t| !added_tests.contains(t));
            // A new test that does not build, or calls what the code does not have (the 1.5B's test of a
            // `line_count` the crate never had), fails, but shows nothing of the issue; after a fix, asking
            // whether the fix is incomplete would point the model at the fix, when the test is what fails.
            let broken = self
                .settings
                .tests
                .as_ref()
                .and_then(|t| t.last())
                .as_ref()
                .and_then(does_not_run);
            let test_step = fixed_first || (!reproduced && new_test);
            if let Some(error) = broken.filter(|_| !passed && !applied.fix && test_step) {
                self.undo(&applied.undo);
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "Not applied: your test fails before it tests anything: {error}. A test calls the \
                         code as it is.\n\n{}",
                        ask(false, fixed_first)
                    ),
                );
                continue;
            }
            if !reproduced && !fixed_first {
                if !applied.fix && new_test && !passed {
                    // The issue shown by a failing test: now the fix, with the failure to go on.
                    reproduced = true;
                    added_tests.extend(applied.tests.iter().cloned());
                    done.extend(applied.done);
                    self.nudge(
                        NudgeKind::Guided,
                        &format!(
                            "Good: your test fails on the current code, so it shows the issue:\n{}\n\n{}{}",
                            short_output(&output),
                            self.focus_code(&files, lang),
                            ask(true, false)
                        ),
                    );
                    checkpoint = self.messages.len();
                    continue;
                }
                if applied.fix && passed && applied.tests.is_empty() {
                    // A fix first that keeps the tests passing: a test for it comes next.
                    fixed_first = true;
                    done.extend(applied.done);
                    self.nudge(NudgeKind::Guided, &ask(false, true));
                    checkpoint = self.messages.len();
                    continue;
                }
                if !(applied.fix && passed) {
                    self.undo(&applied.undo);
                    let why = if passed {
                        "Your test passes on the current code, so it does not show the issue; vouch took it \
                         out again. First fix the code."
                            .to_string()
                    } else {
                        format!(
                            "With your change the tests fail, so vouch undid it:\n{}",
                            short_output(&output)
                        )
                    };
                    self.nudge(
                        NudgeKind::Guided,
                        &format!("{why}\n\n{}", ask(false, false)),
                    );
                    continue;
                }
                // A fix and a test at once, and the tests pass: the bite check below decides.
            }
            if !passed && fixed_first && !applied.fix {
                // A test after the fix that fails: the test or the fix is wrong. The test comes out, so
                // that a corrected one is not refused as a rewrite and does not fail beside the old one
                // (the 0.5B's kept tests failed every later run on 5 of 12 tasks); a fix alone puts it
                // back.
                self.undo(&applied.undo);
                pending = blocks.clone();
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "With your test the tests fail:\n{}\n\nvouch took your test out again. If the test \
                         is wrong, reply with the corrected test; if the fix is incomplete, reply with the \
                         corrected function alone, and vouch puts your test back with it. One ```{lang} \
                         block, and nothing else.",
                        short_output(&output)
                    ),
                );
                continue;
            }
            added_tests.extend(applied.tests.iter().cloned());
            done.extend(applied.done.iter().cloned());
            tests_in_sources |= applied.tests_in_sources;
            if !passed {
                self.nudge(
                    NudgeKind::Guided,
                    &format!(
                        "The tests still fail:\n{}\n\n{} (If your test is what is wrong, reply with the \
                         corrected test instead.)",
                        short_output(&output),
                        ask_fix(lang, &files.focus)
                    ),
                );
                continue;
            }
            if added_tests.is_empty() {
                fixed_first = true;
                self.nudge(NudgeKind::Guided, &ask(false, true));
                checkpoint = self.messages.len();
                continue;
            }
            let quick = if tests_in_sources {
                None
            } else {
                self.passes_without_fix(&files).await
            };
            if let Some(why) = quick {
                // A test that does not bite is taken out again, so that the gate never sees it.
                if !applied.fix && !applied.tests.is_empty() {
                    self.undo(&applied.undo);
                    for t in &applied.tests {
                        added_tests.remove(t);
                    }
                    done.truncate(done.len().saturating_sub(applied.done.len()));
                }
                self.nudge(NudgeKind::Guided, &why);
                continue;
            }
            let summary = format!(
                "{}\n\nRegression test: {}.",
                done.join("\n"),
                added_tests.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            match self
                .settle(Submission {
                    claim: Claim::Go,
                    summary,
                })
                .await
            {
                Flow::Stop(status, stop) => return (status, stop),
                Flow::Repair | Flow::Continue(_) => {
                    // The gate's reasons are the last message; what to send follows them.
                    self.nudge(
                        NudgeKind::Guided,
                        &format!(
                            "Reply with the corrected code (the function, or the test) in one ```{lang} \
                             block, and nothing else."
                        ),
                    );
                    checkpoint = self.messages.len();
                }
            }
        }
    }

    /// Writes each block into its file. Err for the first that does not apply, its file left as it was
    /// (the blocks before it stay), or when nothing changed.
    async fn apply_blocks(
        &mut self,
        blocks: &[String],
        files: &Files,
    ) -> Result<Applied, NotApplied> {
        let mut applied = Applied::default();
        for (i, block) in blocks.iter().enumerate() {
            let Some(rel) = target(block, files, |r| self.read_rel(r)) else {
                return Err(NotApplied::Refused(
                    "vouch could not tell which file this code belongs in".to_string(),
                ));
            };
            let old = self.read_rel(&rel).unwrap_or_default();
            // The repository's own tests stay as they are (the 0.5B dropped an assertion of `test_mean`
            // by rewriting it); tests this run wrote may be corrected.
            let at_base = self.base_definitions(&rel);
            let hold = |n: &str| is_test_code(n) && at_base.contains(n);
            // Always by definition: a block that is the whole file keeps what it left out too (a module
            // docstring, a comment), and a block the file already has changes nothing.
            let (mut content, replaced, mut held, mut added) =
                match merge::merge_holding(&rel, &old, block, &hold) {
                    Some(m) => (m.text, m.replaced, m.held, Some(m.added)),
                    None if merge::same_definitions(&rel, &old, block) => continue,
                    None => (block.clone(), Vec::new(), Vec::new(), None),
                };
            if content == old && !held.is_empty() {
                // Nothing but existing tests rewritten (the 0.5B sent `test_median_of_odd_and_even_lengths`
                // with new assertions, three turns running): that is the new test it means, under a new
                // name, the existing one kept.
                if let Some((m, names)) = as_new_tests(&rel, &old, block, &held, &at_base, &hold) {
                    applied.renamed.extend(names);
                    (content, held, added) = (m.text, Vec::new(), Some(m.added));
                }
            }
            if content == old && !held.is_empty() {
                let names: Vec<String> = held.iter().map(|n| format!("`{n}`")).collect();
                return Err(NotApplied::Refused(format!(
                    "your code rewrites the existing test {} in `{rel}`; existing tests stay as they are. \
                     Write a new test function with a new name",
                    names.join(", ")
                )));
            }
            // A JavaScript test written as a plain function gets its runner's call.
            let mut registered = Vec::new();
            if files.tests.contains(&rel) {
                let before = definitions::defined(&rel, &old).unwrap_or_default();
                let new: Vec<String> = definitions::defined(&rel, &content)
                    .unwrap_or_default()
                    .difference(&before)
                    .cloned()
                    .collect();
                if let Some((text, names)) = register_js_tests(&rel, &content, &new) {
                    (content, registered) = (text, names);
                }
            }
            if same_code(&rel, &old, &content) {
                continue;
            }
            applied.held.extend(held);
            let args = json!({"path": rel, "content": content});
            let (ok, text) = self.guided_call("write_file", &args, i).await;
            if !ok {
                return Err(NotApplied::Refused(text));
            }
            if text.starts_with("Unchanged") {
                continue;
            }
            if !applied.undo.iter().any(|(r, _)| *r == rel) {
                applied.undo.push((rel.clone(), old.clone()));
            }
            let after = definitions::defined(&rel, &content).unwrap_or_default();
            let before = definitions::defined(&rel, &old).unwrap_or_default();
            let test_block = has_test_mark(block) || files.tests.contains(&rel);
            applied.tests_in_sources |= test_block && files.sources.contains(&rel);
            if test_block {
                let names: Vec<String> = after
                    .difference(&before)
                    .map(|n| n.trim_start_matches("test ").to_string())
                    .collect();
                if names.is_empty() {
                    applied.tests.push(format!("a test in {rel}"));
                }
                applied.tests.extend(names);
            }
            // Code of a source file changed: a block without tests, or one that replaced a function of
            // the sources beside its tests (a Rust fix with its tests module).
            applied.fix |= files.sources.contains(&rel)
                && (!test_block
                    || replaced
                        .iter()
                        .any(|n| !is_test_name(n) && !n.starts_with("mod tests")));
            match added {
                // Merged by definition, adding and replacing none: only new code.
                Some(added)
                    if files.sources.contains(&rel)
                        && !test_block
                        && replaced.is_empty()
                        && !added.is_empty() =>
                {
                    applied.only_added.extend(added)
                }
                _ => applied.changed_code = true,
            }
            applied.done.push(format!("{rel}: {}", first_line(&text)));
            for name in registered {
                applied.done.push(format!(
                    "{rel}: `{name}` registered as a test, it was never called"
                ));
            }
        }
        if applied.undo.is_empty() {
            return Err(NotApplied::Unchanged);
        }
        Ok(applied)
    }

    /// The code the task points at as the files have it now, for [`show_code`]: its focus definitions, else
    /// the only source file when it is short; empty when there is neither.
    fn focus_code(&self, files: &Files, lang: &str) -> String {
        let mut items: Vec<(String, String)> = files
            .focus_defs
            .iter()
            .filter_map(|(rel, name)| {
                let text = self.read_rel(rel)?;
                let code = merge::definition(rel, &text, name)?;
                Some((format!("`{name}` as {rel} has it now"), code))
            })
            .collect();
        if items.is_empty() {
            if let [rel] = files.sources.as_slice() {
                if let Some(text) = self.read_rel(rel).filter(|t| t.len() <= 4000) {
                    items.push((format!("{rel} as it is now"), text));
                }
            }
        }
        show_code(lang, &items)
    }

    /// The definitions a file has at the run's base; empty for a file new since.
    fn base_definitions(&self, rel: &str) -> BTreeSet<String> {
        crate::git::open(&self.wt.repo)
            .ok()
            .and_then(|repo| crate::git::file_text(&repo, self.wt.base, rel))
            .and_then(|text| definitions::defined(rel, &text))
            .unwrap_or_default()
    }

    /// Puts files back as they were before a turn's blocks.
    fn undo(&mut self, undo: &[(String, String)]) {
        for (rel, text) in undo {
            if let Ok(path) = self.workspace.resolve(rel) {
                let _ = std::fs::write(path.abs, text);
            }
        }
    }

    /// The quick bite check before the gate's: with the sources back at base (the new tests kept), the
    /// tests must fail. Some(what to tell the model) when they pass; None when they fail or it cannot
    /// tell (the gate decides then).
    async fn passes_without_fix(&mut self, files: &Files) -> Option<String> {
        let repo = crate::git::open(&self.wt.repo).ok()?;
        let changed = self.workspace.changed().paths;
        let mut saved = Vec::new();
        for rel in files.sources.iter().filter(|r| changed.contains(*r)) {
            let now = self.read_rel(rel)?;
            let base = crate::git::file_text(&repo, self.wt.base, rel)?;
            if now == base {
                continue;
            }
            let abs = self.workspace.resolve(rel).ok()?.abs;
            saved.push((abs, now, base));
        }
        if saved.is_empty() {
            return Some(
                "Your change does not touch the code the issue is about. Fix the issue in the code: reply \
                 with the corrected function."
                    .to_string(),
            );
        }
        let mut swapped = Vec::new();
        for (abs, _, base) in &saved {
            if std::fs::write(abs, base).is_ok() {
                swapped.push(abs.clone());
            }
        }
        let mut submitted = None;
        let result = self.call("run_tests", &json!({}), &mut submitted).await;
        for (abs, now, _) in &saved {
            if std::fs::write(abs, now).is_err() {
                // The fix could not be put back: the gate would judge the base text; stop here.
                return None;
            }
        }
        let passed = result.is_ok();
        self.transcript.event(&Event::Tool {
            turn: self.turns,
            id: format!("guided_{}_bite", self.turns),
            name: "run_tests".to_string(),
            arguments: json!({"without_fix": true}),
            ok: passed,
            result: if passed {
                "the tests pass without the fix".to_string()
            } else {
                "the tests fail without the fix".to_string()
            },
        });
        self.ui.line(&format!(
            "  turn {}: the tests {} without the fix",
            self.turns,
            if passed { "pass" } else { "fail" }
        ));
        passed.then(|| {
            "Your new test passes on the old code too (vouch ran it without your fix), so it does not \
             test the issue; vouch took it out again. Write a test that fails on the old code: call the \
             function the way the issue describes and assert what the issue says it should do. Reply with \
             that test function alone in one code block."
                .to_string()
        })
    }

    /// Goes back to the conversation's first `len` messages (a request sent before, so the server has it
    /// cached); the next turn asks that again, sampled hotter for each of the run's `repeats` (llama-server's
    /// default is 0.8). Recorded as a nudge.
    fn restart_hotter(&mut self, len: usize, repeats: &mut u32, why: &str) {
        *repeats += 1;
        self.temperature = Some((0.8 + 0.2 * f64::from(*repeats)).min(1.4));
        let dropped = self.messages.len().saturating_sub(len);
        self.messages.truncate(len);
        self.sent = self.sent.min(len);
        self.transcript.event(&Event::Nudge {
            turn: self.turns,
            kind: NudgeKind::Guided,
            text: format!(
                "({why}: back to the last step, {dropped} messages dropped, sampled at temperature {:.1})",
                self.temperature.unwrap_or_default()
            ),
        });
        self.ui.line(&format!(
            "  turn {}: {why}; asking the last step again, hotter",
            self.turns
        ));
    }

    /// Whether the last gate run failed the change.
    fn gate_failed(&self) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.verdict == crate::gate::outcome::Verdict::Fail)
    }

    /// Where the run stands, in a sentence or two, for a conversation started afresh: the gate's reasons
    /// when it failed the change, else the step reached.
    fn guided_state(&self, reproduced: bool, fixed_first: bool, test_file: &str) -> String {
        if let Some(gate) = self.gate.as_ref().filter(|_| self.gate_failed()) {
            let reasons = gate.reasons.join("; ");
            return format!(
                "The code above holds your change, and vouch's gate failed it: {}\n\n",
                crate::tools::cap(&reasons, 600)
            );
        }
        if fixed_first {
            "The code above holds your fix, and the tests pass with it.\n\n".to_string()
        } else if reproduced {
            format!(
                "Your new test in `{test_file}` above fails on the current code, as it should.\n\n"
            )
        } else {
            String::new()
        }
    }

    /// A new conversation in place of the old one: the system prompt, the task with the files as they
    /// are now (tests first, sources last, as at the start), and `ask`. The old replies, which a small
    /// model copies, are gone; the server's cache keeps the system prompt.
    fn start_afresh(&mut self, files: &Files, ask: &str, why: &str) {
        let task = self.cfg.task.message();
        let texts: Vec<(String, String)> = files
            .tests
            .iter()
            .chain(&files.sources)
            .filter_map(|rel| Some((rel.clone(), self.read_rel(rel)?)))
            .collect();
        let dropped = self.messages.len().saturating_sub(1);
        self.messages.truncate(1);
        self.sent = self.sent.min(1);
        self.temperature = None;
        self.transcript.event(&Event::Nudge {
            turn: self.turns,
            kind: NudgeKind::Guided,
            text: format!("({why}, again: a new conversation, {dropped} messages dropped)"),
        });
        self.ui.line(&format!(
            "  turn {}: {why}, again; starting a new conversation with the code as it is now",
            self.turns
        ));
        self.messages
            .push(crate::model::ChatMessage::user(first_message(
                &task, &texts,
            )));
        self.nudge(NudgeKind::Guided, ask);
    }

    /// A file of the worktree as text, if it is one.
    fn read_rel(&self, rel: &str) -> Option<String> {
        let path = self.workspace.resolve(rel).ok()?;
        std::fs::read_to_string(path.abs).ok()
    }

    /// Runs one tool for the harness, recorded as the model's calls are; (ok, result).
    async fn guided_call(
        &mut self,
        name: &str,
        args: &serde_json::Value,
        i: usize,
    ) -> (bool, String) {
        let mut submitted = None;
        let (ok, text) = match self.call(name, args, &mut submitted).await {
            Ok(text) => (true, text),
            Err(ToolError::Failed(text)) => (false, text),
            Err(ToolError::Infrastructure(e)) => (false, format!("{name} failed: {e:#}")),
        };
        let text = self.redactor.text(&text);
        self.transcript.event(&Event::Tool {
            turn: self.turns,
            id: format!("guided_{}_{i}", self.turns),
            name: name.to_string(),
            arguments: args.clone(),
            ok,
            result: text.clone(),
        });
        self.ui.line(&format!(
            "  turn {}: {name}: {}",
            self.turns,
            result_line(&text)
        ));
        (ok, text)
    }
}

/// A block that rewrites only existing tests (`held`), its tests renamed to free names (none of the file's
/// or base's) and merged as new ones, `hold` keeping the existing ones; None when one of them is not a test
/// or cannot be renamed.
fn as_new_tests(
    rel: &str,
    old: &str,
    block: &str,
    held: &[String],
    at_base: &BTreeSet<String>,
    hold: &dyn Fn(&str) -> bool,
) -> Option<(merge::Merged, Vec<(String, String)>)> {
    let have = definitions::defined(rel, old).unwrap_or_default();
    let mut text = block.to_string();
    let mut names = Vec::new();
    for name in held {
        if !is_test_name(name) {
            return None;
        }
        let taken = |n: &str| have.contains(n) || at_base.contains(n);
        let (renamed, new_name) = merge::renamed(rel, &text, name, &taken)?;
        text = renamed;
        names.push((name.clone(), new_name));
    }
    let m = merge::merge_holding(rel, old, &text, hold)?;
    (m.held.is_empty() && !m.added.is_empty()).then_some((m, names))
}

/// Why a failed test run tested nothing: no test failed by name (a build or collection error stopped it),
/// or the first error is the compiler's or the runtime's for a name the code does not have. None for a run
/// where tests ran and failed on their assertions.
fn does_not_run(result: &TestResult) -> Option<String> {
    if result.passed {
        return None;
    }
    let error = result.first_error.clone().unwrap_or_default();
    const NOT_THERE: [&str; 10] = [
        "error[E",
        "could not compile",
        "SyntaxError",
        "NameError",
        "ImportError",
        "ModuleNotFoundError",
        "ReferenceError",
        "is not a function",
        "undefined: ",
        "cannot find ",
    ];
    if result.failing.is_empty() || NOT_THERE.iter().any(|p| error.contains(p)) {
        return Some(if error.is_empty() {
            "no test ran".to_string()
        } else {
            error
        });
    }
    None
}

/// A tool result as one console line: what a write did (`Replaced src/lib.rs: 453 bytes, 21 lines.`), how a
/// test run ended and which tests failed (`Tests failed (exit 101). Failing tests: a, b`), not the command.
fn result_line(text: &str) -> String {
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with("$ ") && !l.trim().is_empty());
    let head = lines.next().unwrap_or("");
    let failing = text.lines().find(|l| l.starts_with("Failing tests:"));
    let line = match failing {
        Some(f) if f != head => format!("{head} {f}"),
        _ => head.to_string(),
    };
    first_line(&line).to_string()
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(160) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_that_does_not_build_or_calls_what_is_not_there_tested_nothing() {
        let result = |failing: &[&str], error: &str| TestResult {
            passed: false,
            failing: failing.iter().map(|s| s.to_string()).collect(),
            first_error: Some(error.to_string()),
        };
        let rustc =
            "error[E0425]: cannot find function `line_count` in this scope at tests/words.rs:19:20";
        assert_eq!(does_not_run(&result(&[], rustc)).as_deref(), Some(rustc));
        let py = "NameError: name 'median_of' is not defined at tests/test_stats.py:5";
        assert!(does_not_run(&result(&["tests/test_stats.py::test_m"], py)).is_some());
        let assertion = "assertion `left == right` failed left: 1 right: 3";
        assert_eq!(does_not_run(&result(&["counts_tabs"], assertion)), None);
        assert_eq!(
            does_not_run(&TestResult {
                passed: false,
                failing: Vec::new(),
                first_error: None
            })
            .as_deref(),
            Some("no test ran")
        );
    }

    #[test]
    fn a_tool_result_is_one_line_saying_how_it_ended() {
        let run = "$ cargo test --no-fail-fast\nTests failed (exit 101).\nFailing tests: a, b\nFirst error: boom\n";
        assert_eq!(
            result_line(run),
            "Tests failed (exit 101). Failing tests: a, b"
        );
        assert_eq!(
            result_line("$ npm test --silent\nTests passed (exit 0).\nTAP version 13\n"),
            "Tests passed (exit 0)."
        );
        assert_eq!(
            result_line("Replaced src/lib.rs: 453 bytes, 21 lines."),
            "Replaced src/lib.rs: 453 bytes, 21 lines."
        );
    }
}
