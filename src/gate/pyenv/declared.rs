//! What a Python project declares: whether it has a build system, the files that declare its dependencies
//! (hashed into the shared venv's name), and the build requirements, test extras, dependency groups and
//! requirement files the shared venv installs, in the order the README documents.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::PythonSettings;

/// Whether the tree declares a build system: `[build-system]` in pyproject.toml, or a setup.py.
pub fn has_build_system(room: &Path) -> bool {
    if room.join("setup.py").is_file() {
        return true;
    }
    std::fs::read_to_string(room.join("pyproject.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .is_some_and(|t| t.contains_key("build-system"))
}

/// The names of test dependency groups and extras, in the order they are looked for.
pub const TEST_GROUPS: &[&str] = &["test", "tests", "testing"];
/// Used only when none of [`TEST_GROUPS`] exists.
pub const DEV_GROUP: &str = "dev";

/// The files that declare dependencies, relative to the room, sorted: they make the dependency hash.
pub(super) fn dependency_files(room: &Path) -> Vec<String> {
    let mut out: Vec<String> = ["pyproject.toml", "setup.cfg", "setup.py"]
        .iter()
        .filter(|f| room.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    let listed = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in listed(room) {
        let plain = name.starts_with("requirements") && name.ends_with(".txt");
        let suffixed = name.ends_with("-requirements.txt") || name.ends_with("_requirements.txt");
        if plain || suffixed {
            out.push(name);
        }
    }
    for name in listed(&room.join("requirements")) {
        if name.ends_with(".txt") {
            out.push(format!("requirements/{name}"));
        }
    }
    out.sort();
    out
}

/// The requirement files installed: runtime (`requirements.txt`) and those named for tests or development.
pub(super) fn requirement_files(files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.ends_with(".txt"))
        .filter(|f| {
            let stem = f.trim_end_matches(".txt");
            let stem = stem.rsplit('/').next().unwrap_or(stem);
            stem == "requirements"
                || stem
                    .split(['-', '_'])
                    .any(|w| TEST_GROUPS.contains(&w) || w == DEV_GROUP)
        })
        .cloned()
        .collect()
}

/// The hash of a dependency set: the declaring files' names and contents, the settings and the interpreter.
pub(super) fn dependency_hash(
    room: &Path,
    files: &[String],
    settings: &PythonSettings,
    version: &str,
) -> String {
    let mut h = Sha256::new();
    for f in files {
        h.update(f.as_bytes());
        h.update([0]);
        h.update(std::fs::read(room.join(f)).unwrap_or_default());
        h.update([0]);
    }
    h.update(toml::to_string(settings).unwrap_or_default().as_bytes());
    h.update([0]);
    h.update(version.as_bytes());
    hex::encode(&h.finalize()[..8])
}

/// The groups of `table` (optional-dependencies or dependency-groups) to install: the test ones, else `dev`.
fn chosen_groups(table: Option<&toml::Table>) -> Vec<String> {
    let Some(table) = table else {
        return Vec::new();
    };
    let tests: Vec<String> = TEST_GROUPS
        .iter()
        .filter(|g| table.contains_key(**g))
        .map(|g| g.to_string())
        .collect();
    if tests.is_empty() && table.contains_key(DEV_GROUP) {
        return vec![DEV_GROUP.into()];
    }
    tests
}

/// What pip installs besides the project: the extras to ask for and the dependency-group requirements.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Wanted {
    pub build: Vec<String>,
    pub extras: Vec<String>,
    pub groups: Vec<String>,
}

/// Reads pyproject.toml: build requirements, test extras (asked for blindly when the extras are not static,
/// pip only warns about a missing one) and PEP 735 dependency groups (include-group followed).
pub(super) fn wanted(pyproject: Option<&str>) -> Wanted {
    let table = pyproject.and_then(|t| t.parse::<toml::Table>().ok());
    let get = |path: &[&str]| -> Option<&toml::Value> {
        let mut v = table.as_ref()?.get(path[0])?;
        for k in &path[1..] {
            v = v.get(*k)?;
        }
        Some(v)
    };
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let build = strings(get(&["build-system", "requires"]));
    let dynamic = strings(get(&["project", "dynamic"]));
    let extras = match get(&["project", "optional-dependencies"]).and_then(|v| v.as_table()) {
        Some(t) if !dynamic.iter().any(|d| d == "optional-dependencies") => chosen_groups(Some(t)),
        _ => TEST_GROUPS.iter().map(|g| g.to_string()).collect(),
    };
    let groups_table = get(&["dependency-groups"]).and_then(|v| v.as_table());
    let mut groups = Vec::new();
    for g in chosen_groups(groups_table) {
        expand_group(groups_table, &g, &mut groups, 0);
    }
    Wanted {
        build,
        extras,
        groups,
    }
}

fn expand_group(table: Option<&toml::Table>, name: &str, out: &mut Vec<String>, depth: usize) {
    let Some(items) = table
        .and_then(|t| t.get(name))
        .and_then(|v| v.as_array())
        .filter(|_| depth < 10)
    else {
        return;
    };
    for item in items {
        match item {
            toml::Value::String(s) => out.push(s.clone()),
            toml::Value::Table(t) => {
                if let Some(inner) = t.get("include-group").and_then(|v| v.as_str()) {
                    expand_group(table, inner, out, depth + 1);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::pyenv::Install;

    #[test]
    fn a_build_system_is_a_build_system_table_or_a_setup_py() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_build_system(dir.path()));
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"x\"\n",
        )
        .unwrap();
        assert!(!has_build_system(dir.path()));
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[build-system]\nrequires = [\"setuptools\"]\n",
        )
        .unwrap();
        assert!(has_build_system(dir.path()));
        std::fs::remove_file(dir.path().join("pyproject.toml")).unwrap();
        std::fs::write(dir.path().join("setup.py"), "").unwrap();
        assert!(has_build_system(dir.path()));
    }

    #[test]
    fn test_groups_are_preferred_to_dev_and_groups_follow_includes() {
        let w = wanted(Some(
            "[build-system]\nrequires = [\"setuptools>=64\", \"setuptools_scm\"]\n\
             [project]\nname = \"x\"\n[project.optional-dependencies]\ndev = [\"tox\"]\ntesting = [\"hypothesis\"]\n\
             [dependency-groups]\ntest = [\"pytest-xdist\", { include-group = \"cov\" }]\ncov = [\"coverage\"]\ndev = [\"ruff\"]\n",
        ));
        assert_eq!(
            w,
            Wanted {
                build: vec!["setuptools>=64".into(), "setuptools_scm".into()],
                extras: vec!["testing".into()],
                groups: vec!["pytest-xdist".into(), "coverage".into()],
            }
        );
        let dev_only = wanted(Some("[project.optional-dependencies]\ndev = [\"x\"]\n"));
        assert_eq!(dev_only.extras, vec!["dev".to_string()]);
        let unknown = wanted(None);
        assert_eq!(unknown.extras, vec!["test", "tests", "testing"]);
        let dynamic = wanted(Some(
            "[project]\ndynamic = [\"optional-dependencies\"]\n[project.optional-dependencies]\n",
        ));
        assert_eq!(dynamic.extras, vec!["test", "tests", "testing"]);
    }

    #[test]
    fn requirement_files_for_tests_and_runtime_are_installed_and_docs_ones_are_not() {
        let files: Vec<String> = [
            "pyproject.toml",
            "requirements.txt",
            "requirements-dev.txt",
            "requirements-docs.txt",
            "requirements/tests.txt",
            "requirements/docs.txt",
            "test-requirements.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            requirement_files(&files),
            vec![
                "requirements.txt",
                "requirements-dev.txt",
                "requirements/tests.txt",
                "test-requirements.txt"
            ]
        );
    }

    #[test]
    fn the_dependency_hash_follows_the_declaring_files_and_the_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let s = PythonSettings {
            install: Install::Auto,
            python: "python3".into(),
            requires: vec!["pytest".into()],
            system_site_packages: true,
        };
        std::fs::write(dir.path().join("setup.py"), "a").unwrap();
        std::fs::write(dir.path().join("mod.py"), "a").unwrap();
        let files = dependency_files(dir.path());
        assert_eq!(files, vec!["setup.py"]);
        let one = dependency_hash(dir.path(), &files, &s, "3.11.7");
        std::fs::write(dir.path().join("mod.py"), "b").unwrap();
        assert_eq!(one, dependency_hash(dir.path(), &files, &s, "3.11.7"));
        assert_ne!(one, dependency_hash(dir.path(), &files, &s, "3.12.1"));
        std::fs::write(dir.path().join("setup.py"), "b").unwrap();
        assert_ne!(one, dependency_hash(dir.path(), &files, &s, "3.11.7"));
    }
}
