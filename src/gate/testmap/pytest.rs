//! What pytest collects: its discovery settings (`python_files`, `testpaths`, `norecursedirs`) as the
//! repository configures them (`pytest.ini`, `.pytest.ini`, `pyproject.toml`, `tox.ini`, `setup.cfg`, the
//! first that has a pytest section, as pytest looks for them) and the paths a test command names.
//!
//! Two questions depend on them: is a changed Python file under the test paths a test module or a helper
//! (a helper selects the tests that import it), and does pytest collect a new test file at all.

use globset::{Glob, GlobMatcher};

use super::sources::Sources;

const DEFAULT_FILES: &[&str] = &["test_*.py", "*_test.py"];
const DEFAULT_NORECURSE: &[&str] = &[
    "*.egg",
    ".*",
    "_darcs",
    "build",
    "CVS",
    "dist",
    "node_modules",
    "venv",
    "{arch}",
];

/// pytest's discovery settings for a repository.
#[derive(Clone, Debug)]
pub struct PytestConfig {
    python_files: Vec<String>,
    testpaths: Vec<String>,
    norecursedirs: Vec<String>,
}

impl Default for PytestConfig {
    fn default() -> Self {
        PytestConfig {
            python_files: DEFAULT_FILES.iter().map(|s| s.to_string()).collect(),
            testpaths: Vec::new(),
            norecursedirs: DEFAULT_NORECURSE.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The values of a pytest setting: a TOML string or list, or an INI value split on whitespace.
type Settings = Vec<(String, Vec<String>)>;

impl PytestConfig {
    /// The settings of the first configuration file pytest would use, at the repository root.
    pub fn read(tree: &dyn Sources) -> PytestConfig {
        let found = ["pytest.ini", ".pytest.ini"]
            .iter()
            .find_map(|f| tree.text(f).and_then(|t| ini_section(&t, "pytest")))
            .or_else(|| tree.text("pyproject.toml").and_then(|t| toml_section(&t)))
            .or_else(|| tree.text("tox.ini").and_then(|t| ini_section(&t, "pytest")))
            .or_else(|| {
                tree.text("setup.cfg")
                    .and_then(|t| ini_section(&t, "tool:pytest"))
            });
        let mut config = PytestConfig::default();
        for (key, values) in found.unwrap_or_default() {
            match key.as_str() {
                "python_files" if !values.is_empty() => config.python_files = values,
                "testpaths" => config.testpaths = values,
                "norecursedirs" if !values.is_empty() => config.norecursedirs = values,
                _ => {}
            }
        }
        config
    }

    /// Whether a file's name matches `python_files`: a test module, not a helper.
    pub fn is_test_module(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.python_files.iter().any(|p| {
            let subject = if p.contains('/') { path } else { name };
            matcher(p).is_some_and(|m| m.is_match(subject))
        })
    }

    /// Why pytest run with `args` (the paths the test command names; none for its default) does not
    /// collect the module at `path`, or None when it does.
    pub fn not_collected(&self, path: &str, args: &[String]) -> Option<String> {
        if args.iter().any(|a| a == path) {
            return None;
        }
        let (roots, what) = if !args.is_empty() {
            (args.to_vec(), "the paths the test command names")
        } else if !self.testpaths.is_empty() {
            (self.testpaths.clone(), "testpaths")
        } else {
            (vec![String::new()], "")
        };
        let Some(root) = roots.iter().find(|r| {
            let r = r.trim_end_matches('/');
            r.is_empty() || r == "." || path.starts_with(&format!("{r}/"))
        }) else {
            return Some(format!("outside {what} ({})", roots.join(" ")));
        };
        let root = root.trim_end_matches('/');
        let below = if root.is_empty() || root == "." {
            path
        } else {
            &path[root.len() + 1..]
        };
        let dirs: Vec<&str> = below.split('/').collect();
        for dir in &dirs[..dirs.len().saturating_sub(1)] {
            if self
                .norecursedirs
                .iter()
                .any(|p| matcher(p).is_some_and(|m| m.is_match(dir)))
            {
                return Some(format!(
                    "in a directory pytest does not enter (`{dir}` matches norecursedirs {})",
                    self.norecursedirs.join(" ")
                ));
            }
        }
        if !self.is_test_module(path) {
            return Some(format!(
                "its name does not match python_files ({})",
                self.python_files.join(" ")
            ));
        }
        None
    }
}

fn matcher(pattern: &str) -> Option<GlobMatcher> {
    Glob::new(pattern).ok().map(|g| g.compile_matcher())
}

/// The settings of an INI section (`[pytest]`, `[tool:pytest]`), continuation lines included; None when the
/// file has no such section.
fn ini_section(text: &str, name: &str) -> Option<Settings> {
    let mut out: Settings = Vec::new();
    let mut inside = false;
    let mut found = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            inside = trimmed[1..trimmed.len() - 1].trim() == name;
            found |= inside;
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some((_, values)) = out.last_mut() {
                values.extend(trimmed.split_whitespace().map(str::to_owned));
            }
            continue;
        }
        if let Some((key, value)) = trimmed.split_once(['=', ':']) {
            out.push((
                key.trim().to_owned(),
                value.split_whitespace().map(str::to_owned).collect(),
            ));
        }
    }
    found.then_some(out)
}

/// `[tool.pytest.ini_options]` (or pytest 9's `[tool.pytest]`) of a pyproject.toml.
fn toml_section(text: &str) -> Option<Settings> {
    let value: toml::Value = toml::from_str(text).ok()?;
    let pytest = value.get("tool")?.get("pytest")?;
    let table = pytest.get("ini_options").unwrap_or(pytest).as_table()?;
    Some(
        table
            .iter()
            .map(|(k, v)| {
                let values = match v {
                    toml::Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
                    toml::Value::Array(a) => a
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                (k.clone(), values)
            })
            .collect(),
    )
}

/// The paths a pytest command line names (positional arguments that are files or directories of the tree).
pub fn command_paths(argv: &[String], tree: &dyn Sources) -> Vec<String> {
    let Some(at) = argv.iter().position(|a| {
        a == "pytest" || a == "py.test" || a.ends_with("/pytest") || a.ends_with("/py.test")
    }) else {
        return Vec::new();
    };
    let paths = tree.paths();
    argv[at + 1..]
        .iter()
        .filter(|a| !a.starts_with('-') && !a.contains('{'))
        .map(|a| a.trim_start_matches("./").trim_end_matches('/').to_owned())
        .filter(|a| {
            !a.is_empty()
                && paths
                    .iter()
                    .any(|p| p == a || p.starts_with(&format!("{a}/")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn defaults_collect_test_modules_anywhere_except_hidden_and_build_dirs() {
        let c = PytestConfig::read(&tree(&[]));
        assert!(c.is_test_module("tests/test_a.py"));
        assert!(c.is_test_module("pkg/a_test.py"));
        assert!(!c.is_test_module("tests/helpers.py"));
        assert_eq!(c.not_collected("tests/test_a.py", &[]), None);
        assert_eq!(
            c.not_collected("tests/check_a.py", &[]),
            Some("its name does not match python_files (test_*.py *_test.py)".into())
        );
        assert_eq!(
            c.not_collected("build/test_a.py", &[]),
            Some("in a directory pytest does not enter (`build` matches norecursedirs *.egg .* _darcs build CVS dist node_modules venv {arch})".into())
        );
    }

    #[test]
    fn settings_come_from_the_first_file_pytest_reads() {
        let c = PytestConfig::read(&tree(&[
            ("setup.cfg", "[tool:pytest]\npython_files = nope_*.py\n"),
            (
                "pyproject.toml",
                "[tool.pytest.ini_options]\npython_files = [\"check_*.py\"]\ntestpaths = [\"tests\"]\n",
            ),
        ]));
        assert!(c.is_test_module("tests/check_a.py"));
        assert!(!c.is_test_module("tests/test_a.py"));
        assert_eq!(
            c.not_collected("other/check_a.py", &[]),
            Some("outside testpaths (tests)".into())
        );
        let ini = PytestConfig::read(&tree(&[
            (
                "pytest.ini",
                "[pytest]\npython_files =\n    t_*.py\n    *_t.py\ntestpaths = src tests\n",
            ),
            (
                "pyproject.toml",
                "[tool.pytest.ini_options]\npython_files = [\"check_*.py\"]\n",
            ),
        ]));
        assert!(ini.is_test_module("x/a_t.py"));
        assert_eq!(ini.not_collected("src/t_a.py", &[]), None);
    }

    #[test]
    fn paths_on_the_command_line_replace_testpaths() {
        let files = tree(&[("tests/unit/test_a.py", ""), ("tests/it/test_b.py", "")]);
        let argv: Vec<String> = [
            "python3",
            "-m",
            "pytest",
            "-q",
            "tests/unit",
            "--junitxml={junit}",
        ]
        .map(String::from)
        .to_vec();
        let args = command_paths(&argv, &files);
        assert_eq!(args, vec!["tests/unit".to_string()]);
        let c = PytestConfig::default();
        assert_eq!(c.not_collected("tests/unit/test_a.py", &args), None);
        assert_eq!(
            c.not_collected("tests/it/test_b.py", &args),
            Some("outside the paths the test command names (tests/unit)".into())
        );
    }
}
