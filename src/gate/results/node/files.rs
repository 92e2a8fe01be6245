//! The file of every node test, which Node 20's JUnit file does not name: from the locations printed on
//! stdout ([`Hint`]s), from file-level failures, and otherwise by finding the test file under the checkout
//! whose source holds the test's name.

use super::{file_test, Entry, Hint};
use crate::gate::results::TestStatus;
use std::cmp::Reverse;
use std::collections::HashSet;
use std::path::Path;

fn find_mut<'a>(entries: &'a mut [Entry], pred: &dyn Fn(&Entry) -> bool) -> Option<&'a mut Entry> {
    for entry in entries.iter_mut() {
        if pred(entry) {
            return Some(entry);
        }
        if let Some(found) = find_mut(&mut entry.children, pred) {
            return Some(found);
        }
    }
    None
}

fn find_path_mut<'a>(entries: &'a mut [Entry], path: &[String]) -> Option<&'a mut Entry> {
    let (first, rest) = path.split_first()?;
    let fits = |e: &Entry| &e.name == first && (rest.is_empty() || has_path(&e.children, rest));
    let i = entries
        .iter()
        .position(|e| fits(e) && (!rest.is_empty() || e.file.is_none()))
        .or_else(|| entries.iter().position(fits))?;
    if rest.is_empty() {
        Some(&mut entries[i])
    } else {
        find_path_mut(&mut entries[i].children, rest)
    }
}

fn has_path(entries: &[Entry], path: &[String]) -> bool {
    match path.split_first() {
        None => true,
        Some((first, rest)) => entries
            .iter()
            .any(|e| &e.name == first && has_path(&e.children, rest)),
    }
}

pub(super) fn apply_hints(tree: &mut Vec<Entry>, hints: Vec<Hint>) {
    for hint in hints {
        let found = match &hint.path {
            Some(path) => find_path_mut(tree, path),
            None if hint.fail => {
                let failed_test = |e: &Entry| {
                    e.leaf
                        && e.name == hint.name
                        && e.file.is_none()
                        && e.status == Some(TestStatus::Fail)
                };
                let suite = |e: &Entry| !e.leaf && e.name == hint.name && e.file.is_none();
                if find_mut(tree, &failed_test).is_some() {
                    find_mut(tree, &failed_test)
                } else {
                    find_mut(tree, &suite)
                }
            }
            None => None,
        };
        match found {
            Some(entry) => {
                entry.file.get_or_insert(hint.file);
                if !entry.leaf && hint.fail && hint.own_fail {
                    entry.own_fail = true;
                    entry.status = Some(TestStatus::Fail);
                    if entry.message.is_none() {
                        entry.message = hint.message;
                    }
                }
            }
            // A failure the JUnit file lost: keep it rather than pass silently.
            None if hint.fail => tree.push(Entry {
                name: hint
                    .path
                    .as_ref()
                    .and_then(|p| p.first().cloned())
                    .unwrap_or(hint.name),
                leaf: true,
                status: Some(TestStatus::Fail),
                message: hint.message,
                file: Some(hint.file),
                ..Entry::default()
            }),
            None => {}
        }
    }
}

fn first_file(entry: &Entry) -> Option<&str> {
    entry
        .file
        .as_deref()
        .or_else(|| entry.children.iter().find_map(first_file))
}

