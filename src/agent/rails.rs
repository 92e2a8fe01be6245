//! The rails: the limits that keep a weak model from looping forever, as a state machine the loop feeds
//! with what each turn did and that answers continue, nudge or stop.
//!
//! Replies without a tool call get a reminder and, at the limit, a last warning; one more stops the run. The
//! same call (name and arguments) at the limit in a row gets a warning; once more stops the run. So does a
//! call a tool refused with the same answer at the limit, wherever those calls fell among others (an edit
//! made already, retried between reads and writes, is refused the same way each time). The same
//! turns (the same calls with the same results) in a cycle of one to three turns ([`cycle`]) get a message
//! naming the cycle; going round it once more stops the run ([`StopReason::Cycle`]). Progress is the tests'
//! result changing (the pass/fail set of the last `run_tests`), not a file written: rewriting a file the
//! same way proves nothing. A run that goes [`Rails::stall_turns`] turns without progress gets a forcing
//! phase that allows only [`prompt::FORCING_TOOLS`] for [`Rails::forcing_turns`] turns (every tool is
//! still offered, so the prompt the server cached stays a prefix; a call of another is answered, not run),
//! then stops as stalled. Budgets (turns, wall
//! time, tokens) stop it before a turn. The machine keeps no clock and does no I/O: the loop tells it the
//! turns, time and tokens used, so every transition is a unit test.

use std::collections::HashMap;
use std::time::Duration;

use super::prompt;
use super::report::StopReason;
use super::transcript::NudgeKind;

/// Model turns before a run stops as incomplete, unless the task, `vouch.toml` or `--max-turns` says.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Turns without a change in the tests' result before the forcing phase, unless configured.
pub const DEFAULT_STALL_TURNS: u32 = 15;
/// Turns of the forcing phase before the run stops as stalled.
pub const DEFAULT_FORCING_TURNS: u32 = 3;
/// Gate rejections sent back to the model for repair, unless configured.
pub const DEFAULT_REPAIR_CYCLES: u32 = 2;

/// Limits that stop a run.
#[derive(Clone, Debug)]
pub struct Rails {
    pub max_turns: u32,
    /// Turns without a change in the tests' result before the forcing phase.
    pub stall_turns: u32,
    /// Turns of the forcing phase before the run stops as stalled.
    pub forcing_turns: u32,
    /// The same call this many times in a row earns a warning; once more stops the run.
    pub repeat_limit: u32,
    /// Replies without a tool call in a row that earn a warning; once more stops the run.
    pub malformed_limit: u32,
    pub wall_time: Option<Duration>,
    /// Prompt plus completion tokens over the run.
    pub tokens: Option<u64>,
    /// Gate failures sent back to the model before the change counts as rejected.
    pub repair_cycles: u32,
}

impl Default for Rails {
    fn default() -> Rails {
        Rails {
            max_turns: DEFAULT_MAX_TURNS,
            stall_turns: DEFAULT_STALL_TURNS,
            forcing_turns: DEFAULT_FORCING_TURNS,
            repeat_limit: 3,
            malformed_limit: 3,
            wall_time: None,
            tokens: None,
            repair_cycles: DEFAULT_REPAIR_CYCLES,
        }
    }
}

/// What the rails say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Continue,
    /// Go on, with this message to the model.
    Nudge(Nudge),
    Stop(StopReason),
}

/// A warning from the rails to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nudge {
    /// A reply without a tool call; `last` when one more stops the run.
    NoToolCall { last: bool },
    /// The same call at the limit; one more stops the run.
    RepeatedCall,
    /// The forcing phase starts after `turns` turns without a change and lasts `left` turns.
    Forcing { turns: u32, left: u32 },
    /// The same turns again: `cycle` names them; going round once more stops the run.
    Cycle { cycle: String },
    /// The `name` call refused `times` times with the same answer; once more stops the run.
    RepeatedRefusal { name: String, times: u32 },
}

impl Nudge {
    /// The transcript's name for it.
    pub fn kind(&self) -> NudgeKind {
        match self {
            Nudge::NoToolCall { .. } => NudgeKind::NoToolCall,
            Nudge::RepeatedCall => NudgeKind::RepeatedCall,
            Nudge::Forcing { .. } => NudgeKind::Forcing,
            Nudge::Cycle { .. } => NudgeKind::Cycle,
            Nudge::RepeatedRefusal { .. } => NudgeKind::RepeatedRefusal,
        }
    }

