//! Checks (format, vet, lint) and builds that fail at head are run at base too: findings already there are
//! not the change's, so a step whose findings all occur at base is `preexisting` (reported, not blamed), and
//! one with new findings names them with their real location.
//!
//! Findings are read as data ([`lint`](crate::gate::lint)) and compared by rule, file and flagged source text,
//! with machine paths replaced by placeholders, never by line numbers or summary lines. A build is
//! pre-existing only where the test step does not need what fails: for cargo, the targets that fail at head
//! (each error names its target) must fail identically at base and be targets `cargo test` does not build
//! (benches, unless the test step asks for them). Unlike the test baseline this is not cached: only the
//! failing steps run, in the base room with logs of their own (`base-checks`).

use anyhow::Result;

use crate::gate::findings::read_log;
use crate::gate::lint::{self, Finding, Findings, Format, Level, Scrub, Target};
use crate::gate::outcome::StepStatus;
use crate::gate::profile::{Profile, Step, StepKind};
use crate::gate::results::Runner;
use crate::gate::schedule::{base_step_line, report_line};
use crate::gate::steps::{self, plural, StepEnv, StepReport, LOG_TAIL_LINES};
use crate::gate::GateRun;

/// How many new findings a step's note shows.
const SHOWN_FINDINGS: usize = 5;

/// Whether a step that ended with `status` is run at base and compared: failing format, vet, lint and build
/// steps.
pub(super) fn compared_at_base(kind: StepKind, status: StepStatus) -> bool {
    status == StepStatus::Fail && (kind.parallel() || kind == StepKind::Build)
}

/// The placeholders of the machine paths of a step's environment.
fn scrub(env: &StepEnv) -> Scrub {
    Scrub::new(&env.room, &env.cache, &env.home(), &env.logs)
        .seen_at(env.inside_room(), env.inside_cache())
}

/// Reads a check's or build's output once it ran: a structured output (JSON) gets a log tail people can read,
/// and a tool that exits 0 while reporting errors (`go vet -json`) fails.
pub(super) fn digest(step: &Step, report: &mut StepReport, env: &StepEnv) {
    if !(report.kind.parallel() || report.kind == StepKind::Build) || report.log.is_none() {
        return;
    }
    let found = lint::read(
        &read_log(report),
        &Scrub::room_seen_at(&env.room, env.inside_room()),
        &env.room,
    );
    if !found.format.structured() {
        return;
    }
    let lines: Vec<&str> = found.human.lines().collect();
    report.log_tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    let errors: Vec<&Finding> = found.structured_failures(step.fail_on_warnings).collect();
    if report.status == StepStatus::Pass && !errors.is_empty() {
        report.status = StepStatus::Fail;
        report.note = Some(format!(
            "it reports {}: {}",
            plural(errors.len(), "finding"),
            shown(&errors)
        ));
    }
}

impl GateRun<'_> {
    /// Runs the failing format, vet, lint and build steps at base and compares their findings (see the module
    /// documentation); `head` is where they ran at head.
    pub(super) async fn judge_checks(
        &mut self,
        head: &StepEnv,
        reports: &mut [StepReport],
    ) -> Result<()> {
        let failing: Vec<usize> = reports
            .iter()
            .enumerate()
            .filter(|(_, r)| compared_at_base(r.kind, r.status))
            .map(|(i, _)| i)
            .collect();
        if failing.is_empty() {
            return Ok(());
        }
        let prep = self.prep;
        let places = self.roles.places(self.opts, prep, "base", "base-checks")?;
        let pb = self.ui.start("running the failing checks at base");
        let room = self.roles.base_room(self.opts, prep, &places).await?;
        let base = self.roles.env(prep, &room, &places, "base")?;
        self.ui
            .done(pb, &format!("  room     base at {}", room.dir().display()));
        for i in failing {
            let report = &mut reports[i];
            let Some(step) = prep.profile.steps.iter().find(|s| s.name == report.name) else {
                continue;
            };
            let runs_at_base = steps::not_applicable(step, room.dir()).is_none()
                && steps::missing_tool(step, &base, self.cancel)
                    .await
                    .is_none();
            if runs_at_base {
                let pb = self.ui.start(&format!("{} at base", step.name));
                let mut base_run =
                    steps::run_step(step, &base, &room, &prep.objects, self.cancel).await?;
                digest(step, &mut base_run.report, &base);
                self.ui.done(pb, &base_step_line(&base_run));
                if base_run.report.status == StepStatus::Fail {
                    let at_head = lint::read(&read_log(report), &scrub(head), &head.room);
                    let at_base =
                        lint::read(&read_log(&base_run.report), &scrub(&base), &base.room);
                    match compare(step, &at_head, &at_base, &prep.profile) {
                        Judged::New(note) => report.note = Some(note),
                        Judged::Unheld { note, new } => {
                            report.status = StepStatus::Preexisting;
                            report.note = Some(note);
                            self.notes.push(format!(
                                "step `{}` fails at base, which is not held to it: {} reported, not blamed",
                                report.name,
                                plural(new, "new finding")
                            ));
                        }
                        Judged::Preexisting(detail) => {
                            report.status = StepStatus::Preexisting;
                            report.note =
                                Some(preexisting_note(detail.as_deref(), report.note.as_deref()));
                            self.notes.push(format!(
                                "step `{}` fails at base with the same findings; not blamed",
                                report.name
                            ));
                        }
                    }
                }
            }
            self.ui.line(&report_line(report));
        }
        Ok(())
    }
}

