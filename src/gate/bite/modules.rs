//! Which tests a change to a file of a cargo test binary touches, when that file is placed by the target's
//! module tree rather than by its name: `tests/regression.rs` under `[[test]] name = "integration"
//! path = "tests/tests.rs"` holds `integration@tests/tests.rs::regression::*`.
//!
//! The general mapping ([`testmap`](crate::gate::testmap)) is used for every other file; this one knows the
//! [`Layout`](crate::gate::cargo::Layout) and the tests macros generate ([`test_items`]). A test is touched when
//! its own text differs from base's (or it is new); a change outside every test of the file (a helper, an
//! import, a macro definition) touches every test the file holds.

use std::collections::BTreeMap;

use crate::gate::cargo::{test_items, Layout, TestItem};
use crate::gate::results::TestResult;
use crate::gate::steps::plural;
use crate::gate::testmap::{TestChange, Touched};

/// The tests at head that `change` touches, if the file belongs to a test binary's module tree; None for files
/// this mapping does not place (sources of libraries and binaries, files of no target).
pub fn touched(layout: &Layout, change: &TestChange, head: &[TestResult]) -> Option<Touched> {
    let owners: Vec<_> = layout
        .owners(&change.path)
        .iter()
        .filter(|f| layout.targets[f.target].is_test_binary())
        .collect();
    if owners.is_empty() {
        return None;
    }
    let mut out = Touched::default();
    let new = change.new.as_deref()?;
    // The ids of the file's tests at head, each with its path inside the file.
    let mut in_file: Vec<(&str, Vec<&str>)> = Vec::new();
    for owner in &owners {
        let prefix = format!("{}::", layout.targets[owner.target].id_prefix());
        let children: Vec<&[String]> = layout
            .file_modules(owner.target)
            .into_iter()
            .filter(|m| m.len() > owner.module.len() && m.starts_with(&owner.module))
            .collect();
        for r in head {
            let Some(test) = r.id.strip_prefix(&prefix) else {
                continue;
            };
            let parts: Vec<&str> = test.split("::").collect();
            let inside = parts.len() > owner.module.len()
                && parts.iter().zip(&owner.module).all(|(a, b)| a == b);
            let in_child = children
                .iter()
                .any(|c| parts.len() > c.len() && parts.iter().zip(c.iter()).all(|(a, b)| a == b));
            if inside && !in_child {
                in_file.push((r.id.as_str(), parts[owner.module.len()..].to_vec()));
            }
        }
    }
    let whole_file = |out: &mut Touched, why: &str| {
        out.notes.push(format!(
            "{} {why}: selected all {} of it",
            change.path,
            plural(in_file.len(), "test")
        ));
        out.ids.extend(in_file.iter().map(|(id, _)| id.to_string()));
    };
    let Some(old) = change.old.as_deref() else {
        out.ids.extend(in_file.iter().map(|(id, _)| id.to_string()));
        return Some(out);
    };
    let (Some(new_items), Some(old_items)) = (test_items(new), test_items(old)) else {
        whole_file(&mut out, "does not parse");
        return Some(out);
    };
    if rest(new, &new_items) != rest(old, &old_items) {
        whole_file(&mut out, "changed outside its tests");
        return Some(out);
    }
    let old_text: BTreeMap<&[String], String> = old_items
        .iter()
        .map(|t| (t.path.as_slice(), text_of(old, t)))
        .collect();
    let changed: Vec<&TestItem> = new_items
        .iter()
        .filter(|t| old_text.get(t.path.as_slice()) != Some(&text_of(new, t)))
        .collect();
    for (id, parts) in &in_file {
        let hit = changed
            .iter()
            .any(|t| parts.len() >= t.path.len() && parts.iter().zip(&t.path).all(|(a, b)| a == b));
        if hit {
            out.ids.insert(id.to_string());
        }
    }
    Some(out)
}