    /// The message to the model.
    pub fn text(&self) -> String {
        match self {
            Nudge::NoToolCall { last: false } => prompt::NO_CALL.to_string(),
            Nudge::NoToolCall { last: true } => prompt::NO_CALL_LAST.to_string(),
            Nudge::RepeatedCall => prompt::REPEATED.to_string(),
            Nudge::Forcing { turns, left } => prompt::forcing(*turns, *left),
            Nudge::Cycle { cycle } => prompt::cycle(cycle),
            Nudge::RepeatedRefusal { name, times } => prompt::refused_again(name, *times),
        }
    }
}

/// One call of a turn as the cycle detector sees it: its name and arguments, whether it succeeded, and a
/// hash of its result with the digits left out (timings and counts differ from run to run of the same
/// failing test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub signature: String,
    pub ok: bool,
    pub result: u64,
    /// The tool ran and declined the call (an edit whose old_string is not there, a file that does not
    /// exist), as opposed to a call that ran and reported failure (failing tests) or one vouch did not run.
    pub refused: bool,
}

impl Step {
    pub fn new(name: &str, signature: String, ok: bool, result: &str) -> Step {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        result
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .for_each(|c| c.hash(&mut h));
        Step {
            name: name.to_string(),
            signature,
            ok,
            result: h.finish(),
            refused: false,
        }
    }

    /// The step of a call the tool declined.
    pub fn refused(mut self) -> Step {
        self.refused = !self.ok;
        self
    }
}

/// Turns the cycle detector remembers.
const CYCLE_MEMORY: usize = 12;
/// The longest cycle looked for, in turns.
const MAX_PERIOD: usize = 3;

/// The period (1 to [`MAX_PERIOD`] turns) the last turns repeat: a block of two or three turns seen twice in
/// a row, or one turn of several calls seen three times. One turn of one call repeating is the
/// repeated-call rail's to catch.
pub fn cycle(turns: &[Vec<Step>]) -> Option<usize> {
    let n = turns.len();
    (1..=MAX_PERIOD).find(|&p| {
        let rounds = if p == 1 { 3 } else { 2 };
        if n < p * rounds {
            return false;
        }
        let tail = &turns[n - p * rounds..];
        if p == 1 && tail[0].len() < 2 {
            return false;
        }
        (0..p * (rounds - 1)).all(|i| tail[i] == tail[i + p])
    })
}

