//! Which tests a change touches, and whether it removes or weakens existing ones.
//!
//! The tests of each side of a changed file are found per language (`functions.rs`: tree-sitter grammars
//! for Python, Go and JS/TS, `syn` for Rust), each keyed by the id its runner reports within the file. A test
//! is *changed* when its own text differs from base's (or it is new): a diff hunk that merely slides across
//! a neighbour (a new test added directly above an old one) changes nothing of the neighbour. Tests are also
//! *selected*, without being changed, when what they use changes: code outside test functions in their
//! file (a helper, a fixture, a table), a Python helper module they import (`tests/helpers.py`), a
//! `conftest.py` or a non-code file (test data) of their directory, because real fixes often change only
//! those. The ids come from the runner's results at head, so they are exactly what the runner
//! can select.

use std::collections::{BTreeMap, BTreeSet};

use crate::gate::results::{Runner, TestResult};
use crate::gate::steps::plural;

pub mod collected;
mod functions;
mod imports;
mod pytest;
mod sources;

pub use collected::{collected, Collected};
pub use functions::{test_functions, TestFn};
pub use sources::{GitTree, NoSources, Sources};

use functions::{file_tests, known_test_functions, lang};
use pytest::PytestConfig;

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
    /// Every test to run: the changed ones and the ones selected because something they use changed.
    pub ids: BTreeSet<String>,
    /// The tests whose own text changed, new tests included (a subset of `ids`).
    pub changed: BTreeSet<String>,
    /// Why tests were selected wholesale (a helper or data file changed).
    pub notes: Vec<String>,
}

impl Touched {
    /// The tests selected only because something they use changed, not their own text.
    pub fn selected(&self) -> BTreeSet<String> {
        self.ids.difference(&self.changed).cloned().collect()
    }
}

/// Tests the change removed or weakened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Weakened {
    pub removed: Vec<String>,
    pub weakened: Vec<String>,
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

/// A head id's scope per runner: its Go package, its cargo target's source path, its pytest or node file.
fn id_scope(runner: Runner, id: &str) -> Option<&str> {
    let (scope, _) = id.split_once("::")?;
    match runner {
        Runner::Cargo => Some(scope.split_once('@').map_or(scope, |(_, p)| p)),
        Runner::Go | Runner::Pytest | Runner::Node => Some(scope),
        Runner::Generic => None,
    }
}

