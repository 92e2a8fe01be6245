//! The commands that run the changed tests, and only them, in the bite room: one per test target (cargo), or
//! per package or file as the runner's selection splits them, each with the ids it is meant to run.
//!
//! A selection that does not build without the change must not hide the others, so each command is run and
//! judged on its own.

use std::collections::BTreeMap;
use std::path::Path;

use crate::gate::cargo::Layout;
use crate::gate::results::{self, Runner, TestResult};

/// Groups cargo ids by their test target and narrows each selection to that target, so a target that does
/// not build without the change does not hide the others. With the repository's [`Layout`] the target is the
/// one cargo names (`--test integration` for `tests/tests.rs`, `-p member --lib` in a workspace); without it,
/// it is guessed from the root's path.
fn cargo_commands(
    argv: &[String],
    ids: &[String],
    layout: Option<&Layout>,
) -> Vec<(Vec<String>, Vec<String>)> {
    let mut by_target: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in ids {
        let target = id.split_once("::").map_or("", |(t, _)| t).to_owned();
        by_target.entry(target).or_default().push(id.clone());
    }
    let mut out = Vec::new();
    for (target, ids) in by_target {
        let Some(mut cmds) = results::select_argv(Runner::Cargo, argv, &ids) else {
            continue;
        };
        let (stem, path) = target.split_once('@').unwrap_or((&target, ""));
        let known = layout.and_then(|l| l.target_of_prefix(&target).map(|t| (l, t)));
        let selector: Vec<String> = if let Some((layout, t)) = known {
            let mut s = Vec::new();
            let packages: std::collections::BTreeSet<&str> =
                layout.targets.iter().map(|t| t.package.as_str()).collect();
            let chosen = argv.iter().any(|a| {
                matches!(a.as_str(), "--workspace" | "--all" | "-p" | "--package")
                    || a.starts_with("--package=")
                    || a.starts_with("-p")
            });
            if packages.len() > 1 && !chosen {
                s.extend(["-p".to_owned(), t.package.clone()]);
            }
            s.extend(t.selector());
            s
        } else if path.starts_with("tests/") {
            vec!["--test".into(), stem.to_owned()]
        } else if path == "src/lib.rs" {
            vec!["--lib".into()]
        } else if path == "src/main.rs" || path.starts_with("src/bin/") {
            vec!["--bin".into(), stem.replace('_', "-")]
        } else {
            Vec::new()
        };
        for cmd in cmds.iter_mut() {
            let at = cmd.iter().position(|a| a == "--").unwrap_or(cmd.len());
            for (k, s) in selector.iter().enumerate() {
                cmd.insert(at + k, s.clone());
            }
        }
        for cmd in cmds {
            out.push((cmd, ids.clone()));
        }
    }
    out
}

/// The command that only builds what a selection command runs, so the build has a timeout of its own: cargo's
/// `--no-run` with the same targets (what follows `--` dropped), `go test` with `-run '^$'` for the same
/// packages. None for runners without a separate build.
pub fn build_command(runner: Runner, cmd: &[String]) -> Option<Vec<String>> {
    match runner {
        Runner::Cargo => {
            let program = cmd.first()?;
            let is_cargo = std::path::Path::new(program)
                .file_name()
                .is_some_and(|n| n == "cargo");
            if !is_cargo || !cmd.iter().any(|a| a == "test") {
                return None;
            }
            let end = cmd.iter().position(|a| a == "--").unwrap_or(cmd.len());
            let mut out: Vec<String> = cmd[..end].to_vec();
            out.push("--no-run".into());
            Some(out)
        }
        Runner::Go => {
            let mut out = cmd.to_vec();
            let at = out.iter().position(|a| a == "-run")?;
            *out.get_mut(at + 1)? = "^$".into();
            Some(out)
        }
        _ => None,
    }
}

