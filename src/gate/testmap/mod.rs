//! Which tests a change touches, and whether it removes or weakens existing ones.
//!
//! The test functions of each side of a changed file are found per language (`functions.rs`). A changed line
//! inside a test function selects that test (all its subtests, parametrized cases and table rows); a changed
//! line outside any test function (a helper, a fixture, a skip list) or a changed non-code file (test data)
//! selects every test of the file, package or directory, because real fixes often change only those
//! (GATE_TRAPS 4). The ids come from the runner's results at head, so they are exactly what the runner can
//! select.

use std::collections::{BTreeMap, BTreeSet};

use crate::gate::results::{Runner, TestResult};

mod functions;

pub use functions::{test_functions, TestFn};

use functions::{known_test_functions, lang};

/// One changed test path with both sides' text (None where the side has no such file or it is not text).
#[derive(Clone, Debug)]
pub struct TestChange {
    pub path: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// The tests a change touches.
#[derive(Clone, Debug, Default)]
pub struct Touched {
    pub ids: BTreeSet<String>,
    /// Why tests were selected wholesale (a helper or data file changed).
    pub notes: Vec<String>,
}

/// Tests the change removed or weakened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Weakened {
    pub removed: Vec<String>,
    pub weakened: Vec<String>,
}
/// Line numbers touched by the change: new-side lines inserted or replaced, and old-side lines deleted.
fn touched_lines(old: &str, new: &str) -> (BTreeSet<usize>, BTreeSet<usize>) {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut new_lines = BTreeSet::new();
    let mut old_lines = BTreeSet::new();
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            if change.value().trim().is_empty() {
                continue;
            }
            match change.tag() {
                similar::ChangeTag::Insert => {
                    if let Some(n) = change.new_index() {
                        new_lines.insert(n + 1);
                    }
                }
                similar::ChangeTag::Delete => {
                    if let Some(o) = change.old_index() {
                        old_lines.insert(o + 1);
                    }
                }
                similar::ChangeTag::Equal => {}
            }
        }
    }
    (new_lines, old_lines)
}

/// The Go import path of the package in `dir` (repository-relative), given the module path from go.mod.
pub fn go_import_path(module: &str, dir: &str) -> String {
    if dir.is_empty() {
        module.to_owned()
    } else {
        format!("{module}/{dir}")
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Splits a head id into (file or package, test name, top-level function name) per runner.
struct IdParts<'a> {
    scope: &'a str,
    top: String,
}

fn id_parts(runner: Runner, id: &str) -> Option<IdParts<'_>> {
    match runner {
        Runner::Go => {
            let (pkg, test) = id.split_once("::")?;
            Some(IdParts {
                scope: pkg,
                top: test.split('/').next()?.to_owned(),
            })
        }
        Runner::Cargo => {
            let (target, test) = id.split_once("::")?;
            let path = target.split_once('@').map_or(target, |(_, p)| p);
            Some(IdParts {
                scope: path,
                top: test.rsplit("::").next()?.to_owned(),
            })
        }
        Runner::Pytest => {
            let (file, rest) = id.split_once("::")?;
            let last = rest.rsplit("::").next()?;
            Some(IdParts {
                scope: file,
                top: last.split('[').next()?.to_owned(),
            })
        }
        Runner::Node => {
            let (file, rest) = id.split_once("::")?;
            Some(IdParts {
                scope: file,
                top: rest.rsplit(" > ").next()?.to_owned(),
            })
        }
        Runner::Generic => None,
    }
}

/// The module path of a Rust source file under `src/` (`src/a/b.rs` → `a::b`, `src/a/mod.rs` → `a`).
fn rust_module(path: &str) -> Option<String> {
    let rest = path.strip_prefix("src/")?.strip_suffix(".rs")?;
    let rest = rest.strip_suffix("/mod").unwrap_or(rest);
    if rest == "lib" || rest == "main" {
        return Some(String::new());
    }
    Some(rest.replace('/', "::"))
}