/// Whether a head id is the test a file's test of id `key` runs as: the same class path and name (pytest,
/// parameters aside), the same function (Go, subtests aside), the same name path (node, subtests aside),
/// the same inline modules and name (cargo, after the file's own module path).
fn id_is(runner: Runner, id: &str, key: &str) -> bool {
    let Some((_, rest)) = id.split_once("::") else {
        return false;
    };
    match runner {
        Runner::Pytest => rest.split('[').next() == Some(key),
        Runner::Go => rest.split('/').next() == Some(key),
        Runner::Node => rest == key || rest.starts_with(&format!("{key} > ")),
        Runner::Cargo => rest == key || rest.ends_with(&format!("::{key}")),
        Runner::Generic => false,
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
    let Some(scope) = id_scope(runner, id) else {
        return false;
    };
    match runner {
        Runner::Go => go_module.is_some_and(|m| scope == go_import_path(m, parent(path))),
        Runner::Cargo => {
            if path.starts_with("tests/") {
                // An integration test target is a file in tests/ or a directory with main.rs.
                let target_dir = path
                    .strip_prefix("tests/")
                    .and_then(|r| r.split_once('/'))
                    .map(|(d, _)| d);
                match target_dir {
                    Some(d) => scope.starts_with(&format!("tests/{d}/")),
                    None => scope == path,
                }
            } else if let Some(module) = rust_module(path) {
                let (_, test) = id.split_once("::").unwrap_or(("", id));
                scope.starts_with("src/")
                    && (module.is_empty()
                        || test.starts_with(&format!("{module}::"))
                        || scope == path)
            } else {
                false
            }
        }
        Runner::Pytest | Runner::Node => scope == path,
        Runner::Generic => false,
    }
}

/// Whether a head id lives under a directory (for data files and conftest.py).
fn id_under_dir(runner: Runner, go_module: Option<&str>, dir: &str, id: &str) -> bool {
    let Some(scope) = id_scope(runner, id) else {
        return false;
    };
    match runner {
        Runner::Go => go_module.is_some_and(|m| {
            let root = go_import_path(m, dir);
            scope == root || scope.starts_with(&format!("{root}/"))
        }),
        _ => dir.is_empty() || scope.starts_with(&format!("{dir}/")),
    }
}

/// The tests at head that the change touches, without reading the rest of the tree (a changed Python
/// helper then selects every test of its directory). `head` are the runner's results at head.
pub fn touched(
    runner: Runner,
    go_module: Option<&str>,
    changes: &[TestChange],
    head: &[TestResult],
) -> Touched {
    touched_in(runner, go_module, changes, head, &NoSources)
}

/// The tests at head that the change touches; `tree` is the tree at head (for the tests importing a changed
/// Python helper and for pytest's settings). `head` are the runner's results at head.
pub fn touched_in(
    runner: Runner,
    go_module: Option<&str>,
    changes: &[TestChange],
    head: &[TestResult],
    tree: &dyn Sources,
) -> Touched {
    let mut out = Touched::default();
    let pytest = (runner == Runner::Pytest).then(|| PytestConfig::read(tree));
    for ch in changes {
        let Some(new) = &ch.new else { continue };
        let in_file: Vec<&str> = head
            .iter()
            .map(|r| r.id.as_str())
            .filter(|id| id_in_file(runner, go_module, &ch.path, id))
            .collect();
        let name = ch.path.rsplit('/').next().unwrap_or(&ch.path);
        let is_code = lang(&ch.path).is_some();
        let python = runner == Runner::Pytest && lang(&ch.path) == Some(Runner::Pytest);
        if !is_code || name == "conftest.py" || (python && name == "__init__.py") {
            // Test data, fixtures, conftest.py, a test package: every test under the nearest test directory.
            select_dir(&mut out, runner, go_module, &ch.path, head, "changed");
            continue;
        }
        if let Some(config) = pytest
            .as_ref()
            .filter(|c| python && !c.is_test_module(&ch.path))
        {
            select_importers(&mut out, runner, go_module, &ch.path, head, tree, config);
            continue;
        }
        let Some(new_tests) = file_tests(&ch.path, new) else {
            select_whole_file(&mut out, &ch.path, &in_file);
            continue;
        };
        let Some(old) = &ch.old else {
            // A new file: its tests. Where ids are scoped wider than the file (a Go package, a Rust crate
            // root), only the tests the file defines.
            let wide =
                runner == Runner::Go || (runner == Runner::Cargo && ch.path.starts_with("src/"));
            let ids = in_file
                .iter()
                .filter(|id| !wide || new_tests.fns.iter().any(|f| id_is(runner, id, &f.key)))
                .map(|s| s.to_string());
            out.changed.extend(ids.clone());
            out.ids.extend(ids);
            continue;
        };
        let Some(old_tests) = file_tests(&ch.path, old) else {
            select_whole_file(&mut out, &ch.path, &in_file);
            continue;
        };
        // Changed: a test whose own text is not the text of base's test of the same id.
        let changed_keys: Vec<&str> = new_tests
            .texts
            .iter()
            .filter(|(key, text)| old_tests.texts.get(*key) != Some(*text))
            .map(|(key, _)| key.as_str())
            .collect();
        let changed: Vec<&str> = in_file
            .iter()
            .copied()
            .filter(|id| changed_keys.iter().any(|k| id_is(runner, id, k)))
            .collect();
        out.changed.extend(changed.iter().map(|s| s.to_string()));
        out.ids.extend(changed.iter().map(|s| s.to_string()));
        if new_tests.rest != old_tests.rest {
            out.notes.push(format!(
                "{} changed outside test functions: selected all {} of it",
                ch.path,
                plural(in_file.len(), "test")
            ));
            out.ids.extend(in_file.iter().map(|s| s.to_string()));
        } else if changed.is_empty() && new_tests.imports != old_tests.imports {
            out.notes.push(format!(
                "{} changed only its imports: selected all {} of it",
                ch.path,
                plural(in_file.len(), "test")
            ));
            out.ids.extend(in_file.iter().map(|s| s.to_string()));
        }
    }
    out
}

/// Selects every test under the nearest test directory of a changed non-test file (test data, a
/// `conftest.py`).
fn select_dir(
    out: &mut Touched,
    runner: Runner,
    go_module: Option<&str>,
    path: &str,
    head: &[TestResult],
    why: &str,
) {
    let mut dir = parent(path).to_owned();
    if let Some(pos) = dir.find("testdata") {
        dir = dir[..pos].trim_end_matches('/').to_owned();
    }
    // Data is often read by tests elsewhere (a Go package that embeds a test corpus, tests at the root
    // reading `fixtures/`): when no test lives under the data's own directory, go up to the nearest one
    // that has tests, up to the whole repository.
    let under = |dir: &str| -> Vec<&str> {
        head.iter()
            .map(|r| r.id.as_str())
            .filter(|id| id_under_dir(runner, go_module, dir, id))
            .collect()
    };
    let mut ids = under(&dir);
    while ids.is_empty() && !dir.is_empty() {
        dir = parent(&dir).to_owned();
        ids = under(&dir);
    }
    out.notes.push(format!(
        "{path} {why}: selected the {} under {}",
        plural(ids.len(), "test"),
        if dir.is_empty() {
            "the repository"
        } else {
            &dir
        }
    ));
    out.ids.extend(ids.into_iter().map(str::to_owned));
}

/// Selects the tests of the modules that import a changed Python helper (directly or through other
/// modules), or every test of its directory when none does.
fn select_importers(
    out: &mut Touched,
    runner: Runner,
    go_module: Option<&str>,
    path: &str,
    head: &[TestResult],
    tree: &dyn Sources,
    config: &PytestConfig,
) {
    let files: BTreeSet<String> = imports::importers(path, tree)
        .into_iter()
        .filter(|f| config.is_test_module(f))
        .collect();
    let ids: Vec<&str> = head
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| id_scope(runner, id).is_some_and(|s| files.contains(s)))
        .collect();
    if ids.is_empty() {
        select_dir(
            out,
            runner,
            go_module,
            path,
            head,
            "changed and no test module that ran imports it",
        );
        return;
    }
    out.notes.push(format!(
        "{path} changed: selected the {} of the {} that import it",
        plural(ids.len(), "test"),
        plural(files.len(), "test module")
    ));
    out.ids.extend(ids.into_iter().map(str::to_owned));
}