/// The selection commands with the ids each is meant to run.
pub fn commands(
    runner: Runner,
    argv: &[String],
    ids: &[String],
    layout: Option<&Layout>,
) -> Vec<(Vec<String>, Vec<String>)> {
    if runner == Runner::Cargo {
        return cargo_commands(argv, ids, layout);
    }
    // One call per id group the runner splits by (package, file): ask with all ids, then attribute each
    // command to the ids whose scope it names.
    let Some(cmds) = results::select_argv(runner, argv, ids) else {
        return Vec::new();
    };
    if cmds.len() == 1 {
        return vec![(cmds[0].clone(), ids.to_vec())];
    }
    cmds.into_iter()
        .map(|cmd| {
            let mine: Vec<String> = ids
                .iter()
                .filter(|id| {
                    let scope = id.split_once("::").map_or(id.as_str(), |(s, _)| s);
                    cmd.iter().any(|a| a == scope)
                })
                .cloned()
                .collect();
            (cmd, mine)
        })
        .collect()
}

/// The selected ids pytest says it did not find (`ERROR: not found: ROOM/tests/t.py::test_x[...]`) in a run's
/// output: tests whose parametrized ids change between runs (a parameter holding the time, a random value)
/// are named at head by ids the reverted run no longer has, and pytest then runs none of the selection.
/// pytest 8 names such an id without its parameters (`…::test_x`): every selected id of that function is
/// then taken as not found.
pub fn pytest_not_found(output: &str, room: &Path, ids: &[String]) -> Vec<String> {
    let prefix = format!("{}/", room.display());
    let named: Vec<&str> = output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ERROR: not found: "))
        .map(|rest| {
            rest.trim()
                .strip_prefix(prefix.as_str())
                .unwrap_or(rest.trim())
        })
        .collect();
    ids.iter()
        .filter(|id| {
            named.contains(&id.as_str())
                || (id.contains('[') && named.contains(&pytest_function(id)))
        })
        .cloned()
        .collect()
}

/// A pytest id's function: `t.py::T::test_at[01:08:47]` is `t.py::T::test_at`.
pub fn pytest_function(id: &str) -> &str {
    match id.find('[') {
        Some(at) if id.ends_with(']') => &id[..at],
        _ => id,
    }
}

/// What to run again when pytest did not find `missing` of `ids`: the found ones by id, and the functions
/// of the missing ones whole (their instances are named anew on every run); a found instance of such a
/// function comes with it.
pub fn pytest_reselection(ids: &[String], missing: &[String]) -> Vec<String> {
    let functions: Vec<&str> = missing.iter().map(|id| pytest_function(id)).collect();
    let mut out: Vec<String> = ids
        .iter()
        .filter(|id| !missing.contains(id) && !functions.contains(&pytest_function(id)))
        .cloned()
        .collect();
    for f in functions {
        if !out.iter().any(|id| id == f) {
            out.push(f.to_owned());
        }
    }
    out
}