/// Whether a head id belongs to a changed test file (`path`).
fn id_in_file(runner: Runner, go_module: Option<&str>, path: &str, id: &str) -> bool {
    let Some(parts) = id_parts(runner, id) else {
        return false;
    };
    match runner {
        Runner::Go => go_module.is_some_and(|m| parts.scope == go_import_path(m, parent(path))),
        Runner::Cargo => {
            if path.starts_with("tests/") {
                // An integration test target is a file in tests/ or a directory with main.rs.
                let target_dir = path
                    .strip_prefix("tests/")
                    .and_then(|r| r.split_once('/'))
                    .map(|(d, _)| d);
                match target_dir {
                    Some(d) => parts.scope.starts_with(&format!("tests/{d}/")),
                    None => parts.scope == path,
                }
            } else if let Some(module) = rust_module(path) {
                let (_, test) = id.split_once("::").unwrap_or(("", id));
                parts.scope.starts_with("src/")
                    && (module.is_empty()
                        || test.starts_with(&format!("{module}::"))
                        || parts.scope == path)
            } else {
                false
            }
        }
        Runner::Pytest | Runner::Node => parts.scope == path,
        Runner::Generic => false,
    }
}

/// Whether a head id lives under a directory (for data files and conftest.py).
fn id_under_dir(runner: Runner, go_module: Option<&str>, dir: &str, id: &str) -> bool {
    let Some(parts) = id_parts(runner, id) else {
        return false;
    };
    match runner {
        Runner::Go => go_module.is_some_and(|m| {
            let root = go_import_path(m, dir);
            parts.scope == root || parts.scope.starts_with(&format!("{root}/"))
        }),
        _ => dir.is_empty() || parts.scope.starts_with(&format!("{dir}/")),
    }
}

/// The tests at head that the change touches. `head` are the runner's results at head.
pub fn touched(
    runner: Runner,
    go_module: Option<&str>,
    changes: &[TestChange],
    head: &[TestResult],
) -> Touched {
    let mut out = Touched::default();
    for ch in changes {
        let Some(new) = &ch.new else { continue };
        let in_file: Vec<&str> = head
            .iter()
            .map(|r| r.id.as_str())
            .filter(|id| id_in_file(runner, go_module, &ch.path, id))
            .collect();
        let is_code = lang(&ch.path).is_some();
        let is_conftest = ch.path.ends_with("conftest.py");
        if !is_code || is_conftest {
            // Test data, fixtures, conftest.py: every test under the nearest test directory.
            let mut dir = parent(&ch.path).to_owned();
            if let Some(pos) = dir.find("testdata") {
                dir = dir[..pos].trim_end_matches('/').to_owned();
            }
            let ids: Vec<&str> = head
                .iter()
                .map(|r| r.id.as_str())
                .filter(|id| id_under_dir(runner, go_module, &dir, id))
                .collect();
            out.notes.push(format!(
                "{} changed: selected the {} under {}",
                ch.path,
                crate::gate::steps::plural(ids.len(), "test"),
                if dir.is_empty() {
                    "the repository"
                } else {
                    &dir
                }
            ));
            out.ids.extend(ids.into_iter().map(str::to_owned));
            continue;
        }
        let Some(new_fns) = known_test_functions(&ch.path, new) else {
            select_whole_file(&mut out, &ch.path, &in_file);
            continue;
        };
        let Some(old) = &ch.old else {
            // A new file: its tests. Where ids are scoped wider than the file (a Go package, a Rust crate
            // root), only the test functions the file defines.
            let wide =
                runner == Runner::Go || (runner == Runner::Cargo && ch.path.starts_with("src/"));
            let names: BTreeSet<String> = new_fns.into_iter().map(|f| f.name).collect();
            out.ids.extend(
                in_file
                    .iter()
                    .filter(|id| {
                        !wide || id_parts(runner, id).is_some_and(|p| names.contains(&p.top))
                    })
                    .map(|s| s.to_string()),
            );
            continue;
        };
        let Some(old_fns) = known_test_functions(&ch.path, old) else {
            select_whole_file(&mut out, &ch.path, &in_file);
            continue;
        };
        let (new_lines, old_lines) = touched_lines(old, new);
        let mut names = BTreeSet::new();
        let mut outside = false;
        for n in &new_lines {
            match new_fns.iter().find(|f| f.start <= *n && *n <= f.end) {
                Some(f) => {
                    names.insert(f.name.clone());
                }
                None => outside = true,
            }
        }
        for o in &old_lines {
            match old_fns.iter().find(|f| f.start <= *o && *o <= f.end) {
                Some(f) => {
                    names.insert(f.name.clone());
                }
                None => outside = true,
            }
        }
        // Rust files holding production code too: lines outside test functions are production, unless they
        // lie in a test region (a macro generating tests inside `#[cfg(test)] mod tests`, a test helper).
        let mixed = runner == Runner::Cargo && ch.path.starts_with("src/");
        if mixed && outside {
            outside = in_test_region_outside_fns(&ch.path, new, &new_lines, &new_fns)
                || in_test_region_outside_fns(&ch.path, old, &old_lines, &old_fns);
        }
        if outside {
            out.notes.push(format!(
                "{} changed outside test functions: selected all {} of it",
                ch.path,
                crate::gate::steps::plural(in_file.len(), "test")
            ));
            out.ids.extend(in_file.iter().map(|s| s.to_string()));
            continue;
        }
        for id in in_file {
            if id_parts(runner, id).is_some_and(|p| names.contains(&p.top)) {
                out.ids.insert(id.to_owned());
            }
        }
    }
    out
}