/// The cycle as the model reads it: `edit (failed) -> write_file -> run_tests (failed)`.
fn describe(block: &[Vec<Step>]) -> String {
    block
        .iter()
        .map(|turn| {
            turn.iter()
                .map(|s| {
                    if s.ok {
                        s.name.clone()
                    } else {
                        format!("{} (failed)", s.name)
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// What the run has used so far, for the budgets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Used {
    /// Turns asked for.
    pub turns: u32,
    pub elapsed: Duration,
    /// Prompt plus completion tokens.
    pub tokens: u64,
}

/// The rails' state over a run.
#[derive(Clone, Debug)]
pub struct RailState {
    rails: Rails,
    /// Replies without a tool call in a row.
    malformed: u32,
    /// The last call's name and arguments, and how many times in a row it came.
    last_call: Option<String>,
    repeats: u32,
    /// Turns since the tests' result last changed.
    since_change: u32,
    /// Turns left in the forcing phase.
    forcing: Option<u32>,
    /// The calls of the last turns, for [`cycle`].
    history: Vec<Vec<Step>>,
    /// Turns recorded in `history` over the run.
    recorded: usize,
    /// When a cycle was named: `recorded` then, and its period.
    cycle_named: Option<(usize, usize)>,
    /// Refused calls by name and arguments: the hash of the last answer, and how many times in a row that
    /// call got it.
    refusals: HashMap<String, (u64, u32)>,
}

impl RailState {
    pub fn new(rails: Rails) -> RailState {
        RailState {
            rails,
            malformed: 0,
            last_call: None,
            repeats: 0,
            since_change: 0,
            forcing: None,
            history: Vec::new(),
            recorded: 0,
            cycle_named: None,
            refusals: HashMap::new(),
        }
    }

    pub fn limits(&self) -> &Rails {
        &self.rails
    }

    /// Before a turn: the budget it would exceed, if any.
    pub fn budget(&self, used: Used) -> Option<StopReason> {
        if used.turns >= self.rails.max_turns {
            return Some(StopReason::MaxTurns);
        }
        if self.rails.wall_time.is_some_and(|w| used.elapsed >= w) {
            return Some(StopReason::WallTime);
        }
        if self.rails.tokens.is_some_and(|t| used.tokens >= t) {
            return Some(StopReason::Tokens);
        }
        None
    }

    /// In the forcing phase.
    pub fn forcing(&self) -> bool {
        self.forcing.is_some()
    }

    /// Whether the tool `name` may be called now.
    pub fn offers(&self, name: &str) -> bool {
        !self.forcing() || prompt::FORCING_TOOLS.contains(&name)
    }

    /// A reply without any tool call: a nudge, or the stop after the last warning.
    pub fn no_call(&mut self) -> Answer {
        self.malformed += 1;
        if self.malformed > self.rails.malformed_limit {
            return Answer::Stop(StopReason::NoToolCalls);
        }
        Answer::Nudge(Nudge::NoToolCall {
            last: self.malformed == self.rails.malformed_limit,
        })
    }

    /// A call about to run, by its name and arguments (`signature`): continue (run it), a nudge (run it and
    /// warn after the turn's calls), or stop (do not run it, nor the rest of the turn).
    pub fn call(&mut self, signature: String) -> Answer {
        self.malformed = 0;
        if self.last_call.as_deref() == Some(signature.as_str()) {
            self.repeats += 1;
        } else {
            self.last_call = Some(signature);
            self.repeats = 1;
        }
        if self.repeats > self.rails.repeat_limit {
            Answer::Stop(StopReason::RepeatedCall)
        } else if self.repeats == self.rails.repeat_limit {
            Answer::Nudge(Nudge::RepeatedCall)
        } else {
            Answer::Continue
        }
    }

    /// The end of a turn that made `steps`, `progress` when the tests' result changed: a cycle is named or
    /// stops the run; the forcing phase starts, counts down or stops the run as stalled.
    pub fn end_turn(&mut self, progress: bool, steps: Vec<Step>) -> Answer {
        let mut refused = self.refusals(&steps);
        let cycle = self.cycle(steps);
        // A named cycle covers the refusals in it: one warning, not two.
        if self.cycle_named.is_some() && matches!(refused, Answer::Nudge(_)) {
            refused = Answer::Continue;
        }
        let stall = self.stall(progress);
        match (refused, cycle, stall) {
            (Answer::Stop(stop), _, _)
            | (_, Answer::Stop(stop), _)
            | (_, _, Answer::Stop(stop)) => Answer::Stop(stop),
            (_, Answer::Nudge(nudge), _) | (Answer::Nudge(nudge), _, _) => Answer::Nudge(nudge),
            (_, _, stall) => stall,
        }
    }

    /// Counts the turn's refused calls: the same refusal at the limit earns a warning, once more stops the
    /// run. A warning the repeated-call rail gave already for the same call in a row is not given twice.
    fn refusals(&mut self, steps: &[Step]) -> Answer {
        let limit = self.rails.repeat_limit;
        let mut answer = Answer::Continue;
        for step in steps {
            if !step.refused {
                if step.ok {
                    self.refusals.remove(&step.signature);
                }
                continue;
            }
            let seen = self
                .refusals
                .entry(step.signature.clone())
                .or_insert((step.result, 0));
            if seen.0 != step.result {
                *seen = (step.result, 0);
            }
            seen.1 += 1;
            let times = seen.1;
            let warned =
                self.last_call.as_deref() == Some(step.signature.as_str()) && self.repeats >= limit;
            if times > limit {
                return Answer::Stop(StopReason::RepeatedCall);
            }
            if times == limit && !warned {
                answer = Answer::Nudge(Nudge::RepeatedRefusal {
                    name: step.name.clone(),
                    times,
                });
            }
        }
        answer
    }

    /// Records a turn's calls; names a cycle the first time, stops when the model goes round it once more.
    fn cycle(&mut self, steps: Vec<Step>) -> Answer {
        if steps.is_empty() {
            return Answer::Continue;
        }
        self.history.push(steps);
        self.recorded += 1;
        if self.history.len() > CYCLE_MEMORY {
            self.history.remove(0);
        }
        let Some(period) = cycle(&self.history) else {
            self.cycle_named = None;
            return Answer::Continue;
        };
        match self.cycle_named {
            Some((at, p)) if self.recorded >= at + p => Answer::Stop(StopReason::Cycle),
            Some(_) => Answer::Continue,
            None => {
                self.cycle_named = Some((self.recorded, period));
                let block = &self.history[self.history.len() - period..];
                Answer::Nudge(Nudge::Cycle {
                    cycle: describe(block),
                })
            }
        }
    }

    fn stall(&mut self, progress: bool) -> Answer {
        if progress {
            self.since_change = 0;
            self.forcing = None;
            return Answer::Continue;
        }
        self.since_change += 1;
        match self.forcing {
            Some(left) if left <= 1 => Answer::Stop(StopReason::Stalled),
            Some(left) => {
                self.forcing = Some(left - 1);
                Answer::Continue
            }
            None if self.since_change >= self.rails.stall_turns => {
                self.forcing = Some(self.rails.forcing_turns);
                Answer::Nudge(Nudge::Forcing {
                    turns: self.since_change,
                    left: self.rails.forcing_turns,
                })
            }
            None => Answer::Continue,
        }
    }

    /// A gate failure went back for repair: the model gets a fresh stall count (the turn is not counted).
    pub fn repair(&mut self) {
        self.since_change = 0;
        self.forcing = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rails() -> RailState {
        RailState::new(Rails {
            stall_turns: 2,
            forcing_turns: 2,
            ..Rails::default()
        })
    }

    #[test]
    fn budgets_stop_a_run_at_the_turn_time_or_token_limit() {
        let r = RailState::new(Rails {
            max_turns: 5,
            wall_time: Some(Duration::from_secs(60)),
            tokens: Some(1000),
            ..Rails::default()
        });
        let used = Used {
            turns: 4,
            elapsed: Duration::from_secs(59),
            tokens: 999,
        };
        assert_eq!(r.budget(used), None);
        assert_eq!(
            r.budget(Used { turns: 5, ..used }),
            Some(StopReason::MaxTurns)
        );
        assert_eq!(
            r.budget(Used {
                elapsed: Duration::from_secs(60),
                ..used
            }),
            Some(StopReason::WallTime)
        );
        assert_eq!(
            r.budget(Used {
                tokens: 1000,
                ..used
            }),
            Some(StopReason::Tokens)
        );
        // Without a wall time or token budget only turns count.
        let r = RailState::new(Rails::default());
        let huge = Used {
            turns: 1,
            elapsed: Duration::from_secs(1 << 30),
            tokens: u64::MAX,
        };
        assert_eq!(r.budget(huge), None);
    }

    #[test]
    fn replies_without_a_call_get_a_reminder_then_a_last_warning_then_stop() {
        let mut r = rails();
        let nudge = |last| Answer::Nudge(Nudge::NoToolCall { last });
        assert_eq!(r.no_call(), nudge(false));
        assert_eq!(r.no_call(), nudge(false));
        assert_eq!(r.no_call(), nudge(true));
        assert_eq!(r.no_call(), Answer::Stop(StopReason::NoToolCalls));
    }

    #[test]
    fn a_call_resets_the_count_of_replies_without_one() {
        let mut r = rails();
        r.no_call();
        r.no_call();
        assert_eq!(r.call("read_file{}".into()), Answer::Continue);
        assert_eq!(
            r.no_call(),
            Answer::Nudge(Nudge::NoToolCall { last: false })
        );
    }

    #[test]
    fn the_same_call_three_times_is_warned_and_a_fourth_stops() {
        let mut r = rails();
        let sig = || "read_file{\"path\":\"a\"}".to_string();
        assert_eq!(r.call(sig()), Answer::Continue);
        assert_eq!(r.call(sig()), Answer::Continue);
        assert_eq!(r.call(sig()), Answer::Nudge(Nudge::RepeatedCall));
        assert_eq!(r.call(sig()), Answer::Stop(StopReason::RepeatedCall));
    }

    #[test]
    fn a_different_call_starts_the_repeat_count_over() {
        let mut r = rails();
        r.call("a".into());
        r.call("a".into());
        assert_eq!(r.call("b".into()), Answer::Continue);
        assert_eq!(r.call("a".into()), Answer::Continue);
        assert_eq!(r.call("a".into()), Answer::Continue);
        assert_eq!(r.call("a".into()), Answer::Nudge(Nudge::RepeatedCall));
    }

    #[test]
    fn turns_without_a_change_start_the_forcing_phase_which_then_stops_as_stalled() {
        let mut r = rails();
        assert_eq!(r.end_turn(false, vec![]), Answer::Continue);
        assert!(r.offers("read_file"));
        assert_eq!(
            r.end_turn(false, vec![]),
            Answer::Nudge(Nudge::Forcing { turns: 2, left: 2 })
        );
        assert!(r.forcing());
        assert!(!r.offers("read_file") && !r.offers("run_tests") && !r.offers("shell"));
        assert!(r.offers("edit") && r.offers("write_file") && r.offers("submit"));
        assert_eq!(r.end_turn(false, vec![]), Answer::Continue);
        assert_eq!(r.end_turn(false, vec![]), Answer::Stop(StopReason::Stalled));
    }

    #[test]
    fn a_change_ends_the_forcing_phase_and_the_stall_count() {
        let mut r = rails();
        r.end_turn(false, vec![]);
        r.end_turn(false, vec![]);
        assert!(r.forcing());
        assert_eq!(r.end_turn(true, vec![]), Answer::Continue);
        assert!(!r.forcing() && r.offers("read_file"));
        assert_eq!(r.end_turn(false, vec![]), Answer::Continue);
        assert_eq!(
            r.end_turn(false, vec![]),
            Answer::Nudge(Nudge::Forcing { turns: 2, left: 2 })
        );
    }

    #[test]
    fn a_repair_cycle_ends_the_forcing_phase_and_the_stall_count() {
        let mut r = rails();
        r.end_turn(false, vec![]);
        r.end_turn(false, vec![]);
        r.repair();
        assert!(!r.forcing());
        assert_eq!(r.end_turn(false, vec![]), Answer::Continue);
        assert_eq!(
            r.end_turn(false, vec![]),
            Answer::Nudge(Nudge::Forcing { turns: 2, left: 2 })
        );
    }

    fn step(name: &str, ok: bool, result: &str) -> Step {
        Step::new(name, format!("{name}{{}}"), ok, result)
    }

    #[test]
    fn a_three_turn_cycle_is_named_after_two_rounds_and_stops_after_a_third() {
        let mut r = RailState::new(Rails::default());
        let round = || {
            vec![
                vec![step("edit", false, "old_string not found")],
                vec![step("write_file", true, "Replaced a.rs: 10 bytes")],
                vec![step("run_tests", false, "1 failed in 0.03s")],
            ]
        };
        let mut answers = Vec::new();
        for (i, turn) in round().into_iter().chain(round()).enumerate() {
            // The timing differs from run to run; the digits do not count.
            let turn = if i == 5 {
                vec![step("run_tests", false, "1 failed in 0.07s")]
            } else {
                turn
            };
            answers.push(r.end_turn(false, turn));
        }
        assert!(
            answers[..5].iter().all(|a| *a == Answer::Continue),
            "{answers:?}"
        );
        assert_eq!(
            answers[5],
            Answer::Nudge(Nudge::Cycle {
                cycle: "edit (failed) -> write_file -> run_tests (failed)".into()
            })
        );
        let mut third = round().into_iter();
        assert_eq!(r.end_turn(false, third.next().unwrap()), Answer::Continue);
        assert_eq!(r.end_turn(false, third.next().unwrap()), Answer::Continue);
        assert_eq!(
            r.end_turn(false, third.next().unwrap()),
            Answer::Stop(StopReason::Cycle)
        );
    }

    #[test]
    fn a_different_result_breaks_the_cycle_and_one_call_repeating_is_left_to_the_repeat_rail() {
        let a = vec![step("read_file", true, "x")];
        let b = vec![step("run_tests", false, "fail")];
        let b2 = vec![step("run_tests", false, "another failure")];
        assert_eq!(
            cycle(&[a.clone(), b.clone(), a.clone(), b.clone()]),
            Some(2)
        );
        assert_eq!(cycle(&[a.clone(), b.clone(), a.clone(), b2]), None);
        assert_eq!(cycle(&[a.clone(), a.clone(), a.clone()]), None);
        let two = vec![step("read_file", true, "x"), step("run_tests", false, "f")];
        assert_eq!(cycle(&[two.clone(), two.clone()]), None);
        assert_eq!(cycle(&[two.clone(), two.clone(), two]), Some(1));
    }

    #[test]
    fn writing_files_is_not_progress_only_a_change_in_the_tests_result_is() {
        let mut r = rails();
        let write = || vec![step("write_file", true, "Replaced a.rs")];
        assert_eq!(r.end_turn(false, write()), Answer::Continue);
        assert_eq!(
            r.end_turn(false, vec![step("edit", true, "Edited a.rs")]),
            Answer::Nudge(Nudge::Forcing { turns: 2, left: 2 })
        );
        assert_eq!(r.end_turn(true, write()), Answer::Continue);
        assert!(!r.forcing());
    }

    #[test]
    fn nudges_carry_the_loops_messages_and_their_transcript_kind() {
        let forcing = Nudge::Forcing { turns: 15, left: 3 };
        assert_eq!(forcing.text(), prompt::forcing(15, 3));
        assert_eq!(forcing.kind(), NudgeKind::Forcing);
        assert_eq!(Nudge::NoToolCall { last: false }.text(), prompt::NO_CALL);
        assert_eq!(
            Nudge::NoToolCall { last: true }.text(),
            prompt::NO_CALL_LAST
        );
        assert_eq!(
            Nudge::NoToolCall { last: true }.kind(),
            NudgeKind::NoToolCall
        );
        assert_eq!(Nudge::RepeatedCall.text(), prompt::REPEATED);
        assert_eq!(Nudge::RepeatedCall.kind(), NudgeKind::RepeatedCall);
        let cycle = Nudge::Cycle {
            cycle: "edit (failed) -> run_tests".into(),
        };
        assert!(cycle.text().contains("edit (failed) -> run_tests"));
        assert_eq!(cycle.kind(), NudgeKind::Cycle);
    }

    #[test]
    fn the_same_refusal_among_other_calls_is_warned_at_the_limit_then_stops() {
        let mut r = RailState::new(Rails::default());
        let refused = || step("edit", false, "this edit looks applied already").refused();
        let other = |i: u32| {
            vec![step(
                "read_file",
                true,
                &format!("file text {}", "x".repeat(i as usize)),
            )]
        };
        let mut answers = Vec::new();
        for i in 0..3 {
            r.call("edit{}".into());
            answers.push(r.end_turn(false, vec![refused()]));
            r.call(format!("read_file{{{i}}}"));
            answers.push(r.end_turn(false, other(i)));
        }
        assert_eq!(
            answers[4],
            Answer::Nudge(Nudge::RepeatedRefusal {
                name: "edit".into(),
                times: 3
            }),
            "{answers:?}"
        );
        assert!(
            answers
                .iter()
                .enumerate()
                .all(|(i, a)| i == 4 || *a == Answer::Continue),
            "{answers:?}"
        );
        r.call("edit{}".into());
        assert_eq!(
            r.end_turn(false, vec![refused()]),
            Answer::Stop(StopReason::RepeatedCall)
        );
    }

    #[test]
    fn a_refusal_with_another_answer_or_a_success_between_starts_the_count_again() {
        let mut r = RailState::new(Rails::default());
        let edit = |answer: &str| step("edit", false, answer).refused();
        for answer in [
            "old_string does not occur",
            "old_string does not occur",
            "occurs 2 times",
        ] {
            assert_eq!(r.end_turn(false, vec![edit(answer)]), Answer::Continue);
        }
        assert_eq!(
            r.end_turn(false, vec![edit("occurs 2 times")]),
            Answer::Continue
        );
        assert_eq!(
            r.end_turn(false, vec![step("edit", true, "Edited a.rs")]),
            Answer::Continue
        );
        assert_eq!(
            r.end_turn(false, vec![edit("occurs 2 times")]),
            Answer::Continue
        );
        // Failing tests are a result, not a refusal: the same failure many times is the stall rail's.
        for _ in 0..5 {
            let tests = step("run_tests", false, "1 failed");
            assert!(!tests.refused);
            r.end_turn(false, vec![tests, step("read_file", true, "text")]);
        }
    }

    #[test]
    fn a_refusal_repeated_in_a_row_is_warned_once_by_the_repeated_call_rail() {
        let mut r = RailState::new(Rails::default());
        let mut nudges = Vec::new();
        for _ in 0..3 {
            if let Answer::Nudge(n) = r.call("edit{}".into()) {
                nudges.push(n);
            }
            if let Answer::Nudge(n) = r.end_turn(false, vec![step("edit", false, "no").refused()]) {
                nudges.push(n);
            }
        }
        assert_eq!(nudges, vec![Nudge::RepeatedCall]);
    }
}
