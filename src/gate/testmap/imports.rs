//! Which Python modules import a changed helper module, directly or through other modules.
//!
//! A test helper (`tests/helpers.py`, `tests/utils/factories.py`) holds no tests, so no test is changed when
//! it changes; the tests that use it are the ones that import it. Imports are read with the grammar
//! ([`crate::gate::syntax::python_imports`]) and resolved the way pytest's default import mode finds them:
//! `import helpers` from any directory above the importing file (pytest puts a test's first directory
//! without `__init__.py` on `sys.path`, and the repository root or `src/` is there by configuration),
//! `from tests.helpers import x`, `from tests import helpers`, and relative imports (`from .helpers import x`,
//! `from . import helpers`) against the importing file's package. Dynamic imports are not seen.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::gate::syntax::{python_imports, Import};

use super::sources::Sources;

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_owned()
    } else {
        format!("{dir}/{rest}")
    }
}

/// The directories a module name can be found under for a file in `dir`: `dir` and every directory above
/// it, and `src/`.
fn roots(dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut d = dir.to_owned();
    loop {
        out.push(d.clone());
        if d.is_empty() {
            break;
        }
        d = parent(&d).to_owned();
    }
    out.push("src".into());
    out
}

/// The files an import in `file` may load: the module, its packages' `__init__.py` files, and for
/// `from M import name` the submodule `M.name`.
fn candidates(file: &str, import: &Import) -> Vec<String> {
    let dots = import.module.chars().take_while(|c| *c == '.').count();
    let module = &import.module[dots..];
    let bases: Vec<String> = if dots > 0 {
        let mut d = parent(file).to_owned();
        for _ in 1..dots {
            d = parent(&d).to_owned();
        }
        vec![d]
    } else {
        roots(parent(file))
    };
    let parts: Vec<&str> = module.split('.').filter(|p| !p.is_empty()).collect();
    let mut out = Vec::new();
    for base in &bases {
        let mut dir = base.clone();
        for (i, part) in parts.iter().enumerate() {
            if i + 1 < parts.len() {
                dir = join(&dir, part);
                out.push(join(&dir, "__init__.py"));
            } else {
                out.push(join(&dir, &format!("{part}.py")));
                dir = join(&dir, part);
                out.push(join(&dir, "__init__.py"));
            }
        }
        for name in &import.names {
            out.push(join(&dir, &format!("{name}.py")));
            out.push(join(&join(&dir, name), "__init__.py"));
        }
    }
    out
}

/// The Python files of the tree that import `helper`, directly or through modules that do.
pub(super) fn importers(helper: &str, tree: &dyn Sources) -> BTreeSet<String> {
    let files: BTreeSet<String> = tree
        .paths()
        .into_iter()
        .filter(|p| p.ends_with(".py"))
        .collect();
    // Who imports whom, over the whole tree: imported file -> importing files.
    let mut imported_by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(imports) = tree.text(file).and_then(|t| python_imports(&t)) else {
            continue;
        };
        for import in &imports {
            for target in candidates(file, import) {
                if target != *file && files.contains(&target) {
                    imported_by.entry(target).or_default().insert(file.clone());
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([helper.to_owned()]);
    while let Some(module) = queue.pop_front() {
        for importer in imported_by.get(&module).into_iter().flatten() {
            if seen.insert(importer.clone()) {
                queue.push_back(importer.clone());
            }
        }
    }
    seen.remove(helper);
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn every_import_form_of_a_helper_is_resolved_and_others_are_not() {
        let t = tree(&[
            ("tests/helpers.py", "def make():\n    return 1\n"),
            ("tests/test_plain.py", "import helpers\n"),
            ("tests/test_dotted.py", "from tests.helpers import make\n"),
            ("tests/test_from_pkg.py", "from tests import helpers\n"),
            ("tests/sub/test_relative.py", "from ..helpers import make\n"),
            ("tests/test_dot.py", "from . import helpers\n"),
            (
                "tests/test_inner.py",
                "def test_x():\n    from .helpers import make\n",
            ),
            (
                "tests/test_other.py",
                "import os\nfrom calc import helpers_x\n",
            ),
            ("other/test_far.py", "import helpers\n"),
        ]);
        assert_eq!(
            importers("tests/helpers.py", &t),
            [
                "tests/sub/test_relative.py",
                "tests/test_dot.py",
                "tests/test_dotted.py",
                "tests/test_from_pkg.py",
                "tests/test_inner.py",
                "tests/test_plain.py",
            ]
            .map(String::from)
            .into_iter()
            .collect()
        );
    }

    #[test]
    fn tests_importing_a_module_that_imports_the_helper_are_found() {
        let t = tree(&[
            ("tests/base.py", "x = 1\n"),
            ("tests/factories.py", "from tests.base import x\n"),
            ("tests/test_a.py", "from tests.factories import *\n"),
            ("tests/test_b.py", "import json\n"),
        ]);
        assert_eq!(
            importers("tests/base.py", &t),
            ["tests/factories.py", "tests/test_a.py"]
                .map(String::from)
                .into_iter()
                .collect()
        );
    }
}