/// Selects every test of a changed file whose test functions cannot be known (a file that does not parse
/// on one side): any of them may be the one a change belongs to.
fn select_whole_file(out: &mut Touched, path: &str, in_file: &[&str]) {
    out.notes.push(format!(
        "{path} does not parse: selected all {} of it",
        plural(in_file.len(), "test")
    ));
    out.ids.extend(in_file.iter().map(|s| s.to_string()));
}

/// Tests the change deletes, and tests that lose assertions or gain skip markers, each named by its full
/// id (`tests/test_x.py::TestA::test_y`). A file whose tests cannot be known on either side (it does not
/// parse) is not compared: it reports nothing rather than every test as removed.
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
            new_fns.into_iter().map(|f| (f.key.clone(), f)).collect();
        for f in &old_fns {
            match new_fns.get(&f.key) {
                None => w.removed.push(format!("{}::{}", ch.path, f.key)),
                Some(n) if n.assertions < f.assertions => w.weakened.push(format!(
                    "{}::{} has fewer assertions ({} → {})",
                    ch.path, f.key, f.assertions, n.assertions
                )),
                Some(n) if n.skips > f.skips => w
                    .weakened
                    .push(format!("{}::{} is now skipped", ch.path, f.key)),
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
    fn data_no_test_of_its_directory_reads_selects_the_nearest_tests_above() {
        // toml's shape: a test corpus under internal/toml-test/tests/, embedded by a package without tests,
        // read by the root package's TestToml subtests.
        let head = [
            pass("example.com/m::TestToml/decode/valid/string/multiline"),
            pass("example.com/m::TestToml/encode/valid/string/multiline"),
        ];
        let t = touched(
            Runner::Go,
            Some("example.com/m"),
            &[change(
                "internal/toml-test/tests/valid/string/multiline.toml",
                Some("a"),
                Some("b"),
            )],
            &head,
        );
        assert_eq!(t.ids.len(), 2, "{:?}", t.notes);
        assert!(t.changed.is_empty());
        assert!(t.notes[0].contains("under the repository"), "{:?}", t.notes);
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

    fn ids(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_new_test_added_directly_above_an_old_one_changes_only_the_new_one() {
        // The diff of such a change slides: it can start inside the old test and end inside the new one.
        let py_old = "def test_old():\n    assert 1\n";
        let py_new = "def test_new():\n    assert 2\n\n\ndef test_old():\n    assert 1\n";
        let go_old =
            "package m\n\nfunc TestOld(t *testing.T) {\n\tif f() {\n\t\tt.Fatal(\"x\")\n\t}\n}\n";
        let go_new = "package m\n\nfunc TestNew(t *testing.T) {\n\tif f() {\n\t\tt.Fatal(\"y\")\n\t}\n}\n\nfunc TestOld(t *testing.T) {\n\tif f() {\n\t\tt.Fatal(\"x\")\n\t}\n}\n";
        let rs_old = "#[test]\nfn old() {\n    assert!(f());\n}\n";
        let rs_new = "#[test]\nfn new() {\n    assert!(f());\n}\n\n#[test]\nfn old() {\n    assert!(f());\n}\n";
        let js_old = "test('old', () => {\n  assert.ok(f());\n});\n";
        let js_new = "test('new', () => {\n  assert.ok(f());\n});\n\ntest('old', () => {\n  assert.ok(f());\n});\n";
        type Case<'a> = (
            Runner,
            Option<&'a str>,
            &'a str,
            &'a str,
            &'a str,
            [&'a str; 2],
            &'a str,
        );
        let cases: [Case; 4] = [
            (
                Runner::Pytest,
                None,
                "tests/test_s.py",
                py_old,
                py_new,
                ["tests/test_s.py::test_new", "tests/test_s.py::test_old"],
                "tests/test_s.py::test_new",
            ),
            (
                Runner::Go,
                Some("example.com/m"),
                "s_test.go",
                go_old,
                go_new,
                ["example.com/m::TestNew", "example.com/m::TestOld"],
                "example.com/m::TestNew",
            ),
            (
                Runner::Cargo,
                None,
                "tests/s.rs",
                rs_old,
                rs_new,
                ["s@tests/s.rs::new", "s@tests/s.rs::old"],
                "s@tests/s.rs::new",
            ),
            (
                Runner::Node,
                None,
                "test/s.test.js",
                js_old,
                js_new,
                ["test/s.test.js::new", "test/s.test.js::old"],
                "test/s.test.js::new",
            ),
        ];
        for (runner, module, path, old, new, head, want) in cases {
            let head: Vec<TestResult> = head.iter().map(|id| pass(id)).collect();
            let t = touched(runner, module, &[change(path, Some(old), Some(new))], &head);
            assert_eq!(t.ids, ids(&[want]), "{path}: {t:?}");
            assert_eq!(t.changed, ids(&[want]), "{path}");
            assert!(t.notes.is_empty(), "{path}: {:?}", t.notes);
        }
    }

    #[test]
    fn python_methods_of_the_same_name_in_two_classes_are_told_apart() {
        let old = "class TestA:\n    def test_y(self):\n        assert 1\n        assert 2\n\n\nclass TestB:\n    def test_y(self):\n        assert 1\n";
        let new = old.replace(
            "class TestB:\n    def test_y(self):\n        assert 1\n",
            "class TestB:\n    def test_y(self):\n        assert 1 == 1\n",
        );
        let head = [
            pass("tests/test_c.py::TestA::test_y"),
            pass("tests/test_c.py::TestB::test_y"),
        ];
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_c.py", Some(old), Some(&new))],
            &head,
        );
        assert_eq!(t.ids, ids(&["tests/test_c.py::TestB::test_y"]));
        // Dropping TestB's test while TestA keeps one of the same name is a removal named with its class.
        let dropped = "class TestA:\n    def test_y(self):\n        assert 1\n        assert 2\n\n\nclass TestB:\n    pass\n";
        let w = weakened(&[change("tests/test_c.py", Some(old), Some(dropped))]);
        assert_eq!(
            w.removed,
            vec!["tests/test_c.py::TestB::test_y".to_string()]
        );
        assert_eq!(w.weakened, Vec::<String>::new());
        // One class losing an assertion is named with its class, and the other is not blamed.
        let loosened = old.replace("        assert 1\n        assert 2\n", "        assert 1\n");
        let w = weakened(&[change("tests/test_c.py", Some(old), Some(&loosened))]);
        assert_eq!(
            w,
            Weakened {
                removed: vec![],
                weakened: vec![
                    "tests/test_c.py::TestA::test_y has fewer assertions (2 → 1)".to_string()
                ]
            }
        );
    }

    #[test]
    fn a_test_inside_a_string_literal_is_neither_removed_nor_weakened() {
        let old = "SAMPLE = '''\ndef test_sample():\n    assert 1\n'''\n\n\ndef test_real():\n    assert SAMPLE\n";
        let new =
            "SAMPLE = '''\nprint('no test here')\n'''\n\n\ndef test_real():\n    assert SAMPLE\n";
        assert_eq!(
            weakened(&[change("tests/test_s.py", Some(old), Some(new))]),
            Weakened::default()
        );
    }

    #[test]
    fn comment_only_and_import_changes_beside_a_new_test_select_only_the_new_test() {
        let old = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
        let new = "# Tests of calc.\nfrom calc import add, mean\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n";
        let head = [
            pass("tests/test_calc.py::test_add"),
            pass("tests/test_calc.py::test_mean"),
        ];
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_calc.py", Some(old), Some(new))],
            &head,
        );
        assert_eq!(t.ids, ids(&["tests/test_calc.py::test_mean"]));
        // Imports alone changing: the file's tests are what they affect.
        let only_imports =
            "from calc2 import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_calc.py", Some(old), Some(only_imports))],
            &head[..1],
        );
        assert_eq!(t.ids, ids(&["tests/test_calc.py::test_add"]));
        assert_eq!(t.changed, BTreeSet::new());
        assert_eq!(
            t.notes,
            vec![
                "tests/test_calc.py changed only its imports: selected all 1 test of it"
                    .to_string()
            ]
        );
    }

    #[test]
    fn a_changed_fixture_selects_the_file_but_counts_only_changed_tests_as_changed() {
        let old = "import pytest\n\n\n@pytest.fixture\ndef cmd():\n    return 'a'\n\n\ndef test_match(cmd):\n    assert cmd\n";
        let new = "import pytest\n\n\n@pytest.fixture\ndef cmd():\n    return 'b'\n\n\ndef test_match(cmd):\n    assert cmd\n\n\ndef test_new(cmd):\n    assert cmd == 'b'\n";
        let head = [
            pass("tests/test_f.py::test_match"),
            pass("tests/test_f.py::test_new"),
        ];
        let t = touched(
            Runner::Pytest,
            None,
            &[change("tests/test_f.py", Some(old), Some(new))],
            &head,
        );
        assert_eq!(t.ids.len(), 2);
        assert_eq!(t.changed, ids(&["tests/test_f.py::test_new"]));
        assert_eq!(t.selected(), ids(&["tests/test_f.py::test_match"]));
    }

    #[test]
    fn a_changed_python_helper_selects_the_tests_that_import_it_else_its_directory() {
        let tree: BTreeMap<String, String> = [
            ("tests/helpers.py", "def make():\n    return 2\n"),
            (
                "tests/test_a.py",
                "from tests.helpers import make\n\n\ndef test_a():\n    assert make()\n",
            ),
            (
                "tests/unit/test_b.py",
                "import helpers\n\n\ndef test_b():\n    assert helpers.make()\n",
            ),
            ("tests/test_c.py", "def test_c():\n    assert 1\n"),
            ("tests/lonely.py", "X = 1\n"),
        ]
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let head = [
            pass("tests/test_a.py::test_a"),
            pass("tests/unit/test_b.py::test_b"),
            pass("tests/test_c.py::test_c"),
        ];
        let helper = change(
            "tests/helpers.py",
            Some("def make():\n    return 1\n"),
            Some("def make():\n    return 2\n"),
        );
        let t = touched_in(
            Runner::Pytest,
            None,
            std::slice::from_ref(&helper),
            &head,
            &tree,
        );
        assert_eq!(
            t.ids,
            ids(&["tests/test_a.py::test_a", "tests/unit/test_b.py::test_b"])
        );
        assert_eq!(t.changed, BTreeSet::new());
        assert_eq!(
            t.notes,
            vec!["tests/helpers.py changed: selected the 2 tests of the 2 test modules that import it".to_string()]
        );
        let lonely = change("tests/lonely.py", Some("X = 0\n"), Some("X = 1\n"));
        let t = touched_in(Runner::Pytest, None, &[lonely], &head, &tree);
        assert_eq!(t.ids.len(), 3);
        assert_eq!(
            t.notes,
            vec!["tests/lonely.py changed and no test module that ran imports it: selected the 3 tests under tests".to_string()]
        );
        // Without the tree, the directory.
        let t = touched(Runner::Pytest, None, &[helper], &head);
        assert_eq!(t.ids.len(), 3);
    }

    #[test]
    fn node_tests_in_suites_are_selected_by_their_name_path() {
        let old = "describe('calc', () => {\n  it('adds', () => {\n    assert.equal(add(1, 2), 3);\n  });\n  it('subtracts', () => {\n    assert.equal(sub(2, 1), 1);\n  });\n});\n";
        let new = old.replace("sub(2, 1), 1", "sub(3, 1), 2");
        let head = [
            pass("test/calc.test.js::calc > adds"),
            pass("test/calc.test.js::calc > subtracts"),
        ];
        let t = touched(
            Runner::Node,
            None,
            &[change("test/calc.test.js", Some(old), Some(&new))],
            &head,
        );
        assert_eq!(t.ids, ids(&["test/calc.test.js::calc > subtracts"]));
        let w = weakened(&[change(
            "test/calc.test.js",
            Some(old),
            Some("describe('calc', () => {});\n"),
        )]);
        assert_eq!(
            w.removed,
            vec![
                "test/calc.test.js::calc > adds".to_string(),
                "test/calc.test.js::calc > subtracts".to_string()
            ]
        );
    }
}
