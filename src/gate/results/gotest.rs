//! Go: per-test results read from `go test -json` events, and `-run` selections of them.
//!
//! The JSON events name package, test and subtest exactly as `-run` matches them, so ids come from them
//! directly; the plain lines `go test` mixes in (build failures, compiler output when stderr is merged) are
//! read as well, because a package that does not build sends no test events at all.

use super::{
    clip_message, group_in_order, secs_to_ms, split_options, uniq, TestResult, TestStatus,
};
use serde::Deserialize;
use std::collections::HashMap;

pub(super) const NO_RESULT_FOR_TESTS: &str =
    "no result reported: the test binary exited while this test was running";

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action", default)]
    action: String,
    #[serde(rename = "Package", default)]
    package: Option<String>,
    #[serde(rename = "ImportPath", default)]
    import_path: Option<String>,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
    #[serde(rename = "Elapsed", default)]
    elapsed: Option<f64>,
    #[serde(rename = "FailedBuild", default)]
    failed_build: Option<String>,
}

#[derive(Default)]
struct Test {
    name: String,
    status: Option<TestStatus>,
    elapsed: Option<f64>,
    output: String,
}

#[derive(Default)]
struct Package {
    path: String,
    tests: Vec<Test>,
    index: HashMap<String, usize>,
    status: Option<TestStatus>,
    output: String,
    build_failed: bool,
    build_output: String,
}

impl Package {
    fn test(&mut self, name: &str) -> &mut Test {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.index.insert(name.to_string(), self.tests.len());
                self.tests.push(Test {
                    name: name.to_string(),
                    ..Test::default()
                });
                self.tests.len() - 1
            }
        };
        &mut self.tests[i]
    }
}

#[derive(Default)]
struct Packages {
    list: Vec<Package>,
    index: HashMap<String, usize>,
}

impl Packages {
    fn get(&mut self, path: &str) -> &mut Package {
        let i = self.position(path);
        &mut self.list[i]
    }

    fn position(&mut self, path: &str) -> usize {
        match self.index.get(path) {
            Some(&i) => i,
            None => {
                self.index.insert(path.to_string(), self.list.len());
                self.list.push(Package {
                    path: path.to_string(),
                    ..Package::default()
                });
                self.list.len() - 1
            }
        }
    }
}

fn status_of(action: &str) -> Option<TestStatus> {
    match action {
        "pass" => Some(TestStatus::Pass),
        "fail" => Some(TestStatus::Fail),
        "skip" => Some(TestStatus::Skip),
        _ => None,
    }
}

/// `example.com/m/x [example.com/m/x.test]` -> `example.com/m/x`.
fn package_of(target: &str) -> &str {
    target.split(" [").next().unwrap_or(target).trim()
}

/// `FAIL\texample.com/m/broken [build failed]` (or `[setup failed]`) -> the package.
fn build_failed_line(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("FAIL")?.trim();
    let pkg = rest
        .strip_suffix("[build failed]")
        .or_else(|| rest.strip_suffix("[setup failed]"))?
        .trim();
    (!pkg.is_empty() && !pkg.contains(char::is_whitespace)).then_some(pkg)
}