/// What the comparison of a failing step with base decides.
#[derive(Debug, PartialEq, Eq)]
enum Judged {
    /// Blamed: the note says why (new findings, or a failing target the tests need).
    New(String),
    /// New findings of a check base does not pass in the same way (see [`unheld`]): reported in the note,
    /// not blamed.
    Unheld { note: String, new: usize },
    /// Every finding is at base too; for a build, the targets that fail.
    Preexisting(Option<String>),
}

/// Compares the findings of a step that fails at head and at base.
fn compare(step: &Step, head: &Findings, base: &Findings, profile: &Profile) -> Judged {
    let warnings_fail = step.fail_on_warnings;
    let (at_head, at_base) = (head.compared(warnings_fail), base.compared(warnings_fail));
    let new = lint::new_findings(&at_head, &at_base);
    if !new.is_empty() {
        return match unheld(step, &new, base) {
            Some(why) => Judged::Unheld {
                note: format!(
                    "fails at base too, {why}: {} reported, not blamed (--strict-baseline blames them): {}",
                    plural(new.len(), "new finding"),
                    shown(&new)
                ),
                new: new.len(),
            },
            None => Judged::New(new_findings_note(&new)),
        };
    }
    if step.kind != StepKind::Build || head.format != Format::Cargo {
        return Judged::Preexisting(None);
    }
    let (needed, unneeded) = failing_targets(head, profile);
    if !needed.is_empty() {
        return Judged::New(format!(
            "fails at base too, with the same errors, but in {} the tests need: {}",
            if needed.len() == 1 {
                "a target"
            } else {
                "targets"
            },
            needed.join(", ")
        ));
    }
    Judged::Preexisting((!unneeded.is_empty()).then(|| format!("only in {}", unneeded.join(", "))))
}

/// Why a check that fails at base is not holding the project to the kind of its new findings, if it is not.
/// Such findings come from the environment, not the change: a linter or formatter newer than the project's
/// own (clippy adds lints each release; a project whose CI pins an older toolchain fails today's), or a tool
/// the project does not use. So a format step failing at base is not held to at all, and a lint step only for
/// warnings, where base already has warnings that fail it (a base failing only for errors, a bench needing
/// nightly, may still hold its code to the lints). Errors (a lint denied by default, a compile error) and
/// vet findings are always blamed.
fn unheld(step: &Step, new: &[&Finding], base: &Findings) -> Option<String> {
    match step.kind {
        StepKind::Format => Some("so the project is not formatted by this tool at base".into()),
        StepKind::Lint => {
            let warned = base
                .compared(step.fail_on_warnings)
                .iter()
                .filter(|f| f.level == Level::Warning)
                .count();
            (warned > 0 && new.iter().all(|f| f.level == Level::Warning)).then(|| {
                format!(
                    "for {} of its own: the project is not held to this linter's warnings here",
                    plural(warned, "warning")
                )
            })
        }
        _ => None,
    }
}