/// The results of a [`pytest_reselection`] under the ids head gave them: the instances of a missing id's
/// function that head did not name, in their order, become the missing ids of that function, in theirs,
/// when there are as many; when there are not, all of them agreeing gives each missing id their status.
/// Otherwise a missing id stays without a result (absent).
pub fn pytest_renamed(
    ids: &[String],
    missing: &[String],
    results: Vec<TestResult>,
) -> Vec<TestResult> {
    let mut out: Vec<TestResult> = Vec::new();
    let mut fresh: Vec<(String, Vec<TestResult>)> = Vec::new();
    for r in results {
        let f = pytest_function(&r.id);
        let new_instance = !ids.contains(&r.id) && missing.iter().any(|m| pytest_function(m) == f);
        if new_instance {
            match fresh.iter_mut().find(|(name, _)| name == f) {
                Some((_, list)) => list.push(r),
                None => fresh.push((f.to_owned(), vec![r])),
            }
        } else {
            out.push(r);
        }
    }
    for (f, instances) in fresh {
        let wanted: Vec<&String> = missing.iter().filter(|m| pytest_function(m) == f).collect();
        let same = instances.iter().all(|r| r.status == instances[0].status);
        if instances.len() == wanted.len() {
            for (id, mut r) in wanted.into_iter().zip(instances) {
                r.id = id.clone();
                out.push(r);
            }
        } else if same {
            for id in wanted {
                let mut r = instances[0].clone();
                r.id = id.clone();
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::results::TestStatus;

    fn own(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cargo_selections_are_one_per_test_target_each_narrowed_to_it() {
        let got = commands(
            Runner::Cargo,
            &own(&["cargo", "test"]),
            &own(&[
                "cli@tests/cli.rs::adds",
                "calc@src/lib.rs::tests::mean",
                "calc_tool@src/main.rs::t::x",
            ]),
            None,
        );
        assert_eq!(
            got,
            vec![
                (
                    own(&["cargo", "test", "--lib", "--", "--exact", "tests::mean"]),
                    own(&["calc@src/lib.rs::tests::mean"])
                ),
                (
                    own(&[
                        "cargo",
                        "test",
                        "--bin",
                        "calc-tool",
                        "--",
                        "--exact",
                        "t::x"
                    ]),
                    own(&["calc_tool@src/main.rs::t::x"])
                ),
                (
                    own(&["cargo", "test", "--test", "cli", "--", "--exact", "adds"]),
                    own(&["cli@tests/cli.rs::adds"])
                ),
            ]
        );
    }

    #[test]
    fn a_go_selection_per_package_runs_the_ids_of_that_package() {
        let got = commands(
            Runner::Go,
            &own(&["go", "test", "-json", "./..."]),
            &own(&[
                "example.com/a::TestX",
                "example.com/b::TestY",
                "example.com/a::TestZ",
            ]),
            None,
        );
        assert_eq!(got.len(), 2, "{got:?}");
        for (cmd, ids) in &got {
            let pkg = cmd.last().unwrap();
            assert!(
                !ids.is_empty() && ids.iter().all(|id| id.starts_with(&format!("{pkg}::"))),
                "{got:?}"
            );
        }
        assert_eq!(
            got[0].1,
            own(&["example.com/a::TestX", "example.com/a::TestZ"])
        );
    }

    #[test]
    fn the_ids_pytest_did_not_find_are_read_from_its_output() {
        let out = "collected 370 items\n\nno tests ran in 1.47s\nERROR: not found: /r/bite/tests/t.py::T::test_at[01:08:47 2026-12-02]\n(no name '/r/bite/tests/t.py::T::test_at[01:08:47 2026-12-02]' in any of [<Module t.py>])\n\nERROR: not found: /elsewhere/t.py::x\n";
        let ids = own(&[
            "tests/t.py::T::test_at[01:08:47 2026-12-02]",
            "tests/t.py::T::test_ok",
        ]);
        assert_eq!(
            pytest_not_found(out, Path::new("/r/bite"), &ids),
            own(&["tests/t.py::T::test_at[01:08:47 2026-12-02]"])
        );
        assert!(pytest_not_found("2 passed", Path::new("/r/bite"), &ids).is_empty());
        // pytest 8 drops the parameters from the name.
        let v8 = "no tests ran in 0.01s\nERROR: not found: /r/bite/tests/t.py::T::test_at\n(no match in any of [<Module t.py>])\n";
        assert_eq!(
            pytest_not_found(v8, Path::new("/r/bite"), &ids),
            own(&["tests/t.py::T::test_at[01:08:47 2026-12-02]"])
        );
    }

    #[test]
    fn ids_pytest_names_anew_on_every_run_are_selected_by_function_and_mapped_back_in_order() {
        let ids = own(&[
            "t.py::test_at[12:00:01]",
            "t.py::test_at[12:00:02]",
            "t.py::test_ok[1]",
            "t.py::test_plain",
            "u.py::test_when[a]",
        ]);
        let missing = own(&["t.py::test_at[12:00:01]", "t.py::test_at[12:00:02]"]);
        assert_eq!(
            pytest_reselection(&ids, &missing),
            own(&[
                "t.py::test_ok[1]",
                "t.py::test_plain",
                "u.py::test_when[a]",
                "t.py::test_at"
            ])
        );
        let r = |id: &str, status| TestResult {
            id: id.into(),
            status,
            duration_ms: None,
            message: None,
        };
        let ran = vec![
            r("t.py::test_at[12:07:44]", TestStatus::Fail),
            r("t.py::test_at[12:07:45]", TestStatus::Pass),
            r("t.py::test_ok[1]", TestStatus::Pass),
        ];
        let got = pytest_renamed(&ids, &missing, ran);
        let named: Vec<(&str, TestStatus)> =
            got.iter().map(|r| (r.id.as_str(), r.status)).collect();
        assert_eq!(
            named,
            vec![
                ("t.py::test_ok[1]", TestStatus::Pass),
                ("t.py::test_at[12:00:01]", TestStatus::Fail),
                ("t.py::test_at[12:00:02]", TestStatus::Pass),
            ]
        );
        // Another count of instances: only an agreeing status is given to each missing id.
        let agreeing = vec![r("t.py::test_at[x]", TestStatus::Fail)];
        assert_eq!(pytest_renamed(&ids, &missing, agreeing).len(), 2);
        let split = vec![
            r("t.py::test_at[x]", TestStatus::Fail),
            r("t.py::test_at[y]", TestStatus::Pass),
            r("t.py::test_at[z]", TestStatus::Pass),
        ];
        assert!(pytest_renamed(&ids, &missing, split).is_empty());
    }

    #[test]
    fn one_pytest_command_runs_every_id_and_a_generic_runner_selects_nothing() {
        let ids = own(&["tests/test_a.py::test_x", "tests/test_b.py::test_y"]);
        let got = commands(
            Runner::Pytest,
            &own(&["python", "-m", "pytest", "-q"]),
            &ids,
            None,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, ids);
        assert!(commands(Runner::Generic, &own(&["make", "test"]), &ids, None).is_empty());
    }

    #[test]
    fn with_the_layout_a_custom_test_target_and_a_workspace_member_are_selected_by_cargos_names() {
        use crate::gate::cargo::Target;
        let t = |package: &str, dir: &str, name: &str, kind: &str, src: &str| Target {
            package: package.into(),
            name: name.into(),
            kind: vec![kind.into()],
            src_path: src.into(),
            package_dir: dir.into(),
            test: true,
        };
        let layout = Layout {
            targets: vec![
                t("ripgrep", "", "integration", "test", "tests/tests.rs"),
                t(
                    "grep-cli",
                    "crates/cli",
                    "grep_cli",
                    "lib",
                    "crates/cli/src/lib.rs",
                ),
            ],
            files: Default::default(),
        };
        let got = commands(
            Runner::Cargo,
            &own(&["cargo", "test"]),
            &own(&[
                "integration@tests/tests.rs::regression::r1",
                "grep_cli@src/lib.rs::tests::x",
            ]),
            Some(&layout),
        );
        assert_eq!(
            got,
            vec![
                (
                    own(&["cargo", "test", "-p", "grep-cli", "--lib", "--", "--exact", "tests::x"]),
                    own(&["grep_cli@src/lib.rs::tests::x"])
                ),
                (
                    own(&[
                        "cargo",
                        "test",
                        "-p",
                        "ripgrep",
                        "--test",
                        "integration",
                        "--",
                        "--exact",
                        "regression::r1"
                    ]),
                    own(&["integration@tests/tests.rs::regression::r1"])
                ),
            ]
        );
    }

    #[test]
    fn the_build_of_a_selection_is_the_same_command_without_running_tests() {
        assert_eq!(
            build_command(
                Runner::Cargo,
                &own(&[
                    "cargo",
                    "test",
                    "--test",
                    "integration",
                    "--",
                    "--exact",
                    "r1"
                ])
            ),
            Some(own(&["cargo", "test", "--test", "integration", "--no-run"]))
        );
        assert_eq!(
            build_command(
                Runner::Go,
                &own(&["go", "test", "-json", "-run", "^(TestX)$", "example.com/a"])
            ),
            Some(own(&["go", "test", "-json", "-run", "^$", "example.com/a"]))
        );
        assert_eq!(
            build_command(Runner::Pytest, &own(&["pytest", "t.py::x"])),
            None
        );
        assert_eq!(build_command(Runner::Cargo, &own(&["make", "test"])), None);
    }
}
