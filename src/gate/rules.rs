//! The rules judged from the change alone, before anything runs: scope (`paths.allow`/`paths.deny` and the
//! flags that extend them) and test presence (production code changed, so some test must change too).
//!
//! Pure functions of the classified changes, so each rule is tested without a repository.

use crate::gate::outcome::{Finding, Rule};
use crate::gate::paths::{Classifier, PathClass};
use crate::gate::report::ChangedFile;
use crate::gate::steps::plural;

/// The findings of the scope and test-presence rules; `allow_no_tests` waives the latter.
pub fn check(
    changes: &[ChangedFile],
    classifier: &Classifier,
    allow_no_tests: bool,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let outside: Vec<&str> = changes
        .iter()
        .filter(|c| !classifier.allow.is_empty() && !classifier.allow.is_match(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    if !outside.is_empty() {
        findings.push(
            Finding::new(
                Rule::OutOfScope,
                format!(
                    "out of scope: the change touches {} outside the allowed paths: {}",
                    plural(outside.len(), "file"),
                    outside.join(", ")
                ),
            )
            .subjects(outside.iter().copied()),
        );
    }
    let denied: Vec<&str> = changes
        .iter()
        .filter(|c| classifier.deny.is_match(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    if !denied.is_empty() {
        findings.push(
            Finding::new(
                Rule::DeniedPath,
                format!(
                    "out of scope: the change touches denied paths: {}",
                    denied.join(", ")
                ),
            )
            .subjects(denied.iter().copied()),
        );
    }
    let production: Vec<&str> = changes
        .iter()
        .filter(|c| c.class == PathClass::Production)
        .map(|c| c.path.as_str())
        .collect();
    // A new test file the test command never collects runs no test: it is no test change.
    let tests_changed = changes
        .iter()
        .any(|c| (c.class == PathClass::Test || c.mixed) && c.collected != Some(false));
    if !production.is_empty() && !tests_changed && !allow_no_tests {
        let uncollected: Vec<&str> = changes
            .iter()
            .filter(|c| c.collected == Some(false))
            .map(|c| c.path.as_str())
            .collect();
        let but = if uncollected.is_empty() {
            "but no tests".to_owned()
        } else {
            format!(
                "but no tests that run (the test command does not collect {})",
                uncollected.join(", ")
            )
        };
        findings.push(
            Finding::new(
                Rule::NoTestsChanged,
                format!(
                    "no tests changed: the change touches production code ({}) {but} (pass --allow-no-tests if that is intended)",
                    production.join(", ")
                ),
            )
            .subjects(production.iter().copied()),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::profile::Profile;
    use crate::git::ChangeKind;

    fn file(path: &str, class: PathClass) -> ChangedFile {
        ChangedFile {
            path: path.into(),
            old_path: None,
            class,
            change: ChangeKind::Modified,
            mixed: false,
            detail: None,
            collected: None,
        }
    }

    fn python(allow: &[&str], deny: &[&str]) -> Classifier {
        let p = Profile::preset("python").unwrap();
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Classifier::new(&p.paths, &own(allow), &own(deny)).unwrap()
    }

    fn rules(findings: &[Finding]) -> Vec<Rule> {
        findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn a_fix_with_its_test_inside_the_scope_breaks_no_rule() {
        let changes = [
            file("calc.py", PathClass::Production),
            file("tests/test_calc.py", PathClass::Test),
        ];
        assert_eq!(
            check(&changes, &python(&["calc.py", "tests/"], &[]), false),
            vec![]
        );
    }

    #[test]
    fn production_code_without_a_test_fails_unless_allowed() {
        let changes = [
            file("calc.py", PathClass::Production),
            file("README.md", PathClass::Docs),
        ];
        let found = check(&changes, &python(&[], &[]), false);
        assert_eq!(
            found,
            vec![Finding::new(
                Rule::NoTestsChanged,
                "no tests changed: the change touches production code (calc.py) but no tests (pass --allow-no-tests if that is intended)"
            )
            .subjects(["calc.py"])]
        );
        assert_eq!(check(&changes, &python(&[], &[]), true), vec![]);
    }

    #[test]
    fn a_new_test_file_the_test_command_does_not_collect_is_no_test_change() {
        let mut test = file("tests/check_calc.py", PathClass::Test);
        test.collected = Some(false);
        let changes = vec![file("calc.py", PathClass::Production), test.clone()];
        let findings = check(&changes, &python(&[], &[]), false);
        assert_eq!(rules(&findings), vec![Rule::NoTestsChanged]);
        assert_eq!(
            findings[0].message,
            "no tests changed: the change touches production code (calc.py) but no tests that run (the test command does not collect tests/check_calc.py) (pass --allow-no-tests if that is intended)"
        );
        test.collected = Some(true);
        let changes = vec![file("calc.py", PathClass::Production), test];
        assert!(check(&changes, &python(&[], &[]), false).is_empty());
    }

    #[test]
    fn a_mixed_file_counts_as_a_changed_test() {
        let mut lib = file("src/lib.rs", PathClass::Production);
        lib.mixed = true;
        assert_eq!(check(&[lib], &python(&[], &[]), false), vec![]);
    }

    #[test]
    fn files_outside_the_allowed_paths_or_under_denied_ones_are_named() {
        let changes = [
            file("calc.py", PathClass::Production),
            file("setup.py", PathClass::Production),
            file("tests/test_calc.py", PathClass::Test),
        ];
        let found = check(
            &changes,
            &python(&["calc.py", "tests/"], &["setup.py"]),
            false,
        );
        assert_eq!(rules(&found), vec![Rule::OutOfScope, Rule::DeniedPath]);
        assert_eq!(
            found[0].message,
            "out of scope: the change touches 1 file outside the allowed paths: setup.py"
        );
        assert_eq!(
            found[1].message,
            "out of scope: the change touches denied paths: setup.py"
        );
        assert_eq!(found[1].subjects, vec!["setup.py".to_string()]);
    }
}
