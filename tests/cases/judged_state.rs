//! The gate's own state is out of reach of the code it judges: what a change's tests write (a test binary
//! replaced in the build cache, every build output dated in the future) is never read by a rerun, a later
//! gate or a gate running at the same time; concurrent gates of different changes each get their own verdict.

use std::thread;

use crate::util::{Gate, Repo};

const CARGO_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const LIB: &str = "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n";
const BROKEN_LIB: &str = "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n";
const MATH: &str = "use calc::add;\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n";

/// A passing test that poisons the build cache as an attacker would: every other test binary beside its own
/// becomes a script printing a passing libtest run (the test names it is asked for, `adds` otherwise), and
/// everything under the profile directory is dated a year ahead so that cargo takes it as fresh.
const POISON: &str = r##"use std::os::unix::fs::PermissionsExt;

const FAKE: &str = "#!/bin/sh\nnames=\"\"\nfor a in \"$@\"; do case \"$a\" in -*) ;; *) names=\"$names $a\";; esac; done\n[ -z \"$names\" ] && names=adds\nn=0; for t in $names; do n=$((n+1)); done\necho\necho \"running $n tests\"\nfor t in $names; do echo \"test $t ... ok\"; done\necho\necho \"test result: ok. $n passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\"\necho\n";

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            }
            out.push(p);
        }
    }
}

