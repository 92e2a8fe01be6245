//! `vouch gate` on Python projects that need installing: a generated, git-ignored module exists only once the
//! project is built. Real `python3 -m venv` and real pip, offline: the venvs see the interpreter's
//! site-packages, where setuptools and pytest already are.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::util::Repo;

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
[project]\nname = \"verlib\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"verlib\"]\n";
/// Writes `verlib/_generated.py` from `verlib/table.txt` whenever the project is built (like setuptools_scm's
/// `write_to`): the module exists only after an install, and its content is the room's own.
const SETUP_PY: &str = "import pathlib\n\nfrom setuptools import setup\n\n\
here = pathlib.Path(__file__).parent / \"verlib\"\n\
here.joinpath(\"_generated.py\").write_text(\"DIVISOR = \" + here.joinpath(\"table.txt\").read_text().strip() + \"\\n\")\n\
setup()\n";
const INIT: &str =
    "from verlib._generated import DIVISOR\n\n\ndef half(x):\n    return x / DIVISOR\n";
const TEST_OLD: &str =
    "from verlib import half\n\n\ndef test_half_of_zero():\n    assert half(0) == 0\n";
const TEST_NEW: &str = "import pathlib\n\nimport verlib._generated\nfrom verlib import half\n\n\n\
def test_half_of_three_is_one_and_a_half():\n    assert half(3) == 1.5\n\n\n\
def test_the_generated_module_is_this_rooms():\n    here = pathlib.Path(verlib._generated.__file__).resolve()\n    assert here.parent.parent == pathlib.Path.cwd().resolve()\n";

/// At base the table says 1 (a bug: half(3) is 3); the fix says 2.
fn project() -> Repo {
    let repo = Repo::with_files(&[
        ("pyproject.toml", PYPROJECT),
        ("setup.py", SETUP_PY),
        (".gitignore", "verlib/_generated.py\n*.egg-info/\nbuild/\n"),
        ("verlib/__init__.py", INIT),
        ("verlib/table.txt", "1\n"),
        ("tests/test_old.py", TEST_OLD),
    ]);
    repo.write("verlib/table.txt", "2\n");
    repo.write("tests/test_new.py", TEST_NEW);
    repo.commit("fix half: the table divides by two");
    repo
}

/// The shared venvs of the repository's rooms (`<cache>/rooms/<key>/python/<hash>`).
fn shared_envs(cache: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for repo in std::fs::read_dir(cache.join("rooms"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for env in std::fs::read_dir(repo.path().join("python"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if env.path().is_dir() {
                out.push(env.path());
            }
        }
    }
    out.sort();
    out
}

fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

#[test]
fn a_project_with_a_generated_module_is_installed_per_room_and_its_fix_bites() {
    let repo = project();
    let started = Instant::now();
    let g = repo.gate(&["--base", "HEAD~1", "--keep"]);
    let first = started.elapsed();
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("pytest")["status"], "pass", "{}", g.explain());
    assert_eq!(g.step("pytest")["tests"]["passed"], 3, "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    // Each room built its own generated module from its own tree: head's table at head, base's in the bite
    // room (head's tests over base), so the bite room did not import head's code.
    let kept = repo.tmp.path().join("workspaces");
    let gate_dir = std::fs::read_dir(&kept)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let generated = |role: &str| {
        std::fs::read_to_string(gate_dir.join(role).join("verlib/_generated.py")).unwrap()
    };
    assert_eq!(generated("head"), "DIVISOR = 2\n");
    assert_eq!(generated("bite"), "DIVISOR = 1\n");
    // One shared venv for the dependency set, without the project in it.
    let envs = shared_envs(&repo.cache);
    assert_eq!(envs.len(), 1, "{envs:?}");
    let cfg = envs[0].join("pyvenv.cfg");
    let made = modified(&cfg);
    let leftovers: Vec<String> = walk(&envs[0])
        .into_iter()
        .filter(|p| p.contains("verlib"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "the project is in the shared venv: {leftovers:?}"
    );

    // A second run with the same dependency set reuses the shared venv (not made again).
    let started = Instant::now();
    let again = repo.gate(&["--base", "HEAD~1"]);
    let second = started.elapsed();
    assert_eq!(again.verdict(), "pass", "{}", again.explain());
    assert_eq!(
        again.report()["bite"]["status"],
        "bites",
        "{}",
        again.explain()
    );
    assert_eq!(shared_envs(&repo.cache), envs);
    assert_eq!(modified(&cfg), made, "the shared venv was made again");
    eprintln!("gate with install: first run {first:?}, second run {second:?}");
}

/// Every path under `dir`, as text.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        out.push(p.to_string_lossy().into_owned());
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        }
    }
    out
}

