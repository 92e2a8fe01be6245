//! Cached rooms: keyed by the repository's identity, and rebuilt rather than trusted when they do not hold
//! together (a repository re-created at the same path, a room left half-written).

use crate::util::Repo;

const PYPROJECT: &str = "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// Makes (or remakes) the repository at `repo.dir`: a first commit with `calc`, then a fix with its test.
fn make(repo: &Repo, calc: &str, fix: &str) {
    if repo.dir.exists() {
        std::fs::remove_dir_all(&repo.dir).unwrap();
    }
    std::fs::create_dir_all(&repo.dir).unwrap();
    repo.git(&["init", "-q", "-b", "main"]);
    repo.write_all(&[
        ("pyproject.toml", PYPROJECT),
        ("calc.py", calc),
        ("tests/test_calc.py", TEST_CALC),
    ]);
    repo.commit("initial");
    repo.write("calc.py", &format!("{calc}\n\n{fix}"));
    repo.write(
        "tests/test_sub.py",
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    repo.commit("add sub");
}

const ADD: &str = "def add(a, b):\n    return a + b\n";
const SUB: &str = "def sub(a, b):\n    return a - b\n";

#[test]
fn a_repository_recreated_at_the_same_path_with_other_history_gates_again() {
    let repo = Repo::new();
    make(&repo, ADD, SUB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    // Same path, a different first commit: a different repository.
    make(&repo, &format!("# calc, again\n{ADD}"), SUB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(
        g.report()["head"]["sha"],
        repo.git(&["rev-parse", "HEAD"]).as_str()
    );
}

#[test]
fn a_cached_room_whose_commit_is_gone_is_rebuilt() {
    let repo = Repo::new();
    make(&repo, ADD, SUB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    // The same first commit (hermetic dates), a different fix: the rooms' key stays, their HEAD is gone.
    make(
        &repo,
        ADD,
        "def sub(a, b):\n    # the other history\n    return a - b\n",
    );
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert!(
        !g.run.stderr.contains("cannot be peeled"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_half_written_cached_room_is_rebuilt() {
    let repo = Repo::new();
    make(&repo, ADD, SUB);
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    // Damage every cached room the way a crash or a stray tool would: HEAD unreadable, the index truncated,
    // the alternates pointing elsewhere, and a stray file.
    let rooms = repo.cache.join("rooms");
    let mut damaged = 0;
    for key in std::fs::read_dir(&rooms).unwrap().flatten() {
        for room in std::fs::read_dir(key.path()).unwrap().flatten() {
            let git = room.path().join(".git");
            if !git.is_dir() {
                continue;
            }
            std::fs::write(git.join("HEAD"), "garbage").unwrap();
            std::fs::write(git.join("index"), "DIRC").unwrap();
            std::fs::write(
                git.join("objects/info/alternates"),
                "/nonexistent/objects\n",
            )
            .unwrap();
            std::fs::write(room.path().join("stray.txt"), "left over").unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0, "no cached room under {}", rooms.display());
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}