#[test]
fn tidy() {
    let me = std::env::current_exe().unwrap();
    let deps = me.parent().unwrap();
    for e in std::fs::read_dir(deps).unwrap().flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p != me && name.starts_with("math-") && !name.contains('.') {
            let _ = std::fs::remove_file(&p);
            std::fs::write(&p, FAKE).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(365 * 24 * 3600);
    let mut all = Vec::new();
    walk(deps.parent().unwrap(), &mut all);
    for p in all {
        if let Ok(f) = std::fs::File::options().write(true).open(&p) {
            let _ = f.set_modified(later);
        }
    }
}
"##;

/// A crate with a passing test of `add` on `main`.
fn calc() -> Repo {
    Repo::with_files(&[
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", LIB),
        ("tests/math.rs", MATH),
    ])
}

/// A branch off `main` named `name` with `files` written, committed.
fn branch(repo: &Repo, name: &str, files: &[(&str, &str)]) {
    repo.git(&["switch", "-q", "-C", name, "main"]);
    repo.write_all(files);
    repo.commit(name);
}

fn gate_branch(repo: &Repo, name: &str) -> Gate {
    repo.git(&["switch", "-q", name]);
    repo.gate(&["--base", "main", "--head", name])
}

#[test]
fn a_test_that_poisons_the_build_cache_never_makes_a_later_broken_change_pass() {
    let repo = calc();
    branch(&repo, "poison", &[("tests/zz_poison.rs", POISON)]);
    branch(&repo, "broken", &[("src/lib.rs", BROKEN_LIB)]);
    // The poisoning change is judged on its own (its test passes, it changes nothing of production).
    let poisoned = gate_branch(&repo, "poison");
    assert_ne!(poisoned.verdict(), "error", "{}", poisoned.explain());
    // The broken change after it: its existing test fails, whatever the last gate's tests wrote.
    let broken = gate_branch(&repo, "broken");
    assert_eq!(broken.verdict(), "fail", "{}", broken.explain());
    assert!(
        broken
            .tests("new_failures")
            .iter()
            .any(|t| t.contains("adds")),
        "{}",
        broken.explain()
    );
    // And again, with the poisoning change gated between.
    let _ = gate_branch(&repo, "poison");
    let again = gate_branch(&repo, "broken");
    assert_eq!(again.verdict(), "fail", "{}", again.explain());
}

#[test]
fn a_rerun_of_a_real_failure_runs_the_binary_this_gate_built_not_one_a_test_replaced() {
    let repo = calc();
    // Breaks `add`, and adds a test that runs after the failing one and replaces its binary: the rerun of
    // `adds` (to tell a flaky test) would print a pass.
    branch(
        &repo,
        "sneaky",
        &[("src/lib.rs", BROKEN_LIB), ("tests/zz_poison.rs", POISON)],
    );
    let g = gate_branch(&repo, "sneaky");
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert!(
        g.tests("new_failures").iter().any(|t| t.contains("adds")),
        "the failure of `adds` was not blamed: {}",
        g.explain()
    );
    assert!(
        g.tests("flaky").is_empty(),
        "a rerun read as flaky: {}",
        g.explain()
    );
}

/// `add` fixed for negative numbers from a `main` where it is wrong, with a test that shows it: right.
const FIX: &str =
    "pub fn add(a: i64, b: i64) -> i64 {\n    a.wrapping_add(b)\n}\n\npub fn neg(a: i64) -> i64 {\n    -a\n}\n";

/// A branch name, the files it writes, and the verdict its gate must give.
type Change = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

#[test]
fn four_gates_of_four_changes_at_once_each_get_their_own_verdict() {
    let repo = calc();
    let changes: [Change; 4] = [
        (
            "right-one",
            &[
                ("src/lib.rs", FIX),
                (
                    "tests/neg.rs",
                    "#[test]\nfn negates() {\n    assert_eq!(calc::neg(2), -2);\n}\n",
                ),
            ],
            "pass",
        ),
        ("wrong-one", &[("src/lib.rs", BROKEN_LIB)], "fail"),
        (
            "right-two",
            &[
                (
                    "src/lib.rs",
                    "pub fn add(a: i64, b: i64) -> i64 {\n    b + a\n}\n\npub fn double(a: i64) -> i64 {\n    2 * a\n}\n",
                ),
                (
                    "tests/double.rs",
                    "#[test]\nfn doubles() {\n    assert_eq!(calc::double(4), 8);\n}\n",
                ),
            ],
            "pass",
        ),
        (
            "wrong-two",
            &[(
                "src/lib.rs",
                "pub fn add(a: i64, b: i64) -> i64 {\n    a * b\n}\n",
            )],
            "fail",
        ),
    ];
    for (name, files, _) in &changes {
        branch(&repo, name, files);
    }
    repo.git(&["switch", "-q", "main"]);
    for round in 0..5 {
        let verdicts: Vec<(String, String, String)> = thread::scope(|s| {
            let handles: Vec<_> = changes
                .iter()
                .map(|(name, _, want)| {
                    let repo = &repo;
                    s.spawn(move || {
                        let json = repo.tmp.path().join(format!("{name}.json"));
                        let dir = repo.dir.to_string_lossy().into_owned();
                        let json_s = json.to_string_lossy().into_owned();
                        let run = repo.vouch(&[
                            "gate", "--repo", &dir, "--json", &json_s, "--base", "main", "--head",
                            name,
                        ]);
                        let report: serde_json::Value = std::fs::read_to_string(&json)
                            .ok()
                            .and_then(|t| serde_json::from_str(&t).ok())
                            .unwrap_or_else(|| panic!("{name}: no report\n{}", run.stderr));
                        (
                            name.to_string(),
                            want.to_string(),
                            report["verdict"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (name, want, got) in verdicts {
            assert_eq!(got, want, "round {round}: {name}");
        }
    }
}

/// The answers of a scripted run that writes `files` and says GO.
fn writes_and_goes(files: &[(&str, &str)]) -> Vec<crate::util::model_server::Answer> {
    use crate::util::model_server::call;
    let mut out: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, (path, content))| {
            call(
                i + 1,
                "write_file",
                serde_json::json!({"path": path, "content": content}),
            )
        })
        .collect();
    out.push(call(
        files.len() + 1,
        "submit",
        serde_json::json!({"verdict": "GO", "summary": "done"}),
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_of_three_at_once_rejects_exactly_the_task_that_breaks_add() {
    use super::backlog::{command, output, tasks, title};
    use crate::util::model_server::ModelServer;
    let repo = calc();
    let dir = tasks(&repo, &["neg", "double", "breaks-add"]);
    let server = ModelServer::start(vec![
        (
            title("neg").as_str(),
            writes_and_goes(&[
                ("src/lib.rs", FIX),
                (
                    "tests/neg.rs",
                    "#[test]\nfn negates() {\n    assert_eq!(calc::neg(2), -2);\n}\n",
                ),
            ]),
        ),
        (
            title("double").as_str(),
            writes_and_goes(&[
                (
                    "src/lib.rs",
                    "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\npub fn double(a: i64) -> i64 {\n    2 * a\n}\n",
                ),
                (
                    "tests/double.rs",
                    "#[test]\nfn doubles() {\n    assert_eq!(calc::double(4), 8);\n}\n",
                ),
            ]),
        ),
        (
            title("breaks-add").as_str(),
            writes_and_goes(&[
                (
                    "src/lib.rs",
                    "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n\npub fn triple(a: i64) -> i64 {\n    3 * a\n}\n",
                ),
                (
                    "tests/triple.rs",
                    "#[test]\nfn triples() {\n    assert_eq!(calc::triple(2), 6);\n}\n",
                ),
            ]),
        ),
    ])
    .await;
    let json_out = repo.tmp.path().join("summary.json");
    let mut cmd = command(
        &repo,
        &dir,
        &server.url,
        &[
            "--jobs",
            "3",
            "--attempts",
            "1",
            "--json",
            json_out.to_str().unwrap(),
        ],
        &["--repair-cycles", "0"],
    );
    let run = tokio::task::spawn_blocking(move || output(cmd.output().unwrap()))
        .await
        .unwrap();
    let _ = server.finish_stopped();
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json_out)
            .unwrap_or_else(|_| panic!("no summary\n{}", run.stderr)),
    )
    .unwrap();
    let mut got: Vec<(String, String)> = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let want = [
        ("breaks-add", "rejected"),
        ("double", "verified"),
        ("neg", "verified"),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(
        got, want,
        "exit {}\n{}\n{}",
        run.code, run.stdout, run.stderr
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
}

/// A test that fails wherever something it can see tells a bite room: its working directory, the target
/// directory, any variable of its environment, the entries beside its room, the commit message of the
/// room's HEAD, or the mounts it sees (an overlay's options name its layers).
const TELLS_THE_BITE_ROOM: &str = r##"#[test]
fn adds_and_looks_around() {
    assert_eq!(calc::add(1, 2), 3);
    let mut seen = Vec::new();
    let cwd = std::env::current_dir().unwrap();
    seen.push(cwd.display().to_string());
    for (k, v) in std::env::vars() {
        seen.push(format!("{k}={v}"));
    }
    if let Ok(entries) = std::fs::read_dir(cwd.parent().unwrap()) {
        for e in entries.flatten() {
            seen.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    if let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") {
        seen.push(mounts);
    }
    if let Ok(out) = std::process::Command::new("git")
        .args(["log", "-1", "--format=%B"])
        .output()
    {
        seen.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    for s in &seen {
        let s = s.to_lowercase();
        assert!(
            !s.contains("bite") && !s.contains("revert"),
            "a bite room: {s}"
        );
    }
}
"##;

#[test]
fn a_test_cannot_tell_the_bite_room_from_the_head_room() {
    let repo = calc();
    // `add` written another way (nothing fixed), and a test that fails only where it sees a bite room.
    branch(
        &repo,
        "nothing",
        &[
            (
                "src/lib.rs",
                "pub fn add(a: i64, b: i64) -> i64 {\n    b + a\n}\n",
            ),
            ("tests/where.rs", TELLS_THE_BITE_ROOM),
        ],
    );
    let g = gate_branch(&repo, "nothing");
    assert_eq!(g.step("test")["status"], "pass", "{}", g.explain());
    assert_ne!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
}

#[test]
fn two_gates_of_one_head_at_once_keep_their_own_logs() {
    let repo = calc();
    branch(&repo, "broken", &[("src/lib.rs", BROKEN_LIB)]);
    repo.git(&["switch", "-q", "main"]);
    let reports: Vec<serde_json::Value> = thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let repo = &repo;
                s.spawn(move || {
                    let json = repo.tmp.path().join(format!("same-{i}.json"));
                    let dir = repo.dir.to_string_lossy().into_owned();
                    let json_s = json.to_string_lossy().into_owned();
                    let run = repo.vouch(&[
                        "gate", "--repo", &dir, "--json", &json_s, "--base", "main", "--head",
                        "broken",
                    ]);
                    std::fs::read_to_string(&json)
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok())
                        .unwrap_or_else(|| panic!("no report\n{}", run.stderr))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &reports {
        assert_eq!(r["verdict"], "fail", "{r:#}");
    }
    assert_ne!(reports[0]["logs"], reports[1]["logs"]);
}