#[test]
fn a_changed_dependency_set_makes_a_new_venv_and_clean_removes_the_old_one() {
    let repo = project();
    assert_eq!(repo.gate(&["--base", "HEAD~1"]).verdict(), "pass");
    assert_eq!(shared_envs(&repo.cache).len(), 1);
    repo.write(
        "pyproject.toml",
        &format!("{PYPROJECT}# the dependency set changed\n"),
    );
    repo.write(
        "tests/test_more.py",
        "from verlib import half\n\n\ndef test_half_of_two():\n    assert half(2) == 1\n",
    );
    repo.commit("pyproject: a comment, and one more test");
    // Judged (its new test passes at base too, so it does not bite), not an environment error.
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.step("pytest")["status"], "pass", "{}", g.explain());
    assert_eq!(shared_envs(&repo.cache).len(), 2);
    let run = repo.vouch(&["clean", "--repo", &repo.dir.to_string_lossy()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("python env"), "{}", run.stdout);
    assert_eq!(shared_envs(&repo.cache).len(), 1);
}

#[test]
fn an_install_that_fails_is_an_environment_error_with_pips_error_not_a_failure() {
    let repo = project();
    let broken = PYPROJECT.replace(
        "version = \"0.1.0\"\n",
        "version = \"0.1.0\"\ndependencies = [\"nosuchdep @ file:///nonexistent/nosuchdep\"]\n",
    );
    repo.write("pyproject.toml", &broken);
    repo.commit("depend on something that is not there");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "error", "{}", g.explain());
    assert_eq!(g.step("pytest")["status"], "error", "{}", g.explain());
    let note = g.step("pytest")["note"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains("installing the project's dependencies failed: ERROR:"),
        "{note}"
    );
    // Base's venv, made by the trusted build, is the only one, and it is whole.
    let envs = shared_envs(&repo.cache);
    assert_eq!(envs.len(), 1, "a half-built venv was kept: {envs:?}");
    assert!(envs[0].join(".vouch-ready").is_file(), "{envs:?}");
}

#[test]
fn without_installing_the_hint_names_the_generated_module() {
    let repo = project();
    let profile = repo.tmp.path().join("never.toml");
    let text = crate::util::preset("python").replace("install = \"auto\"", "install = \"never\"");
    assert!(text.contains("install = \"never\""), "{text}");
    std::fs::write(&profile, text).unwrap();
    let g = repo.gate(&["--base", "HEAD~1", "--profile", &profile.to_string_lossy()]);
    assert_ne!(g.verdict(), "pass", "{}", g.explain());
    let note = g.step("pytest")["note"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains(
            "verlib._generated is missing: it is generated or installed by the project's build"
        ),
        "{}",
        g.explain()
    );
    assert!(shared_envs(&repo.cache).is_empty());
}

#[test]
fn a_project_without_a_build_system_makes_no_venv() {
    let repo = Repo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
    ]);
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    repo.write(
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    );
    repo.commit("fix add");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    assert!(shared_envs(&repo.cache).is_empty());
}