/// The targets with errors in a cargo build, split into those the test steps build and those they do not,
/// each as `bench `b` (benches/b.rs)`. An error cargo does not attribute to a target (a failed build script,
/// a manifest error) counts as needed.
fn failing_targets(found: &Findings, profile: &Profile) -> (Vec<String>, Vec<String>) {
    let mut targets: Vec<&Target> = Vec::new();
    let mut unattributed = Vec::new();
    for f in found.items.iter().filter(|f| f.level == Level::Error) {
        if f.targets.is_empty() {
            unattributed.push(f.describe());
        }
        for t in &f.targets {
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
    }
    let mut needed: Vec<String> = unattributed;
    let mut unneeded = Vec::new();
    for t in targets {
        let named = format!("{} `{}` ({})", t.kind, t.name, t.root);
        if tests_build(profile, &t.kind) {
            needed.push(named);
        } else {
            unneeded.push(named);
        }
    }
    (needed, unneeded)
}

/// Whether the profile's test steps build a cargo target of this kind: `cargo test` builds every kind but
/// benches, unless it is asked for them (`--benches`, `--bench`, `--all-targets`); a test step cargo does not
/// run might build anything.
fn tests_build(profile: &Profile, kind: &str) -> bool {
    if kind != "bench" {
        return true;
    }
    profile.test_steps().any(|s| {
        s.runner() != Runner::Cargo
            || s.raw_argv().iter().any(|a| {
                matches!(a.as_str(), "--benches" | "--all-targets") || a.starts_with("--bench")
            })
    })
}

/// The note of a step whose findings are all at base, before its own note.
fn preexisting_note(detail: Option<&str>, note: Option<&str>) -> String {
    format!(
        "fails at base too, with the same findings{}: pre-existing, not blamed (--strict-baseline blames them){}",
        detail.map(|d| format!(", {d}")).unwrap_or_default(),
        note.map(|n| format!("; {n}")).unwrap_or_default()
    )
}

/// The note of a step with findings base does not have, the first few shown with their location.
fn new_findings_note(new: &[&Finding]) -> String {
    format!(
        "fails at base too, but with {} not there: {}",
        plural(new.len(), "new finding"),
        shown(new)
    )
}

/// The first few findings, described.
fn shown(found: &[&Finding]) -> String {
    found
        .iter()
        .take(SHOWN_FINDINGS)
        .map(|f| f.describe())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_failing_the_same_at_base_keeps_its_own_note_after_the_verdict() {
        assert_eq!(
            preexisting_note(None, Some("it lists 1 file: a.go")),
            "fails at base too, with the same findings: pre-existing, not blamed (--strict-baseline blames them); it lists 1 file: a.go"
        );
    }

    fn line(text: &str) -> Finding {
        Finding::text_line(text, Level::Error)
    }

    #[test]
    fn new_findings_are_counted_and_the_first_five_shown() {
        let new: Vec<Finding> = (1..=7).map(|i| line(&format!("f{i}"))).collect();
        let refs: Vec<&Finding> = new.iter().collect();
        assert_eq!(
            new_findings_note(&refs),
            "fails at base too, but with 7 new findings not there: f1 | f2 | f3 | f4 | f5"
        );
        let one = line("x.py: F401");
        assert_eq!(
            new_findings_note(&[&one]),
            "fails at base too, but with 1 new finding not there: x.py: F401"
        );
    }

    fn cargo_error(kind: &str, file: &str, text: &str) -> Finding {
        Finding {
            rule: "E0554".into(),
            file: file.into(),
            line: Some(1),
            column: Some(1),
            end_line: None,
            text: text.into(),
            message: "`#![feature]` may not be used on the stable release channel".into(),
            level: Level::Error,
            targets: vec![Target {
                kind: kind.into(),
                name: "b".into(),
                root: file.into(),
            }],
        }
    }

    fn cargo(items: Vec<Finding>) -> Findings {
        Findings {
            format: Format::Cargo,
            items,
            human: String::new(),
        }
    }

    fn step(profile: &Profile, kind: StepKind) -> &Step {
        profile.steps.iter().find(|s| s.kind == kind).unwrap()
    }

    #[test]
    fn a_new_warning_beside_a_preexisting_error_fails_clippy_but_not_the_build() {
        let rust = Profile::preset("rust").unwrap();
        let base = cargo(vec![cargo_error(
            "bench",
            "benches/b.rs",
            "#![feature(test)]",
        )]);
        let mut head = base.clone();
        let mut warning = cargo_error("lib", "src/lib.rs", "let unused = 1;");
        warning.rule = "unused_variables".into();
        warning.level = Level::Warning;
        head.items.push(warning);
        assert!(matches!(
            compare(step(&rust, StepKind::Build), &head, &base, &rust),
            Judged::Preexisting(_)
        ));
        match compare(step(&rust, StepKind::Lint), &head, &base, &rust) {
            Judged::New(note) => assert!(note.contains("src/lib.rs:1:1"), "{note}"),
            other => panic!("{other:?}"),
        }
    }

    fn warning(rule: &str, file: &str, text: &str) -> Finding {
        let mut f = cargo_error("lib", file, text);
        f.rule = rule.into();
        f.level = Level::Warning;
        f
    }

    #[test]
    fn new_warnings_of_a_lint_base_already_fails_for_warnings_are_not_blamed() {
        let rust = Profile::preset("rust").unwrap();
        let lint = step(&rust, StepKind::Lint);
        let base = cargo(vec![warning(
            "clippy::needless_return",
            "src/a.rs",
            "return 1;",
        )]);
        let mut head = base.clone();
        head.items.push(warning(
            "clippy::unnecessary_map_or",
            "src/walk.rs",
            "x.map_or(false, |y| y)",
        ));
        match compare(lint, &head, &base, &rust) {
            Judged::Unheld { note, new: 1 } => assert_eq!(
                note,
                "fails at base too, for 1 warning of its own: the project is not held to this linter's \
                 warnings here: 1 new finding reported, not blamed (--strict-baseline blames them): \
                 src/walk.rs:1:1: `#![feature]` may not be used on the stable release channel \
                 [clippy::unnecessary_map_or]"
            ),
            other => panic!("{other:?}"),
        }
        // An error beside them (a lint denied by default) is blamed.
        let mut error = head.clone();
        let mut denied = warning("clippy::eq_op", "src/lib.rs", "x == x");
        denied.level = Level::Error;
        error.items.push(denied);
        assert!(matches!(
            compare(lint, &error, &base, &rust),
            Judged::New(_)
        ));
        // A vet step is never excused, even one failing on warnings: vet reports suspected bugs.
        let go = Profile::preset("go").unwrap();
        let mut vet = step(&go, StepKind::Vet).clone();
        vet.fail_on_warnings = true;
        assert!(matches!(compare(&vet, &head, &base, &go), Judged::New(_)));
    }

    #[test]
    fn a_format_step_failing_at_base_does_not_blame_new_findings() {
        let rust = Profile::preset("rust").unwrap();
        let fmt = step(&rust, StepKind::Format);
        let base = Findings {
            format: Format::Text,
            items: vec![line("Diff in src/a.rs:1:")],
            human: String::new(),
        };
        let mut head = base.clone();
        head.items.push(line("Diff in src/b.rs:4:"));
        assert!(matches!(
            compare(fmt, &head, &base, &rust),
            Judged::Unheld { new: 1, .. }
        ));
    }

    #[test]
    fn a_build_failing_the_same_at_base_only_in_a_bench_is_preexisting() {
        let rust = Profile::preset("rust").unwrap();
        let bench = cargo(vec![cargo_error(
            "bench",
            "benches/b.rs",
            "#![feature(test)]",
        )]);
        assert_eq!(
            compare(step(&rust, StepKind::Build), &bench, &bench, &rust),
            Judged::Preexisting(Some("only in bench `b` (benches/b.rs)".into()))
        );
        // The same errors in a target `cargo test` builds are blamed.
        let lib = cargo(vec![cargo_error("lib", "src/lib.rs", "#![feature(test)]")]);
        assert_eq!(
            compare(step(&rust, StepKind::Build), &lib, &lib, &rust),
            Judged::New(
                "fails at base too, with the same errors, but in a target the tests need: lib `b` (src/lib.rs)"
                    .into()
            )
        );
        // A new error in the bench is the change's.
        let mut more = bench.clone();
        more.items
            .push(cargo_error("bench", "benches/b.rs", "calc::sub(1, 2)"));
        assert!(matches!(
            compare(step(&rust, StepKind::Build), &more, &bench, &rust),
            Judged::New(_)
        ));
    }

    #[test]
    fn benches_are_needed_when_the_test_step_builds_them_or_is_not_cargo() {
        let mut rust = Profile::preset("rust").unwrap();
        assert!(!tests_build(&rust, "bench"));
        assert!(tests_build(&rust, "example"));
        let test = rust
            .steps
            .iter_mut()
            .find(|s| s.kind == StepKind::Test)
            .unwrap();
        test.argv = Some(vec!["cargo".into(), "test".into(), "--all-targets".into()]);
        assert!(tests_build(&rust, "bench"));
        let test = rust
            .steps
            .iter_mut()
            .find(|s| s.kind == StepKind::Test)
            .unwrap();
        test.runner = None;
        test.argv = Some(vec!["make".into(), "test".into()]);
        assert!(tests_build(&rust, "bench"));
    }

    #[test]
    fn a_check_with_the_same_findings_is_preexisting_whatever_its_targets() {
        let rust = Profile::preset("rust").unwrap();
        let lib = cargo(vec![cargo_error("lib", "src/lib.rs", "x")]);
        assert_eq!(
            compare(step(&rust, StepKind::Lint), &lib, &lib, &rust),
            Judged::Preexisting(None)
        );
    }
}
