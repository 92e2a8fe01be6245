//! The commands that run the changed tests, and only them, in the bite room: one per test target (cargo), or
//! per package or file as the runner's selection splits them, each with the ids it is meant to run.
//!
//! A selection that does not build without the change must not hide the others, so each command is run and
//! judged on its own.

use std::collections::BTreeMap;

use crate::gate::results::{self, Runner};

/// Groups cargo ids by their test target and narrows each selection to that target, so a target that does
/// not build without the change does not hide the others.
fn cargo_commands(argv: &[String], ids: &[String]) -> Vec<(Vec<String>, Vec<String>)> {
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
        let selector: Vec<String> = if path.starts_with("tests/") {
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

/// The selection commands with the ids each is meant to run.
pub fn commands(
    runner: Runner,
    argv: &[String],
    ids: &[String],
) -> Vec<(Vec<String>, Vec<String>)> {
    if runner == Runner::Cargo {
        return cargo_commands(argv, ids);
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn one_pytest_command_runs_every_id_and_a_generic_runner_selects_nothing() {
        let ids = own(&["tests/test_a.py::test_x", "tests/test_b.py::test_y"]);
        let got = commands(
            Runner::Pytest,
            &own(&["python", "-m", "pytest", "-q"]),
            &ids,
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, ids);
        assert!(commands(Runner::Generic, &own(&["make", "test"]), &ids).is_empty());
    }
}
