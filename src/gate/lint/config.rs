//! Whether a repository configures a tool: a step with `if_configured` runs only when one of its signs holds
//! in the tree, and is skipped "not configured in this repository" otherwise.
//!
//! A formatter or linter the project never asked for judges the change by someone else's style: ruff's
//! defaults on a project that uses flake8, or none at all, flag code the maintainers accept. The signs are a
//! config file (`ruff.toml`), a table in a shared one (`[tool.ruff]` in `pyproject.toml`), or the tool among
//! the project's declared dependencies (`pyproject.toml`'s dependency lists and groups, Poetry's and PDM's
//! dev dependencies, `requirements*.txt`, `setup.cfg` extras, a pre-commit hook).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One sign that the repository configures a tool.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Sign {
    /// `{ file = "pyproject.toml", table = "tool.ruff" }`: the file has this (dotted) TOML table.
    Table(TableSign),
    /// `{ file = "ruff.toml" }`: the file exists at the root.
    File(FileSign),
    /// `{ dependency = "ruff" }`: the project declares it as a dependency (dev dependencies included).
    Dependency(DependencySign),
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TableSign {
    pub file: String,
    pub table: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileSign {
    pub file: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DependencySign {
    pub dependency: String,
}

impl Sign {
    /// Whether the sign holds in the tree at `room`.
    pub fn holds(&self, room: &Path) -> bool {
        match self {
            Sign::File(s) => room.join(&s.file).is_file(),
            Sign::Table(s) => has_table(room, &s.file, &s.table),
            Sign::Dependency(s) => declares(room, &s.dependency),
        }
    }

    fn describe(&self) -> String {
        match self {
            Sign::File(s) => s.file.clone(),
            Sign::Table(s) => format!("[{}] in {}", s.table, s.file),
            Sign::Dependency(s) => format!("{} among the dependencies", s.dependency),
        }
    }
}

/// The skip note of a step whose signs all fail, None when it has none or one holds.
pub fn not_configured(signs: &[Sign], room: &Path) -> Option<String> {
    if signs.is_empty() || signs.iter().any(|s| s.holds(room)) {
        return None;
    }
    let what: Vec<String> = signs.iter().map(Sign::describe).collect();
    let listed = match what.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => what.join(""),
    };
    Some(format!("not configured in this repository (no {listed})"))
}

/// Whether `file` (TOML) has the dotted `table`; a file that does not parse is searched for the header.
fn has_table(room: &Path, file: &str, table: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(room.join(file)) else {
        return false;
    };
    match text.parse::<toml::Table>() {
        Ok(doc) => {
            let mut at: Option<&toml::Value> = None;
            for (i, key) in table.split('.').enumerate() {
                at = if i == 0 {
                    doc.get(key)
                } else {
                    at.and_then(|v| v.get(key))
                };
            }
            at.is_some_and(toml::Value::is_table)
        }
        Err(_) => text.contains(&format!("[{table}")),
    }
}

/// Whether the project at `room` declares the package `name` anywhere it lists dependencies.
pub fn declares(room: &Path, name: &str) -> bool {
    let want = normalize(name);
    let hit = |names: Vec<String>| names.contains(&want);
    if let Ok(text) = std::fs::read_to_string(room.join("pyproject.toml")) {
        if let Ok(doc) = text.parse::<toml::Table>() {
            let mut names = Vec::new();
            for (key, value) in &doc {
                pyproject_names(key, value, false, &mut names);
            }
            if hit(names) {
                return true;
            }
        }
    }
    for file in requirement_files(room) {
        if let Ok(text) = std::fs::read_to_string(&file) {
            if hit(text.lines().filter_map(requirement_name).collect()) {
                return true;
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(room.join("setup.cfg")) {
        if hit(setup_cfg_names(&text)) {
            return true;
        }
    }
    if let Ok(text) = std::fs::read_to_string(room.join(".pre-commit-config.yaml")) {
        let hook = text.lines().any(|l| {
            let l = l.trim().trim_start_matches("- ").trim();
            l.strip_prefix("id:")
                .is_some_and(|id| normalize(id.trim()) == want)
        });
        if hook || text.contains(&format!("/{name}-pre-commit")) {
            return true;
        }
    }
    false
}

/// Package names under any key of `pyproject.toml` that lists dependencies: `dependencies`,
/// `optional-dependencies`, `dev-dependencies`, `dependency-groups` (their strings), and Poetry's tables of
/// them (their keys).
fn pyproject_names(key: &str, value: &toml::Value, inside: bool, out: &mut Vec<String>) {
    let inside = inside || key.contains("dependencies") || key == "dependency-groups";
    match value {
        toml::Value::String(s) if inside => out.extend(requirement_name(s)),
        toml::Value::Array(items) => {
            for v in items {
                pyproject_names(key, v, inside, out);
            }
        }
        toml::Value::Table(t) => {
            for (k, v) in t {
                if inside && key.contains("dependencies") {
                    out.push(normalize(k));
                }
                pyproject_names(k, v, inside, out);
            }
        }
        _ => {}
    }
}

/// `requirements*.txt`-like files at the root, and the files of a `requirements/` directory.
fn requirement_files(room: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let listed = |dir: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    for p in listed(room) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if name.contains("requirements") && (name.ends_with(".txt") || name.ends_with(".in")) {
            out.push(p);
        }
    }
    out.extend(
        listed(&room.join("requirements"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "txt" || e == "in")),
    );
    out.sort();
    out
}

/// Names in `setup.cfg`'s `[options.extras_require]` and in its `install_requires` and `tests_require`.
fn setup_cfg_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut in_list = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_owned();
            in_list = false;
            continue;
        }
        let continued = line.starts_with([' ', '\t']);
        let value = match t.split_once('=') {
            Some((k, v)) if !continued => {
                let k = k.trim();
                in_list = section == "[options.extras_require]"
                    || (section == "[options]"
                        && matches!(k, "install_requires" | "tests_require"));
                v
            }
            _ if continued => t,
            _ => {
                in_list = false;
                continue;
            }
        };
        if in_list {
            out.extend(value.split([',', ';']).filter_map(requirement_name));
        }
    }
    out
}