/// Test files node 20 finds by default under `root` (`*.test.js`, `test-*.js`, `test/**/*.js`, ...),
/// without `node_modules` and hidden directories; bounded.
fn discover(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize, false)];
    let mut visited = 0usize;
    while let Some((dir, depth, in_test_dir)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for item in read.flatten() {
            visited += 1;
            if visited > 20_000 {
                return found;
            }
            let name = item.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let path = item.path();
            let Ok(kind) = item.file_type() else { continue };
            if kind.is_dir() {
                if depth < 12 {
                    stack.push((path, depth + 1, in_test_dir || name == "test"));
                }
                continue;
            }
            let Some((stem, ext)) = name.rsplit_once('.') else {
                continue;
            };
            if !matches!(ext, "js" | "cjs" | "mjs" | "ts" | "cts" | "mts") {
                continue;
            }
            let named = stem == "test"
                || stem.starts_with("test-")
                || [".test", "-test", "_test"]
                    .iter()
                    .any(|s| stem.ends_with(s));
            if named || in_test_dir {
                if let Ok(rel) = path.strip_prefix(root) {
                    found.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    found
}

/// Whether the source mentions `name` as a string literal.
fn mentions(source: &str, name: &str) -> bool {
    ['\'', '"', '`'].iter().any(|&q| {
        let escaped = name.replace('\\', "\\\\").replace(q, &format!("\\{q}"));
        source.contains(&format!("{q}{escaped}{q}"))
    })
}

/// The file of each top-level entry. Known: a location printed for something inside it, or a
/// file-level test. Otherwise one of the test files whose source holds the top-level name as a string
/// literal, knowing that node reports files one after the other in sorted order: not a file before
/// the current one, not one that already had a top-level test of that name; the current file if it
/// fits, else the file that fits the longest run of the following tests. A name found nowhere (built
/// at run time) stays in the current file.
pub(super) fn assign_files(tree: &[Entry], root: &Path) -> Vec<Option<String>> {
    let known: Vec<Option<String>> = tree
        .iter()
        .map(|e| file_test(&e.name, root).or_else(|| first_file(e).map(str::to_string)))
        .collect();
    if known.iter().all(Option::is_some) {
        return known;
    }
    let mut files = discover(root);
    files.extend(known.iter().flatten().cloned());
    files.sort();
    files.dedup();
    let sources: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
        .collect();
    let index_of = |file: &str| files.binary_search_by(|f| f.as_str().cmp(file)).ok();
    let fixed: Vec<Option<usize>> = known
        .iter()
        .map(|k| k.as_deref().and_then(index_of))
        .collect();
    // The files whose source holds each top-level name (for the entries whose file is unknown).
    let holders: Vec<Vec<usize>> = tree
        .iter()
        .zip(&fixed)
        .map(|(entry, fixed)| match fixed {
            Some(_) => Vec::new(),
            None => (0..files.len())
                .filter(|&f| mentions(&sources[f], &entry.name))
                .collect(),
        })
        .collect();
    // How many entries from `i` on can sit together in file `f` (a name found nowhere fits anywhere).
    let run = |i: usize, f: usize| -> usize {
        let mut names = HashSet::new();
        let mut count = 0;
        for (j, entry) in tree.iter().enumerate().skip(i) {
            let fits = match fixed[j] {
                Some(g) => g == f,
                None => holders[j].is_empty() || holders[j].contains(&f),
            };
            if !fits || !names.insert(entry.name.as_str()) {
                break;
            }
            count += 1;
        }
        count
    };
    let mut chosen = fixed.clone();
    let mut used: HashSet<(usize, &str)> = HashSet::new();
    let mut current: Option<usize> = None;
    for (i, entry) in tree.iter().enumerate() {
        if let Some(f) = chosen[i] {
            current = Some(f);
            used.insert((f, &entry.name));
            continue;
        }
        let mut cands: Vec<usize> = holders[i]
            .iter()
            .copied()
            .filter(|f| !used.contains(&(*f, entry.name.as_str())))
            .collect();
        if let Some(cur) = current {
            let later: Vec<usize> = cands.iter().copied().filter(|&f| f >= cur).collect();
            if !later.is_empty() {
                cands = later;
            }
        }
        // The current file first, then the one that holds the longest run of the tests that follow,
        // then the first in node's order.
        let pick = match cands
            .iter()
            .copied()
            .max_by_key(|&f| (Some(f) == current, run(i, f), Reverse(f)))
        {
            Some(f) => Some(f),
            None => current.or_else(|| chosen[i + 1..].iter().flatten().next().copied()),
        };
        chosen[i] = pick;
        if let Some(f) = pick {
            current = Some(f);
            used.insert((f, &entry.name));
        }
    }
    chosen
        .into_iter()
        .zip(known)
        .map(|(c, k)| k.or_else(|| c.map(|f| files[f].clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use crate::gate::results::test_support::*;
    use crate::gate::results::*;
    use std::path::Path;
    use TestStatus::Pass;

    #[test]
    fn node_junit_with_spec_output_puts_each_test_under_its_file() {
        let results = node(
            include_str!("../../../../tests/data/testresults/node_spec_stdout.txt"),
            Some(include_str!(
                "../../../../tests/data/testresults/node_spec_junit.xml"
            )),
        );
        assert_eq!(statuses(&results), node_statuses());
        assert_eq!(
            results
                .iter()
                .find(|r| r.id == "test/math.test.js::adds")
                .and_then(|r| r.duration_ms),
            Some(1)
        );
        assert_eq!(
            message_of(&results, "test/math.test.js::Calculator > division > throws on zero?"),
            format!(
                "Error [ERR_TEST_FAILURE]: division exploded\nsecond line\n    at async Promise.all (index 0) {{\n  \
                 code: 'ERR_TEST_FAILURE',\n  failureType: 'testCodeFailure',\n  cause: Error: division exploded\n  \
                 second line\n      at TestContext.<anonymous> ({}/test/math.test.js:26:13)\n      \
                 at async Promise.all (index 0)\n}}",
                node_root().display()
            )
        );
    }

    #[test]
    fn node_test_name_found_in_two_files_goes_to_the_file_holding_its_neighbours() {
        // A rerun of `adds` in test/other.test.mjs only; test/math.test.js has an `adds` too.
        let junit =
            include_str!("../../../../tests/data/testresults/node_selected_one_file_junit.xml");
        assert_eq!(
            run(Runner::Node, "", Some(junit), &node_root()),
            vec![result("test/other.test.mjs::adds", Pass, Some(2), None)]
        );
    }

    #[test]
    fn node_tests_whose_file_cannot_be_found_get_an_empty_file() {
        let junit =
            "<testsuites><testcase name=\"only\" time=\"0.002\" classname=\"test\"/></testsuites>";
        assert_eq!(
            run(Runner::Node, "", Some(junit), Path::new("/nonexistent")),
            vec![result("::only", Pass, Some(2), None)]
        );
        assert_eq!(
            run(Runner::Node, "✔ only (1ms)\n", None, Path::new(".")),
            vec![]
        );
    }
}