#[test]
fn the_venv_the_users_python_belongs_to_is_seen_by_the_gate() {
    // The user's python3 is a venv's, holding a package the tests import and the project does not declare
    // (as a pinned test tool would be): the gate's environment layers over it instead of hiding it.
    let repo = project();
    // Outside /tmp: the sandbox gives every step a /tmp of its own, where the venv would not be.
    let holder = tempfile::Builder::new()
        .prefix("active-venv-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let active = holder.path().join("active");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip", "--system-site-packages"])
        .arg(&active)
        .status()
        .unwrap();
    assert!(made.success());
    let sp = std::fs::read_dir(active.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .unwrap();
    std::fs::write(sp.join("vouch_active_marker.py"), "WHERE = 'active'\n").unwrap();
    repo.write(
        "tests/test_marker.py",
        "import vouch_active_marker\n\n\ndef test_the_active_env_is_seen():\n    assert vouch_active_marker.WHERE == 'active'\n",
    );
    repo.commit("a test that needs the user's environment");
    let path = format!(
        "{}:{}",
        active.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let g = repo.gate_env(&["--base", "HEAD~2"], &[("PATH", &path)]);
    assert_eq!(g.step("pytest")["status"], "pass", "{}", g.explain());
    assert_eq!(g.step("pytest")["tests"]["passed"], 4, "{}", g.explain());
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
}

/// The room layers (`<cache>/rooms/<key>/<role>.cache/python-room/<hash>`) and when each was made.
fn layers(cache: &Path) -> Vec<(PathBuf, std::time::SystemTime, bool)> {
    // Base's, in the trusted cache; the ones a change's build made, in its kept build layers.
    let mut dirs = Vec::new();
    for repo in std::fs::read_dir(cache.join("rooms"))
        .into_iter()
        .flatten()
        .flatten()
    {
        dirs.push(repo.path().join("base.cache/python-room"));
        for change in std::fs::read_dir(repo.path().join("layers"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for layer in std::fs::read_dir(change.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                dirs.push(layer.path().join("cache/files/python-room"));
            }
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        for layer in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = layer.path();
            out.push((
                p.clone(),
                modified(&p.join("pyvenv.cfg")),
                p.join(".vouch-layer.json").is_file(),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn a_room_layer_is_reused_while_the_projects_layout_is_the_same_and_made_again_when_it_changes() {
    // A src-layout project whose install writes nothing into the room (no generated module).
    let pyproject = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
[project]\nname = \"calc\"\nversion = \"0.1.0\"\n";
    let repo = Repo::with_files(&[
        ("pyproject.toml", pyproject),
        (".gitignore", "*.egg-info/\nbuild/\n"),
        (
            "src/calc/__init__.py",
            "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n",
        ),
        (
            "tests/test_old.py",
            "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        ),
    ]);
    repo.write(
        "src/calc/__init__.py",
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n",
    );
    repo.write(
        "tests/test_add.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    );
    repo.commit("fix add");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    // One environment, base's, made by the trusted build and used as it is by head and the bite room.
    let first = layers(&repo.cache);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first.iter().all(|(_, _, marked)| *marked), "{first:?}");

    // The next change: both rooms open again at other trees with the same layout, and use their layers as
    // they are; the bite check still sees the reverted code.
    repo.write(
        "src/calc/__init__.py",
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    );
    repo.write(
        "tests/test_mul.py",
        "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    );
    repo.commit("fix mul");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    assert_eq!(layers(&repo.cache), first, "a room layer was made again");

    // A new top-level package is a new layout: the layers are made again, and the new package imports.
    repo.write(
        "src/geometry/__init__.py",
        "def area(w, h):\n    return w + h\n",
    );
    repo.commit("add geometry");
    repo.write(
        "src/geometry/__init__.py",
        "def area(w, h):\n    return w * h\n",
    );
    repo.write(
        "tests/test_area.py",
        "from geometry import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n",
    );
    repo.commit("fix area");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["bite"]["status"], "bites", "{}", g.explain());
    let third = layers(&repo.cache);
    assert_eq!(third.len(), 1, "{third:?}");
    for ((path, made, _), (path3, made3, _)) in first.iter().zip(&third) {
        assert_eq!(path, path3);
        assert_ne!(
            made,
            made3,
            "{} was reused for a new layout",
            path.display()
        );
    }
}

#[test]
fn a_room_layer_whose_install_generated_a_module_is_never_reused() {
    // verlib's setup.py writes a module from the room's own table: a reused layer would keep another tree's.
    let repo = project();
    assert_eq!(repo.gate(&["--base", "HEAD~1"]).verdict(), "pass");
    // Base's in the trusted cache and head's own in its build layer, neither marked for reuse.
    let first = layers(&repo.cache);
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|(_, _, marked)| !marked), "{first:?}");
}
