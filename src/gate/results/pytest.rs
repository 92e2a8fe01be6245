//! Pytest: per-test results read from its JUnit XML file, and node-id selections of them.
//!
//! The JUnit file is pytest's only stable machine-readable output without plugins; what it lacks is the
//! node id, so the id is rebuilt from `file` and `classname` (xunit1) or from `classname` and the files
//! under the checkout (xunit2).

use super::junit::{self, Case, Node};
use super::{clip_message, secs_to_ms, split_options, uniq, TestResult, TestStatus};
use std::collections::HashMap;
use std::path::Path;

pub(super) fn parse(xml: &str, root: &Path) -> Vec<TestResult> {
    let mut cases = Vec::new();
    flatten(junit::read(xml), &mut cases);
    let mut files: HashMap<String, (String, usize)> = HashMap::new();
    cases
        .into_iter()
        .map(|case| {
            let message = if case.status == TestStatus::Fail {
                let mut text = case.message_attr.clone().unwrap_or_default();
                if !case.body.trim().is_empty() && case.body.trim() != text.trim() {
                    text.push_str("\n\n");
                    text.push_str(case.body.trim());
                }
                clip_message(&text)
            } else {
                None
            };
            TestResult {
                id: node_id(&case, root, &mut files),
                status: case.status,
                duration_ms: case.time.and_then(secs_to_ms),
                message,
            }
        })
        .collect()
}

fn flatten(nodes: Vec<Node>, out: &mut Vec<Case>) {
    for node in nodes {
        match node {
            Node::Suite { children, .. } => flatten(children, out),
            Node::Case(case) => out.push(case),
        }
    }
}

/// The node id. With xunit1, `file` is there and `classname` is the module's dotted path followed by
/// the classes. Without `file` (xunit2) the module is the longest dotted prefix of `classname` that is
/// a `.py` file under `root` (dots inside directory names are tried too).
fn node_id(case: &Case, root: &Path, cache: &mut HashMap<String, (String, usize)>) -> String {
    let classname = case.classname.trim();
    if classname.is_empty() {
        // A collection error: the name is the module's dotted path.
        return match &case.file {
            Some(file) => file.replace('\\', "/"),
            None => {
                let parts: Vec<&str> = case.name.split('.').collect();
                module_file(&parts, root).0
            }
        };
    }
    let parts: Vec<&str> = classname.split('.').collect();
    let (file, classes): (String, Vec<&str>) = match &case.file {
        Some(file) => {
            let file = file.replace('\\', "/");
            let module = file.strip_suffix(".py").unwrap_or(&file).replace('/', ".");
            let classes = if classname == module {
                Vec::new()
            } else if let Some(rest) = classname.strip_prefix(&format!("{module}.")) {
                rest.split('.').collect()
            } else {
                // A `junit_prefix` or an unusual layout: take what follows the module's last part.
                let last = module.rsplit('.').next().unwrap_or_default();
                match parts.iter().rposition(|p| *p == last) {
                    Some(i) => parts[i + 1..].to_vec(),
                    None => Vec::new(),
                }
            };
            (file, classes)
        }
        None => {
            let (file, used) = cache
                .entry(classname.to_string())
                .or_insert_with(|| module_file(&parts, root))
                .clone();
            (file, parts[used.min(parts.len())..].to_vec())
        }
    };
    let mut id = file;
    for class in classes {
        id.push_str("::");
        id.push_str(class);
    }
    id.push_str("::");
    id.push_str(&case.name);
    id
}

/// The file of a dotted module path and how many parts it used.
fn module_file(parts: &[&str], root: &Path) -> (String, usize) {
    for used in (1..=parts.len()).rev() {
        let joints = used - 1;
        let masks: u32 = if joints <= 8 { 1 << joints } else { 1 };
        for mask in 0..masks {
            let mut path = parts[0].to_string();
            for (j, part) in parts[1..used].iter().enumerate() {
                path.push(if mask & (1 << j) != 0 { '.' } else { '/' });
                path.push_str(part);
            }
            if root.join(format!("{path}.py")).is_file() {
                return (format!("{path}.py"), used);
            }
            if used == parts.len() && root.join(&path).is_dir() {
                return (path, used);
            }
        }
    }
    // Nothing on disk: by pytest's naming, classes start with an upper-case letter.
    let used = parts
        .iter()
        .position(|p| p.chars().next().is_some_and(char::is_uppercase))
        .filter(|&i| i > 0)
        .unwrap_or(parts.len());
    (format!("{}.py", parts[..used].join("/")), used)
}