/// Selects every test of a changed file whose test functions cannot be known (a Rust file that does not
/// parse on one side): any of them may be the one a changed line belongs to.
fn select_whole_file(out: &mut Touched, path: &str, in_file: &[&str]) {
    out.notes.push(format!(
        "{path} does not parse: selected all {} of it",
        crate::gate::steps::plural(in_file.len(), "test")
    ));
    out.ids.extend(in_file.iter().map(|s| s.to_string()));
}

/// Whether any of `lines` lies in a test region of the file but outside every test function.
fn in_test_region_outside_fns(
    path: &str,
    text: &str,
    lines: &BTreeSet<usize>,
    fns: &[TestFn],
) -> bool {
    let Some(regions) = crate::gate::split::regions_for(path).and_then(|f| f.test_regions(text))
    else {
        return false;
    };
    lines.iter().any(|n| {
        regions.iter().any(|r| r.contains(n)) && !fns.iter().any(|f| f.start <= *n && *n <= f.end)
    })
}

/// Tests the change deletes, and tests that lose assertions or gain skip markers. A file whose test functions
/// cannot be known on either side (a Rust file that does not parse) is not compared: it reports nothing rather
/// than every test as removed.
pub fn weakened(changes: &[TestChange]) -> Weakened {
    let mut w = Weakened::default();
    for ch in changes {
        let Some(old) = &ch.old else { continue };
        let Some(old_fns) = known_test_functions(&ch.path, old) else {
            continue;
        };
        if old_fns.is_empty() {
            continue;
        }
        let new_fns = match ch.new.as_deref() {
            Some(n) => match known_test_functions(&ch.path, n) {
                Some(fns) => fns,
                None => continue,
            },
            None => Vec::new(),
        };
        let new_fns: BTreeMap<String, TestFn> =
            new_fns.into_iter().map(|f| (f.name.clone(), f)).collect();
        for f in &old_fns {
            match new_fns.get(&f.name) {
                None => w.removed.push(format!("{}::{}", ch.path, f.name)),
                Some(n) if n.assertions < f.assertions => w.weakened.push(format!(
                    "{}::{} has fewer assertions ({} → {})",
                    ch.path, f.name, f.assertions, n.assertions
                )),
                Some(n) if n.skips > f.skips => w
                    .weakened
                    .push(format!("{}::{} is now skipped", ch.path, f.name)),
                Some(_) => {}
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::results::TestStatus;

    fn pass(id: &str) -> TestResult {
        TestResult {
            id: id.into(),
            status: TestStatus::Pass,
            duration_ms: None,
            message: None,
        }
    }

    fn change(path: &str, old: Option<&str>, new: Option<&str>) -> TestChange {
        TestChange {
            path: path.into(),
            old: old.map(Into::into),
            new: new.map(Into::into),
        }
    }

    #[test]
    fn a_go_table_row_added_selects_the_table_test_and_its_subtests_only() {
        let old = "package calc\n\nfunc TestAdd(t *testing.T) {\n\tcases := []int{1}\n\t_ = cases\n}\n\nfunc TestOther(t *testing.T) {}\n";
        let new = "package calc\n\nfunc TestAdd(t *testing.T) {\n\tcases := []int{1,\n\t\t2}\n\t_ = cases\n}\n\nfunc TestOther(t *testing.T) {}\n";
        let head = [
            pass("example.com/m::TestAdd"),
            pass("example.com/m::TestAdd/case_2"),
            pass("example.com/m::TestOther"),
            pass("example.com/m/sub::TestAdd"),
        ];
        let t = touched(
            Runner::Go,
            Some("example.com/m"),
            &[change("calc_test.go", Some(old), Some(new))],
            &head,
        );
        assert_eq!(
            t.ids,
            ["example.com/m::TestAdd", "example.com/m::TestAdd/case_2"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        );
    }

    #[test]
    fn a_changed_helper_selects_every_test_of_the_file() {
        let old = "def helper():\n    return 1\n\n\ndef test_a():\n    assert helper()\n\n\ndef test_b():\n    assert 1\n";
        let new = old.replace("return 1", "return 2");
        let head = [
            pass("tests/test_x.py::test_a"),
            pass("tests/test_x.py::test_b"),
            pass("tests/test_y.py::test_a"),
        ];
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_x.py", Some(old), Some(&new))],
            &head,
        );
        assert_eq!(t.ids.len(), 2);
        assert!(t.notes[0].contains("outside test functions"));
    }

    #[test]
    fn a_parametrized_case_added_selects_all_cases_of_that_test() {
        let old = "import pytest\n\n\n@pytest.mark.parametrize(\"x\", [1])\ndef test_x(x):\n    assert x\n\n\ndef test_z():\n    assert 1\n";
        let new = old.replace("[1]", "[1, 2]");
        let head = [
            pass("tests/test_p.py::test_x[1]"),
            pass("tests/test_p.py::test_x[2]"),
            pass("tests/test_p.py::test_z"),
        ];
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_p.py", Some(old), Some(&new))],
            &head,
        );
        assert_eq!(
            t.ids,
            ["tests/test_p.py::test_x[1]", "tests/test_p.py::test_x[2]"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        );
    }

    #[test]
    fn testdata_changes_select_the_package_tests() {
        let head = [
            pass("example.com/m/parse::TestA"),
            pass("example.com/m::TestB"),
        ];
        let t = touched(
            Runner::Go,
            Some("example.com/m"),
            &[change("parse/testdata/in.txt", Some("a"), Some("b"))],
            &head,
        );
        assert_eq!(
            t.ids,
            ["example.com/m/parse::TestA".to_string()]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn rust_inline_tests_in_src_select_by_module_and_name() {
        let old = "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn old() {}\n}\n";
        let new = "pub fn f() { }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn old() {}\n\n    #[test]\n    fn new_one() {\n        assert!(true);\n    }\n}\n";
        let head = [
            pass("calc@src/lib.rs::parse::tests::old"),
            pass("calc@src/lib.rs::parse::tests::new_one"),
            pass("calc@src/lib.rs::tests::new_one"),
        ];
        let t = touched(
            Runner::Cargo,
            None,
            &[change("src/parse.rs", Some(old), Some(new))],
            &head,
        );
        assert_eq!(
            t.ids,
            ["calc@src/lib.rs::parse::tests::new_one".to_string()]
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn a_new_go_test_file_selects_only_the_tests_it_defines() {
        let head = [
            pass("example.com/m::TestAbs"),
            pass("example.com/m::TestAdd"),
        ];
        let new = "package m\n\nfunc TestAbs(t *testing.T) {\n}\n";
        let t = touched(
            Runner::Go,
            Some("example.com/m"),
            &[change("abs_test.go", None, Some(new))],
            &head,
        );
        assert_eq!(
            t.ids,
            ["example.com/m::TestAbs".to_string()].into_iter().collect()
        );
    }

    #[test]
    fn a_macro_generating_inline_tests_selects_every_test_of_the_module() {
        let old = "pub fn f() -> i32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    macro_rules! cases {\n        ($($n:ident: $v:expr,)*) => { $(#[test] fn $n() { assert_eq!(super::f(), $v); })* };\n    }\n    cases! {\n        one: 1,\n    }\n}\n";
        let new = old
            .replace("    1\n}", "    2\n}")
            .replace("        one: 1,\n", "        one: 1,\n        two: 2,\n");
        let head = [
            pass("m@src/lib.rs::tests::one"),
            pass("m@src/lib.rs::tests::two"),
        ];
        let t = touched(
            Runner::Cargo,
            None,
            &[change("src/lib.rs", Some(old), Some(&new))],
            &head,
        );
        assert_eq!(t.ids.len(), 2, "{t:?}");
    }

    #[test]
    fn a_new_test_file_selects_all_its_tests() {
        let head = [
            pass("abs@tests/abs.rs::a"),
            pass("abs@tests/abs.rs::b"),
            pass("api@tests/api.rs::c"),
        ];
        let t = touched(
            Runner::Cargo,
            None,
            &[change("tests/abs.rs", None, Some("#[test]\nfn a() {}\n"))],
            &head,
        );
        assert_eq!(t.ids.len(), 2);
    }

    #[test]
    fn removed_and_weakened_tests_are_reported() {
        let old = "def test_a():\n    assert 1\n    assert 2\n\n\ndef test_b():\n    assert 1\n\n\ndef test_c():\n    assert 1\n";
        let new =
            "def test_a():\n    assert 1\n\n\n@pytest.mark.skip\ndef test_c():\n    assert 1\n";
        let w = weakened(&[change("tests/test_w.py", Some(old), Some(new))]);
        assert_eq!(w.removed, vec!["tests/test_w.py::test_b".to_string()]);
        assert_eq!(
            w.weakened,
            vec![
                "tests/test_w.py::test_a has fewer assertions (2 → 1)".to_string(),
                "tests/test_w.py::test_c is now skipped".to_string()
            ]
        );
        let gone = weakened(&[change("tests/test_w.py", Some(old), None)]);
        assert_eq!(gone.removed.len(), 3);
    }

    #[test]
    fn a_rust_test_file_that_does_not_parse_selects_all_its_tests_and_reports_no_removal() {
        let old = "#[test]\nfn a() {\n    assert!(true);\n}\n\n#[test]\nfn b() {}\n";
        let new = "#[test]\nfn a() {\n    assert!(true;\n}\n\n#[test]\nfn b() {}\n";
        assert!(test_functions("tests/x.rs", new).is_empty());
        let head = [
            pass("x@tests/x.rs::a"),
            pass("x@tests/x.rs::b"),
            pass("y@tests/y.rs::c"),
        ];
        for (old, new) in [(Some(old), new), (Some(new), old), (None, new)] {
            let t = touched(
                Runner::Cargo,
                None,
                &[change("tests/x.rs", old, Some(new))],
                &head,
            );
            assert_eq!(
                t.ids,
                ["x@tests/x.rs::a", "x@tests/x.rs::b"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                "{old:?} -> {new:?}"
            );
            assert_eq!(
                t.notes,
                vec!["tests/x.rs does not parse: selected all 2 tests of it".to_string()]
            );
        }
        let w = weakened(&[change("tests/x.rs", Some(old), Some(new))]);
        assert_eq!(w, Weakened::default());
    }
}