/// A test's own text, its lines trimmed (indentation changes around it do not make it changed).
fn text_of(text: &str, item: &TestItem) -> String {
    text.lines()
        .skip(item.start.saturating_sub(1))
        .take(item.end + 1 - item.start.max(1))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file without its tests, blank lines and line comments: what every test of it may depend on. A comment
/// above a new test (`// See: https://github.com/BurntSushi/ripgrep/issues/2480`) changes no other test.
fn rest(text: &str, items: &[TestItem]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(i, _)| !items.iter().any(|t| t.start <= i + 1 && *i < t.end))
        .map(|(_, l)| l.trim().to_owned())
        .filter(|l| !l.is_empty() && (!l.starts_with("//") || l.starts_with("//!")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::cargo::Target;
    use crate::gate::results::TestStatus;
    use pretty_assertions::assert_eq;

    fn pass(id: &str) -> TestResult {
        TestResult {
            id: id.into(),
            status: TestStatus::Pass,
            duration_ms: None,
            message: None,
        }
    }

    const ROOT: &str = "#[macro_use]\nmod macros;\nmod regression;\nmod misc;\n";
    const OLD: &str = "use crate::util;\n\nrgtest!(r1, |dir, cmd| {\n    cmd.arg(\"a\");\n});\n";

    fn layout() -> Layout {
        let tree = [
            ("tests/tests.rs", ROOT),
            ("tests/macros.rs", "macro_rules! rgtest { () => {} }\n"),
            ("tests/regression.rs", OLD),
            ("tests/misc.rs", "\n"),
            ("src/lib.rs", "\n"),
        ];
        Layout::new(
            vec![
                Target {
                    package: "rg".into(),
                    name: "rg".into(),
                    kind: vec!["lib".into()],
                    src_path: "src/lib.rs".into(),
                    package_dir: String::new(),
                    test: true,
                },
                Target {
                    package: "rg".into(),
                    name: "integration".into(),
                    kind: vec!["test".into()],
                    src_path: "tests/tests.rs".into(),
                    package_dir: String::new(),
                    test: true,
                },
            ],
            &|p: &str| {
                tree.iter()
                    .find(|(path, _)| *path == p)
                    .map(|(_, t)| t.to_string())
            },
        )
    }

    fn head() -> Vec<TestResult> {
        [
            "integration@tests/tests.rs::regression::r1",
            "integration@tests/tests.rs::regression::r2",
            "integration@tests/tests.rs::misc::r2",
            "rg@src/lib.rs::regression::r2",
        ]
        .iter()
        .map(|id| pass(id))
        .collect()
    }

    fn change(old: Option<&str>, new: &str) -> TestChange {
        TestChange {
            path: "tests/regression.rs".into(),
            old: old.map(Into::into),
            new: Some(new.into()),
        }
    }

    fn ids(t: &Touched) -> Vec<&str> {
        t.ids.iter().map(String::as_str).collect()
    }

    #[test]
    fn a_new_macro_test_in_a_module_file_selects_it_alone() {
        let new = format!("{OLD}\nrgtest!(r2, |dir, cmd| {{\n    cmd.arg(\"b\");\n}});\n");
        let t = touched(&layout(), &change(Some(OLD), &new), &head()).unwrap();
        assert_eq!(ids(&t), vec!["integration@tests/tests.rs::regression::r2"]);
        assert!(t.notes.is_empty());
    }

    #[test]
    fn a_new_test_with_a_comment_above_it_selects_it_alone() {
        let new = format!(
            "{OLD}\n// See: https://github.com/BurntSushi/ripgrep/issues/2\nrgtest!(r2, |dir, cmd| {{\n    cmd.arg(\"b\");\n}});\n"
        );
        let t = touched(&layout(), &change(Some(OLD), &new), &head()).unwrap();
        assert_eq!(ids(&t), vec!["integration@tests/tests.rs::regression::r2"]);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn a_test_added_above_an_existing_one_does_not_select_the_neighbour() {
        let new = OLD.replace(
            "rgtest!(r1",
            "rgtest!(r2, |dir, cmd| {\n    cmd.arg(\"a\");\n});\n\nrgtest!(r1",
        );
        let t = touched(&layout(), &change(Some(OLD), &new), &head()).unwrap();
        assert_eq!(ids(&t), vec!["integration@tests/tests.rs::regression::r2"]);
    }

    #[test]
    fn a_changed_helper_line_or_a_new_file_selects_every_test_of_the_file() {
        let new = OLD.replace("use crate::util;", "use crate::util::Dir;");
        let t = touched(&layout(), &change(Some(OLD), &new), &head()).unwrap();
        assert_eq!(
            ids(&t),
            vec![
                "integration@tests/tests.rs::regression::r1",
                "integration@tests/tests.rs::regression::r2"
            ]
        );
        assert_eq!(
            t.notes,
            vec!["tests/regression.rs changed outside its tests: selected all 2 tests of it"]
        );
        let t = touched(&layout(), &change(None, OLD), &head()).unwrap();
        assert_eq!(t.ids.len(), 2);
    }

    #[test]
    fn files_of_no_test_binary_are_left_to_the_general_mapping() {
        let mut c = change(Some(OLD), OLD);
        c.path = "src/lib.rs".into();
        assert!(touched(&layout(), &c, &head()).is_none());
        c.path = "tests/orphan.rs".into();
        assert!(touched(&layout(), &c, &head()).is_none());
    }
}