/// What `go test` prints without `-json`, from its `-json` events: each event's output in order, other lines
/// (build errors, printed plain) as they are. None when the output has no events: it is not `-json` output.
pub fn events_as_text(output: &str) -> Option<String> {
    let mut any = false;
    let mut out = String::with_capacity(output.len() / 2);
    for line in output.lines() {
        let t = line.trim();
        if t.starts_with('{') {
            if let Ok(event) = serde_json::from_str::<Event>(t) {
                if !event.action.is_empty() {
                    any = true;
                    out.push_str(event.output.as_deref().unwrap_or_default());
                    continue;
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    any.then_some(out)
}

pub(super) fn parse(stdout: &str) -> Vec<TestResult> {
    let mut pkgs = Packages::default();
    let mut compiler_output_of: Option<usize> = None;
    for line in stdout.lines() {
        let t = line.trim();
        if t.starts_with('{') {
            if let Ok(event) = serde_json::from_str::<Event>(t) {
                compiler_output_of = None;
                apply(&mut pkgs, event);
                continue;
            }
        }
        // Not JSON: what `go test` itself prints (and the compiler, when stderr is merged).
        if let Some(target) = t.strip_prefix("# ") {
            let pkg = package_of(target);
            compiler_output_of = (!pkg.is_empty()).then(|| pkgs.position(pkg));
            continue;
        }
        if let Some(pkg) = build_failed_line(t) {
            let p = pkgs.get(pkg);
            p.build_failed = true;
            if p.build_output.is_empty() {
                p.build_output = t.to_string();
            }
            compiler_output_of = None;
            continue;
        }
        if let Some(i) = compiler_output_of {
            let out = &mut pkgs.list[i].build_output;
            super::push_capped(out, &format!("{line}\n"));
        }
    }
    results(pkgs)
}

fn apply(pkgs: &mut Packages, event: Event) {
    // Go 1.24+ reports builds as events of their own.
    match event.action.as_str() {
        "build-output" => {
            if let (Some(target), Some(out)) = (&event.import_path, &event.output) {
                pkgs.get(package_of(target)).build_output.push_str(out);
            }
            return;
        }
        "build-fail" => {
            if let Some(target) = &event.import_path {
                pkgs.get(package_of(target)).build_failed = true;
            }
            return;
        }
        _ => {}
    }
    let Some(pkg) = event.package.as_deref() else {
        return;
    };
    let pkg = pkgs.get(pkg);
    match event.test.as_deref() {
        Some(name) => {
            let test = pkg.test(name);
            match event.action.as_str() {
                "output" => {
                    if let Some(out) = &event.output {
                        super::push_capped(&mut test.output, out);
                    }
                }
                action => {
                    if let Some(status) = status_of(action) {
                        test.status = Some(status);
                        test.elapsed = event.elapsed;
                    }
                }
            }
        }
        None => match event.action.as_str() {
            "output" => {
                if let Some(out) = &event.output {
                    super::push_capped(&mut pkg.output, out);
                }
            }
            action => {
                if let Some(status) = status_of(action) {
                    pkg.status = Some(status);
                    if event.failed_build.is_some() {
                        pkg.build_failed = true;
                    }
                }
            }
        },
    }
}

/// A test's output without the `=== RUN` / `--- FAIL:` lines that frame it.
fn test_message(output: &str) -> Option<String> {
    let kept: Vec<&str> = output
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            ![
                "=== RUN",
                "=== PAUSE",
                "=== CONT",
                "=== NAME",
                "--- PASS:",
                "--- FAIL:",
                "--- SKIP:",
            ]
            .iter()
            .any(|p| t.starts_with(p))
        })
        .collect();
    clip_message(&kept.join("\n"))
}

fn results(pkgs: Packages) -> Vec<TestResult> {
    let mut out = Vec::new();
    for pkg in pkgs.list {
        let mut any_fail = false;
        if pkg.build_failed {
            any_fail = true;
            out.push(TestResult {
                id: format!("{}::[build]", pkg.path),
                status: TestStatus::Fail,
                duration_ms: None,
                message: clip_message(&pkg.build_output)
                    .or_else(|| Some("build failed".to_string())),
            });
        }
        for test in pkg.tests {
            // No result at all: the binary died (panic elsewhere, os.Exit, timeout) during the test.
            let status = test.status.unwrap_or(TestStatus::Fail);
            let message = if status == TestStatus::Fail {
                any_fail = true;
                let msg = test_message(&test.output);
                match (test.status, msg) {
                    (None, None) => Some(NO_RESULT_FOR_TESTS.to_string()),
                    (_, msg) => msg,
                }
            } else {
                None
            };
            out.push(TestResult {
                id: format!("{}::{}", pkg.path, test.name),
                status,
                duration_ms: test.elapsed.and_then(secs_to_ms),
                message,
            });
        }
        if !any_fail && pkg.status == Some(TestStatus::Fail) {
            out.push(TestResult {
                id: format!("{}::[package]", pkg.path),
                status: TestStatus::Fail,
                duration_ms: None,
                message: clip_message(&pkg.output)
                    .or_else(|| Some("the test binary failed outside any test".to_string())),
            });
        }
    }
    out
}

/// `go test` and build flags that take a separate value.
const VALUE_FLAGS: &[&str] = &[
    "run",
    "skip",
    "bench",
    "benchtime",
    "count",
    "cpu",
    "parallel",
    "timeout",
    "shuffle",
    "list",
    "fuzz",
    "fuzztime",
    "fuzzminimizetime",
    "coverprofile",
    "covermode",
    "coverpkg",
    "blockprofile",
    "blockprofilerate",
    "cpuprofile",
    "memprofile",
    "memprofilerate",
    "mutexprofile",
    "mutexprofilefraction",
    "outputdir",
    "trace",
    "tags",
    "p",
    "o",
    "C",
    "exec",
    "ldflags",
    "gcflags",
    "asmflags",
    "gccgoflags",
    "mod",
    "modfile",
    "pkgdir",
    "toolexec",
    "vet",
    "buildmode",
    "compiler",
    "installsuffix",
    "overlay",
    "pgo",
    "covermode",
];

fn flag_name(arg: &str) -> &str {
    let name = arg.trim_start_matches('-');
    name.split('=').next().unwrap_or(name)
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The `-run` pattern for tests of one package. Go splits the pattern at top-level `/` (one regexp
/// per name level) and at top-level `|` (alternatives).
fn run_regex(names: &[String]) -> String {
    let top: Vec<&str> = names
        .iter()
        .filter(|n| !n.contains('/'))
        .map(String::as_str)
        .collect();
    let mut alternatives = Vec::new();
    if !top.is_empty() {
        let quoted: Vec<String> = uniq(top.iter().map(|n| quote_meta(n)));
        alternatives.push(if quoted.len() == 1 {
            format!("^{}$", quoted[0])
        } else {
            format!("^({})$", quoted.join("|"))
        });
    }
    for name in names.iter().filter(|n| n.contains('/')) {
        let parent = name.split('/').next().unwrap_or_default();
        if top.contains(&parent) {
            continue;
        }
        let levels: Vec<String> = name
            .split('/')
            .map(|level| format!("^{}$", quote_meta(level)))
            .collect();
        alternatives.push(levels.join("/"));
    }
    uniq(alternatives).join("|")
}

pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<Vec<String>>> {
    let test_pos = argv.iter().position(|a| a == "test")?;
    let args_pos = argv
        .iter()
        .skip(test_pos + 1)
        .position(|a| a == "-args" || a == "--args");
    let (head, tail) = match args_pos {
        Some(p) => argv.split_at(test_pos + 1 + p),
        None => (argv, &[][..]),
    };
    let (base, _packages) = split_options(
        head,
        test_pos,
        |arg| VALUE_FLAGS.contains(&flag_name(arg)),
        |arg| flag_name(arg) == "run",
    );
    let mut pairs = Vec::new();
    for id in ids {
        let (pkg, name) = id.split_once("::")?;
        if pkg.is_empty() || name.is_empty() {
            return None;
        }
        pairs.push((pkg.to_string(), name.to_string()));
    }
    let mut commands = Vec::new();
    for (pkg, names) in group_in_order(pairs) {
        let mut cmd = base.clone();
        if !names.iter().any(|n| n == "[build]" || n == "[package]") {
            cmd.push("-run".to_string());
            cmd.push(run_regex(&names));
        }
        cmd.push(pkg);
        cmd.extend(tail.iter().cloned());
        commands.push(cmd);
    }
    Some(commands)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::*;
    use super::*;
    use TestStatus::{Fail, Pass, Skip};

    fn go(stdout: &str) -> Vec<TestResult> {
        run(Runner::Go, stdout, None, Path::new("/nonexistent"))
    }

    #[test]
    fn go_events_give_tests_subtests_and_failures_outside_tests() {
        let results = go(include_str!(
            "../../../tests/data/testresults/go_json_stdout.jsonl"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("example.com/m/broken::[build]", Fail),
                ("example.com/m/calc::TestAdd", Pass),
                ("example.com/m/calc::TestAddCases", Fail),
                ("example.com/m/calc::TestAddCases/positive", Pass),
                ("example.com/m/calc::TestAddCases/negative_numbers", Pass),
                ("example.com/m/calc::TestAddCases/wrong_on_purpose", Fail),
                ("example.com/m/calc::TestAddCases/a/b_(slash)", Pass),
                ("example.com/m/calc::TestNested", Pass),
                ("example.com/m/calc::TestNested/outer", Pass),
                ("example.com/m/calc::TestNested/outer/inner", Pass),
                ("example.com/m/calc::TestSkipped", Skip),
                ("example.com/m/calc::TestFailsWithLog", Fail),
                ("example.com/m/calc::TestParallelA", Pass),
                // Printed by TestParallelA; test2json cannot tell it from a real test.
                ("example.com/m/calc::TestFake", Fail),
                ("example.com/m/exitmain::TestOK", Pass),
                ("example.com/m/exitmain::[package]", Fail),
                ("example.com/m/panicky::TestFine", Pass),
                ("example.com/m/panicky::TestPanics", Fail),
                ("example.com/m/printer::TestPrints", Pass),
                ("example.com/m/printer::TestGoroutinePanicAfter", Pass),
            ])
        );
        assert_eq!(
            message_of(&results, "example.com/m/calc::TestFailsWithLog"),
            "printed to stdout directly\n    calc_test.go:47: a log line\n    calc_test.go:48: first error\n        \
             second line of error"
        );
        assert_eq!(
            message_of(&results, "example.com/m/broken::[build]"),
            "FAIL\texample.com/m/broken [build failed]"
        );
        assert_eq!(
            message_of(&results, "example.com/m/exitmain::[package]"),
            "PASS\nFAIL\texample.com/m/exitmain\t0.001s"
        );
        assert!(message_of(&results, "example.com/m/panicky::TestPanics")
            .starts_with("panic: assignment to entry in nil map [recovered]\n"));
    }

    #[test]
    fn go_passing_run_gives_passes_with_durations_and_ignores_packages_without_tests() {
        assert_eq!(
            go(include_str!(
                "../../../tests/data/testresults/go_json_passing.jsonl"
            )),
            vec![
                result("example.com/m/printer::TestPrints", Pass, Some(0), None),
                result(
                    "example.com/m/printer::TestGoroutinePanicAfter",
                    Pass,
                    Some(0),
                    None
                ),
            ]
        );
    }

    #[test]
    fn go_compiler_output_merged_into_stdout_becomes_the_build_message() {
        assert_eq!(
            go(include_str!("../../../tests/data/testresults/go_json_build_failure_merged.jsonl")),
            vec![
                result(
                    "example.com/m/broken::[build]",
                    Fail,
                    None,
                    Some(
                        "broken/broken.go:3:23: cannot use \"nope\" (untyped string constant) as int value in \
                         return statement"
                    )
                ),
                result("example.com/m/printer::TestPrints", Pass, Some(0), None),
                result("example.com/m/printer::TestGoroutinePanicAfter", Pass, Some(0), None),
            ]
        );
    }

    #[test]
    fn go_timeout_fails_the_tests_that_never_finished() {
        let results = go(include_str!(
            "../../../tests/data/testresults/go_json_timeout.jsonl"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("example.com/m/hangs::TestQuick", Pass),
                ("example.com/m/hangs::TestHangs", Fail),
                ("example.com/m/hangs::TestHangs/sub_hang", Fail),
            ])
        );
        assert_eq!(
            message_of(&results, "example.com/m/hangs::TestHangs"),
            NO_RESULT_FOR_TESTS
        );
        assert!(
            message_of(&results, "example.com/m/hangs::TestHangs/sub_hang")
                .starts_with("panic: test timed out after 1s\n")
        );
    }

    #[test]
    fn go_package_failing_without_a_failed_test_or_any_event_still_fails() {
        let text = "{\"Action\":\"output\",\"Package\":\"p\",\"Output\":\"FAIL\\tp\\t0.1s\\n\"}\n\
                    {\"Action\":\"fail\",\"Package\":\"p\",\"Elapsed\":0.1}\n\
                    {\"Action\":\"fail\",\"Package\":\"q\",\"Elapsed\":0,\"FailedBuild\":\"q [q.test]\"}\n\
                    FAIL\tr [setup failed]\n";
        assert_eq!(
            go(text),
            vec![
                result("p::[package]", Fail, None, Some("FAIL\tp\t0.1s")),
                result("q::[build]", Fail, None, Some("build failed")),
                result("r::[build]", Fail, None, Some("FAIL\tr [setup failed]")),
            ]
        );
    }

    #[test]
    fn go_selection_runs_each_package_with_an_anchored_run_pattern() {
        let cmd = argv(&[
            "go", "test", "-json", "-count=1", "-run", "Old", "-timeout", "5m", "./...", "-tags",
            "x",
        ]);
        let selected = ids(&[
            "example.com/m/calc::TestAdd",
            "example.com/m/calc::TestSkipped",
            "example.com/m/calc::TestAddCases/negative_numbers",
            "example.com/m/calc::TestAddCases/a/b_(slash)",
            "example.com/m/calc::TestNested/outer",
            "example.com/m/calc::TestNested/outer/inner",
            "example.com/m/other::TestX",
        ]);
        let base = [
            "go", "test", "-json", "-count=1", "-timeout", "5m", "-tags", "x",
        ];
        let with = |extra: &[&str]| argv(&[&base[..], extra].concat());
        assert_eq!(
            select_argv(Runner::Go, &cmd, &selected),
            Some(vec![
                with(&[
                    "-run",
                    "^(TestAdd|TestSkipped)$|^TestAddCases$/^negative_numbers$|^TestAddCases$/^a$/^b_\\(slash\\)$\
                     |^TestNested$/^outer$|^TestNested$/^outer$/^inner$",
                    "example.com/m/calc",
                ]),
                with(&["-run", "^TestX$", "example.com/m/other"]),
            ])
        );
    }

    #[test]
    fn go_selection_covers_subtests_by_a_selected_parent_and_whole_packages_for_build_ids() {
        let cmd = argv(&["go", "test", "-json", "./...", "-args", "-v"]);
        assert_eq!(
            select_argv(
                Runner::Go,
                &cmd,
                &ids(&[
                    "m/a::TestP/sub",
                    "m/a::TestP",
                    "m/b::[build]",
                    "m/c::[package]",
                    "m/c::TestZ"
                ])
            ),
            Some(vec![
                argv(&["go", "test", "-json", "-run", "^TestP$", "m/a", "-args", "-v"]),
                argv(&["go", "test", "-json", "m/b", "-args", "-v"]),
                argv(&["go", "test", "-json", "m/c", "-args", "-v"]),
            ])
        );
        assert_eq!(select_argv(Runner::Go, &cmd, &ids(&["no-separator"])), None);
        assert_eq!(
            select_argv(Runner::Go, &argv(&["make"]), &ids(&["m::T"])),
            None
        );
    }
}