/// The package a requirement line names (`ruff>=0.4 ; python_version > "3.8"` is `ruff`), normalised.
fn requirement_name(line: &str) -> Option<String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with(['#', '-']) {
        return None;
    }
    let name: String = t
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    (!name.is_empty()).then(|| normalize(&name))
}

/// A package name as PEP 503 compares them: lower case, runs of `-`, `_` and `.` as one `-`.
fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (f, text) in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// The ruff signs of the Python preset.
    fn ruff() -> Vec<Sign> {
        toml::from_str::<toml::Table>(
            "s = [{ file = \"ruff.toml\" }, { file = \".ruff.toml\" }, { file = \"pyproject.toml\", table = \"tool.ruff\" }, { dependency = \"ruff\" }]",
        )
        .unwrap()["s"]
            .clone()
            .try_into()
            .unwrap()
    }

    #[test]
    fn signs_read_from_toml_as_the_three_shapes_and_print_back() {
        let signs = ruff();
        assert!(matches!(signs[0], Sign::File(_)));
        assert!(matches!(signs[2], Sign::Table(_)));
        assert!(matches!(signs[3], Sign::Dependency(_)));
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct S {
            s: Vec<Sign>,
        }
        let printed = toml::to_string(&S { s: signs.clone() }).unwrap();
        assert_eq!(toml::from_str::<S>(&printed).unwrap(), S { s: signs });
        assert!(toml::from_str::<S>("s = [{ fil = \"x\" }]").is_err());
    }

    #[test]
    fn a_project_without_any_sign_is_not_configured_and_the_note_says_what_was_looked_for() {
        let dir = tree(&[(
            "pyproject.toml",
            "[project]\nname = \"x\"\ndependencies = [\"requests\"]\n",
        )]);
        assert_eq!(
            not_configured(&ruff(), dir.path()).as_deref(),
            Some("not configured in this repository (no ruff.toml, .ruff.toml, [tool.ruff] in pyproject.toml or ruff among the dependencies)")
        );
        assert_eq!(not_configured(&[], dir.path()), None);
    }

    #[test]
    fn a_config_file_or_table_configures_it() {
        for files in [
            vec![("ruff.toml", "")],
            vec![(".ruff.toml", "line-length = 100\n")],
            vec![("pyproject.toml", "[tool.ruff]\n")],
            vec![("pyproject.toml", "[tool.ruff.lint]\nselect = [\"E\"]\n")],
            // Not TOML at all: the header is enough.
            vec![("pyproject.toml", "[tool.ruff]\nthis is = = broken\n")],
        ] {
            let dir = tree(&files);
            assert_eq!(not_configured(&ruff(), dir.path()), None, "{files:?}");
        }
        let dir = tree(&[("pyproject.toml", "[tool.black]\n# ruff some day\n")]);
        assert!(not_configured(&ruff(), dir.path()).is_some());
    }

    #[test]
    fn a_declared_dependency_configures_it_wherever_the_project_lists_them() {
        for files in [
            vec![("pyproject.toml", "[dependency-groups]\ndev = [\"pytest\", \"ruff>=0.4\"]\n")],
            vec![("pyproject.toml", "[project.optional-dependencies]\nlint = [\"Ruff==0.5 ; python_version>'3.8'\"]\n")],
            vec![("pyproject.toml", "[tool.poetry.group.dev.dependencies]\nruff = \"^0.4\"\n")],
            vec![("pyproject.toml", "[tool.poetry.dev-dependencies]\nruff = { version = \"*\" }\n")],
            vec![("pyproject.toml", "[tool.pdm.dev-dependencies]\nlint = [\"ruff\"]\n")],
            vec![("requirements-dev.txt", "# tools\n-r requirements.txt\nruff==0.4.4\n")],
            vec![("requirements/lint.txt", "ruff\n")],
            vec![("setup.cfg", "[options.extras_require]\ndev =\n    pytest\n    ruff>=0.1\n")],
            vec![(".pre-commit-config.yaml", "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    hooks:\n      - id: ruff\n")],
        ] {
            let dir = tree(&files);
            assert!(declares(dir.path(), "ruff"), "{files:?}");
        }
        for files in [
            vec![(
                "pyproject.toml",
                "[project]\nname = \"ruff-helpers\"\ndescription = \"uses ruff\"\n",
            )],
            vec![("requirements.txt", "ruffus\n")],
            vec![("setup.cfg", "[metadata]\nname = ruff\n")],
        ] {
            let dir = tree(&files);
            assert!(!declares(dir.path(), "ruff"), "{files:?}");
        }
    }

    #[test]
    fn requirement_names_are_compared_normalised() {
        assert_eq!(
            requirement_name("Ruff_Lint.x >= 1").as_deref(),
            Some("ruff-lint-x")
        );
        assert_eq!(requirement_name("  # comment"), None);
        assert_eq!(requirement_name("-e ."), None);
        assert_eq!(normalize("a__b.-c"), "a-b-c");
    }
}