/// Options of pytest (and common plugins) that take a separate value.
const VALUE_OPTIONS: &[&str] = &[
    "-k",
    "-m",
    "-p",
    "-o",
    "-c",
    "-W",
    "-r",
    "-n",
    "--maxfail",
    "--tb",
    "--junitxml",
    "--junit-xml",
    "--junit-prefix",
    "--rootdir",
    "--basetemp",
    "--confcutdir",
    "--ignore",
    "--ignore-glob",
    "--deselect",
    "--durations",
    "--durations-min",
    "--log-level",
    "--log-format",
    "--log-date-format",
    "--log-file",
    "--log-file-level",
    "--log-file-format",
    "--log-file-date-format",
    "--log-cli-level",
    "--log-cli-format",
    "--log-cli-date-format",
    "--import-mode",
    "--capture",
    "--override-ini",
    "--config-file",
    "--color",
    "--code-highlight",
    "--pythonwarnings",
    "--verbosity",
    "--assert",
    "--doctest-glob",
    "--doctest-report",
    "--cov",
    "--cov-report",
    "--cov-config",
    "--cov-fail-under",
    "--timeout",
    "--dist",
    "--numprocesses",
    "--maxprocesses",
    "--max-worker-restart",
    "--tx",
    "--report-log",
    "--html",
    "--random-order-seed",
    "--reruns",
    "--reruns-delay",
];

fn is_pytest(arg: &str) -> bool {
    let name = arg.rsplit(['/', '\\']).next().unwrap_or(arg);
    matches!(name, "pytest" | "py.test" | "pytest-3" | "pytest3")
}

pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<String>> {
    let anchor = argv.iter().position(|a| is_pytest(a))?;
    let (mut cmd, _paths) =
        split_options(argv, anchor, |arg| VALUE_OPTIONS.contains(&arg), |_| false);
    cmd.extend(uniq(ids));
    Some(cmd)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::*;
    use std::path::PathBuf;
    use TestStatus::{Fail, Pass, Skip};

    fn pytest_root() -> PathBuf {
        Path::new(DATA).join("pytest_project")
    }

    fn pytest_statuses() -> Vec<(String, TestStatus)> {
        expect(&[
            ("tests/test_broken.py", Fail),
            ("tests/sub.dir/test_dotted.py::test_in_dotted_dir", Pass),
            ("tests/test_calc.py::test_adds", Pass),
            ("tests/test_calc.py::test_adds_wrong", Fail),
            ("tests/test_calc.py::test_param[1-2-3]", Pass),
            ("tests/test_calc.py::test_param[2-2-5]", Fail),
            ("tests/test_calc.py::test_param[x-y-xy]", Pass),
            ("tests/test_calc.py::test_weird_ids[a::b]", Pass),
            ("tests/test_calc.py::test_weird_ids[with space]", Pass),
            ("tests/test_calc.py::test_weird_ids[br[ack]et]", Pass),
            ("tests/test_calc.py::test_skipped", Skip),
            ("tests/test_calc.py::test_xfail", Skip),
            ("tests/test_calc.py::test_xpass_strict", Fail),
            ("tests/test_calc.py::TestGroup::test_in_class", Pass),
            ("tests/test_calc.py::TestGroup::test_in_class_fails", Fail),
            (
                "tests/test_calc.py::TestGroup::TestInner::test_inner[1]",
                Pass,
            ),
            (
                "tests/test_calc.py::TestGroup::TestInner::test_inner[2]",
                Fail,
            ),
            ("tests/test_calc.py::test_fixture_error", Fail),
            ("tests/test_calc.py::test_teardown_error", Fail),
            ("tests/test_calc.py::test_exits_output", Pass),
            ("tests/test_calc.py::test_slow", Pass),
        ])
    }

    #[test]
    fn pytest_xunit1_gives_node_ids_for_classes_params_errors_and_collection_failures() {
        let xml = include_str!("../../../tests/data/testresults/pytest_xunit1.xml");
        let results = run(Runner::Pytest, "", Some(xml), Path::new("/nonexistent"));
        assert_eq!(statuses(&results), pytest_statuses());
        assert_eq!(
            results
                .iter()
                .find(|r| r.id.ends_with("test_slow"))
                .and_then(|r| r.duration_ms),
            Some(50)
        );
        assert_eq!(
            message_of(&results, "tests/test_calc.py::TestGroup::TestInner::test_inner[2]"),
            "assert 2 == 1\n\n\
             self = <test_calc.TestGroup.TestInner object at 0x7fdad0e93090>, n = 2\n\n    \
             @pytest.mark.parametrize(\"n\", [1, 2])\n    def test_inner(self, n):\n>       assert n == 1\n\
             E       assert 2 == 1\n\ntests/test_calc.py:50: AssertionError"
        );
        assert_eq!(
            message_of(&results, "tests/test_calc.py::test_xpass_strict"),
            "[XPASS(strict)] should fail"
        );
        assert!(message_of(&results, "tests/test_broken.py").starts_with(
            "collection failure\n\nImportError while importing test module '/tmp/trp/pyproj/tests/test_broken.py'."
        ));
    }

    #[test]
    fn pytest_xunit2_without_file_attributes_finds_the_module_files_under_the_checkout() {
        let xml = include_str!("../../../tests/data/testresults/pytest_xunit2.xml");
        let results = run(Runner::Pytest, "", Some(xml), &pytest_root());
        assert_eq!(statuses(&results), pytest_statuses());
    }

    #[test]
    fn pytest_xunit2_without_the_checkout_guesses_modules_from_the_dotted_names() {
        let xml = include_str!("../../../tests/data/testresults/pytest_xunit2.xml");
        let results = run(Runner::Pytest, "", Some(xml), Path::new("/nonexistent"));
        let mut expected = pytest_statuses();
        // A dot in a directory name cannot be told from a package separator without the files.
        expected[1].0 = "tests/sub/dir/test_dotted.py::test_in_dotted_dir".into();
        assert_eq!(statuses(&results), expected);
    }

    #[test]
    fn pytest_passing_run_and_a_missing_junit_file() {
        let xml = include_str!("../../../tests/data/testresults/pytest_passing.xml");
        assert_eq!(
            run(Runner::Pytest, "", Some(xml), Path::new(".")),
            vec![
                result("tests/test_calc.py::test_adds", Pass, Some(0), None),
                result(
                    "tests/test_calc.py::TestGroup::test_in_class",
                    Pass,
                    Some(0),
                    None
                ),
            ]
        );
        let stdout = include_str!("../../../tests/data/testresults/pytest_xunit1_stdout.txt");
        assert_eq!(run(Runner::Pytest, stdout, None, Path::new(".")), vec![]);
    }

    #[test]
    fn pytest_junit_cut_off_inside_a_failure_keeps_the_failure() {
        let xml = include_str!("../../../tests/data/testresults/pytest_xunit1.xml");
        let cut = &xml[..xml.find("E       assert 4 == 5").unwrap_or(xml.len())];
        assert_eq!(
            statuses(&run(Runner::Pytest, "", Some(cut), Path::new("."))),
            expect(&[
                ("tests/test_broken.py", Fail),
                ("tests/sub.dir/test_dotted.py::test_in_dotted_dir", Pass),
                ("tests/test_calc.py::test_adds", Pass),
                ("tests/test_calc.py::test_adds_wrong", Fail),
            ])
        );
    }

    #[test]
    fn pytest_selection_replaces_positional_paths_with_node_ids_and_keeps_option_values() {
        let cmd = argv(&[
            "python3",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-ojunit_family=xunit1",
            "--junitxml={junit}",
            "tests",
            "-k",
            "not slow",
            "--continue-on-collection-errors",
            "other/",
        ]);
        let selected = ids(&[
            "tests/test_calc.py::test_param[2-2-5]",
            "tests/test_broken.py",
            "tests/test_broken.py",
        ]);
        assert_eq!(
            select_argv(Runner::Pytest, &cmd, &selected),
            Some(vec![argv(&[
                "python3",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-ojunit_family=xunit1",
                "--junitxml={junit}",
                "-k",
                "not slow",
                "--continue-on-collection-errors",
                "tests/test_calc.py::test_param[2-2-5]",
                "tests/test_broken.py",
            ])])
        );
        assert_eq!(
            select_argv(Runner::Pytest, &argv(&["tox"]), &selected),
            None
        );
    }
}
