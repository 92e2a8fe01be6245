//! Checks (format, vet, lint) that fail at head are run at base too: findings already there are not the
//! change's, so a step whose findings all occur at base passes with a note, and one with new findings names
//! them.
//!
//! Unlike the test baseline this is not cached: checks are quick, and only the failing ones run, in the base
//! room with logs of their own (`base-checks`). The comparison of two logs is pure, in
//! [`judge::new_findings`](crate::gate::judge::new_findings).

use anyhow::Result;

use crate::gate::findings::read_log;
use crate::gate::judge;
use crate::gate::outcome::StepStatus;
use crate::gate::places::{open_room, places_logged, step_env};
use crate::gate::schedule::step_line;
use crate::gate::steps::{self, plural, StepReport};
use crate::gate::GateRun;

/// How many new findings a step's note shows.
const SHOWN_FINDINGS: usize = 5;

impl GateRun<'_> {
    /// Runs the failing format, vet and lint steps at base and compares findings: a step whose findings at head
    /// all occur at base too (line numbers aside) passes with a note; otherwise the new findings are named.
    pub(super) async fn judge_checks(&mut self, reports: &mut [StepReport]) -> Result<()> {
        let failing: Vec<usize> = reports
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status == StepStatus::Fail && r.kind.parallel())
            .map(|(i, _)| i)
            .collect();
        if failing.is_empty() {
            return Ok(());
        }
        let prep = self.prep;
        let places = places_logged(self.opts, prep, "base", "base-checks")?;
        let pb = self.ui.start("running the failing checks at base");
        let room = open_room(prep, &prep.base.sha, places.room.clone()).await?;
        let env = step_env(prep, &room, &places);
        self.ui
            .done(pb, &format!("  room     base at {}", room.dir().display()));
        for i in failing {
            let Some(step) = prep
                .profile
                .steps
                .iter()
                .find(|s| s.name == reports[i].name)
            else {
                continue;
            };
            if steps::not_applicable(step, room.dir()).is_some()
                || steps::missing_tool(step, &env, self.cancel).await.is_some()
            {
                continue;
            }
            let pb = self.ui.start(&format!("{} at base", step.name));
            let base_run = steps::run_step(step, &env, &room, &prep.objects, self.cancel).await?;
            self.ui
                .done(pb, &format!("{} (at base)", step_line(&base_run)));
            if base_run.report.status != StepStatus::Fail {
                continue;
            }
            let new = judge::new_findings(&read_log(&reports[i]), &read_log(&base_run.report));
            if new.is_empty() {
                let r = &mut reports[i];
                r.status = StepStatus::Pass;
                r.note = Some(preexisting_note(r.note.as_deref()));
                self.notes.push(format!(
                    "step `{}` fails at base with the same findings; not blamed",
                    r.name
                ));
            } else {
                reports[i].note = Some(new_findings_note(&new));
            }
        }
        Ok(())
    }
}

/// The note of a check whose findings are all at base, before its own note.
fn preexisting_note(note: Option<&str>) -> String {
    format!(
        "fails at base too, with the same findings: pre-existing, not blamed (--strict-baseline blames them){}",
        note.map(|n| format!("; {n}")).unwrap_or_default()
    )
}

/// The note of a check with findings base does not have, the first few shown.
fn new_findings_note(new: &[String]) -> String {
    let shown: Vec<&str> = new
        .iter()
        .take(SHOWN_FINDINGS)
        .map(String::as_str)
        .collect();
    format!(
        "fails at base too, but with {} not there: {}",
        plural(new.len(), "new finding"),
        shown.join(" | ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_failing_the_same_at_base_keeps_its_own_note_after_the_verdict() {
        assert_eq!(
            preexisting_note(Some("it lists 1 file: a.go")),
            "fails at base too, with the same findings: pre-existing, not blamed (--strict-baseline blames them); it lists 1 file: a.go"
        );
    }

    #[test]
    fn new_findings_are_counted_and_the_first_five_shown() {
        let new: Vec<String> = (1..=7).map(|i| format!("f{i}")).collect();
        assert_eq!(
            new_findings_note(&new),
            "fails at base too, but with 7 new findings not there: f1 | f2 | f3 | f4 | f5"
        );
        assert_eq!(
            new_findings_note(&["x.py: F401".to_string()]),
            "fails at base too, but with 1 new finding not there: x.py: F401"
        );
    }
}
