//! Hunk-level split of one changed file into its test part and its production part.
//!
//! The bite check reverts the production part of a change while keeping its tests. In languages with inline
//! tests (Rust's `#[cfg(test)] mod tests`, `#[test] fn` next to the code) reverting a whole file would revert
//! the new test as well, so each hunk of the file's diff is classified on its own.
//!
//! Which lines are test code is a language's business, behind the [`TestRegions`] trait (Rust's finder,
//! [`RustRegions`], parses the file and lives in `rust.rs`, which also lists a Rust file's test functions for
//! the rest of the gate: [`rust_test_functions`]); this module only splits a change by those lines.
//!
//! How a change is split:
//! - every line of both sides is classified as test (inside a test region), neutral (outside, holding no
//!   code: blank or comment-only) or production;
//! - the two sides are diffed line by line, where a line only matches a line of the same class, so a hunk
//!   never slides across a test-region boundary (a `}` closing a production function never pairs with the
//!   `}` of a new test after it);
//! - a hunk touching only test (and neutral) lines is kept, one touching only production (and neutral) lines
//!   is reverted, one touching only neutral lines is kept without counting as either;
//! - a hunk touching both is cut at the class boundaries when the cut is unambiguous, and otherwise reverted
//!   whole, as production, and reported.

use std::ops::{Range, RangeInclusive};

use similar::{Algorithm, DiffTag};

mod rust;

pub use rust::{rust_test_functions, rust_tokens, RustRegions, RustTestFn, RustToken};

/// Finds the regions of a source file that are test code.
pub trait TestRegions {
    /// 1-based inclusive line ranges of test code, or None if the source cannot be parsed.
    fn test_regions(&self, source: &str) -> Option<Vec<RangeInclusive<usize>>>;

    /// For each line (index 0 is line 1), whether it holds code. A change confined to lines without code
    /// (blank or comment-only lines outside test regions) counts as neither test nor production. None if the
    /// source cannot be parsed. The default treats whitespace-only lines as the only lines without code.
    fn code_lines(&self, source: &str) -> Option<Vec<bool>> {
        Some(
            source
                .split_inclusive('\n')
                .map(|line| !line.trim().is_empty())
                .collect(),
        )
    }
}

static RUST: RustRegions = RustRegions;

/// Which regions finder applies to a path (by extension), None for languages without inline tests.
pub fn regions_for(path: &str) -> Option<&'static dyn TestRegions> {
    let extension = std::path::Path::new(path).extension()?.to_str()?;
    if extension.eq_ignore_ascii_case("rs") {
        Some(&RUST)
    } else {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// At least one change touches test code.
    pub test_changed: bool,
    /// At least one change touches production code.
    pub production_changed: bool,
    /// The old text with only the test changes applied (production changes left out).
    pub test_only: String,
    /// Human-readable summary, e.g. "2 test hunks kept, 1 production hunk reverted".
    pub summary: String,
}

/// What a line is: the order matters only to make it a diff key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Class {
    Test,
    Production,
    /// Outside test regions, holding no code.
    Neutral,
}

/// One side of the change, split into lines that keep their line ends.
struct Side<'a> {
    lines: Vec<&'a str>,
    classes: Vec<Class>,
    /// The first line end of the text, if any.
    eol: Option<&'static str>,
}

impl<'a> Side<'a> {
    fn new(finder: &dyn TestRegions, text: &'a str) -> Option<Self> {
        let regions = finder.test_regions(text)?;
        let code = finder.code_lines(text)?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let classes = (0..lines.len())
            .map(|index| {
                let number = index + 1;
                if regions.iter().any(|region| region.contains(&number)) {
                    Class::Test
                } else if code.get(index).copied().unwrap_or(true) {
                    Class::Production
                } else {
                    Class::Neutral
                }
            })
            .collect();
        let eol = lines.first().and_then(|line| {
            if line.ends_with("\r\n") {
                Some("\r\n")
            } else if line.ends_with('\n') {
                Some("\n")
            } else {
                None
            }
        });
        Some(Self {
            lines,
            classes,
            eol,
        })
    }

    /// Diff keys: a line matches only a line of the same class, and a last line without a line end matches
    /// the same line with one (adding or dropping the final newline alone is no change).
    fn keys(&self) -> Vec<(Class, &'a str, &'a str)> {
        let eol = self.eol.unwrap_or("\n");
        self.lines
            .iter()
            .zip(&self.classes)
            .map(|(line, class)| {
                let body = line
                    .strip_suffix('\n')
                    .map_or(*line, |body| body.strip_suffix('\r').unwrap_or(body));
                let end = &line[body.len()..];
                (*class, body, if end.is_empty() { eol } else { end })
            })
            .collect()
    }
}

/// A run of lines of one class within a hunk side; neutral lines join the run after them (or the one before
/// them at the end of the side).
#[derive(Debug, Clone)]
struct Run {
    class: Class,
    lines: Range<usize>,
}

fn runs(classes: &[Class], lines: Range<usize>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut neutral_start: Option<usize> = None;
    for index in lines.clone() {
        let class = classes.get(index).copied().unwrap_or(Class::Production);
        if class == Class::Neutral {
            neutral_start.get_or_insert(index);
            continue;
        }
        match runs.last_mut() {
            Some(last) if last.class == class => last.lines.end = index + 1,
            _ => runs.push(Run {
                class,
                lines: neutral_start.unwrap_or(index)..index + 1,
            }),
        }
        neutral_start = None;
    }
    if let Some(start) = neutral_start {
        match runs.last_mut() {
            Some(last) => last.lines.end = lines.end,
            None => runs.push(Run {
                class: Class::Neutral,
                lines: start..lines.end,
            }),
        }
    }
    runs
}

/// A step of an alignment of the old runs of a hunk with its new runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Pair(usize, usize),
    Old(usize),
    New(usize),
}

/// Aligns two class sequences on a longest common subsequence. `eager` takes matches as early as possible
/// and, between matches, old runs before new ones; otherwise matches come as late as possible and new runs
/// before old ones. When both extremes give the same text the cut is unambiguous.
fn align(old: &[Class], new: &[Class], eager: bool) -> Vec<Step> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut steps = Vec::with_capacity(n + m);
    while i < n || j < m {
        let can_pair = i < n && j < m && old[i] == new[j] && lcs[i][j] == lcs[i + 1][j + 1] + 1;
        let can_skip_old = i < n && lcs[i + 1][j] == lcs[i][j];
        let can_skip_new = j < m && lcs[i][j + 1] == lcs[i][j];
        let step = if eager {
            if can_pair {
                Step::Pair(i, j)
            } else if can_skip_old {
                Step::Old(i)
            } else {
                Step::New(j)
            }
        } else if can_skip_new {
            Step::New(j)
        } else if can_skip_old {
            Step::Old(i)
        } else {
            Step::Pair(i, j)
        };
        match step {
            Step::Pair(..) => {
                i += 1;
                j += 1;
            }
            Step::Old(_) => i += 1,
            Step::New(_) => j += 1,
        }
        steps.push(step);
    }
    steps
}

/// Which lines an alignment puts into the test-only text: old production lines stay, new test lines come in.
fn kept_lines(steps: &[Step], old: &[Run], new: &[Run]) -> Vec<(bool, Range<usize>)> {
    let old_run = |i: usize| old.get(i).map(|run| (run.class, run.lines.clone()));
    let new_run = |j: usize| new.get(j).map(|run| (run.class, run.lines.clone()));
    steps
        .iter()
        .filter_map(|step| match *step {
            Step::Pair(i, j) => match old_run(i)? {
                (Class::Test, _) => Some((false, new_run(j)?.1)),
                (_, lines) => Some((true, lines)),
            },
            Step::Old(i) => match old_run(i)? {
                (Class::Test, _) => None,
                (_, lines) => Some((true, lines)),
            },
            Step::New(j) => match new_run(j)? {
                (Class::Test, lines) => Some((false, lines)),
                _ => None,
            },
        })
        .collect()
}

#[derive(Debug, Default)]
struct Counts {
    test: usize,
    production: usize,
    neutral: usize,
    mixed: usize,
    split: usize,
}

impl Counts {
    fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.test > 0 {
            parts.push(format!(
                "{} kept",
                plural(self.test, "test hunk", "test hunks")
            ));
        }
        if self.production > 0 {
            parts.push(format!(
                "{} reverted",
                plural(self.production, "production hunk", "production hunks")
            ));
        }
        if self.mixed > 0 {
            parts.push(format!(
                "{} reverted as production (test and production lines without a clean cut)",
                plural(self.mixed, "mixed hunk", "mixed hunks")
            ));
        }
        if self.neutral > 0 {
            parts.push(format!(
                "{} kept",
                plural(self.neutral, "blank/comment hunk", "blank/comment hunks")
            ));
        }
        let mut summary = if parts.is_empty() {
            "no changes".to_owned()
        } else {
            parts.join(", ")
        };
        if self.split > 0 {
            summary.push_str(&format!(
                "; {} at a test-code boundary",
                plural(self.split, "hunk split", "hunks split")
            ));
        }
        summary
    }
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Splits the change old -> new of one file. A change (a hunk of a line diff: an insert, delete or replace) is
/// test code when the lines it touches lie inside test regions: new-side lines for inserted text, old-side
/// lines for deleted text, both for a replace. Lines only match lines of the same class (test, production,
/// no code), so hunks do not slide across region boundaries. A hunk that straddles a boundary is cut into its
/// parts when the cut is unambiguous; otherwise it counts as production (it is reverted) and the summary says
/// so. A hunk that touches only lines without code (blank or comment-only, outside test regions) is kept and
/// counts as neither. Returns None when either side does not parse (the caller then treats the whole file as
/// production and says so).
pub fn split(finder: &dyn TestRegions, old: &str, new: &str) -> Option<Split> {
    let old_side = Side::new(finder, old)?;
    let new_side = Side::new(finder, new)?;
    let ops = similar::capture_diff_slices(Algorithm::Myers, &old_side.keys(), &new_side.keys());

    let mut kept: Vec<&str> = Vec::with_capacity(old_side.lines.len());
    let old_lines = |lines: Range<usize>| old_side.lines.get(lines).unwrap_or_default();
    let new_lines = |lines: Range<usize>| new_side.lines.get(lines).unwrap_or_default();
    let mut counts = Counts::default();
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            kept.extend_from_slice(old_lines(old_range));
            continue;
        }
        let old_runs = runs(&old_side.classes, old_range.clone());
        let new_runs = runs(&new_side.classes, new_range.clone());
        let has = |class: Class| {
            old_runs
                .iter()
                .chain(&new_runs)
                .any(|run| run.class == class)
        };
        match (has(Class::Test), has(Class::Production)) {
            (true, false) => {
                counts.test += 1;
                kept.extend_from_slice(new_lines(new_range));
            }
            (false, true) => {
                counts.production += 1;
                kept.extend_from_slice(old_lines(old_range));
            }
            (false, false) => {
                counts.neutral += 1;
                kept.extend_from_slice(new_lines(new_range));
            }
            (true, true) => {
                // A side with nothing but lines without code behaves as production: kept old, dropped new.
                let classes = |runs: &[Run]| -> Vec<Class> {
                    runs.iter()
                        .map(|run| match run.class {
                            Class::Neutral => Class::Production,
                            class => class,
                        })
                        .collect()
                };
                let (old_classes, new_classes) = (classes(&old_runs), classes(&new_runs));
                let eager = align(&old_classes, &new_classes, true);
                let lazy = align(&old_classes, &new_classes, false);
                let cut = kept_lines(&eager, &old_runs, &new_runs);
                if cut != kept_lines(&lazy, &old_runs, &new_runs) {
                    counts.mixed += 1;
                    kept.extend_from_slice(old_lines(old_range));
                    continue;
                }
                counts.split += 1;
                for step in &eager {
                    let class = match *step {
                        Step::Pair(i, _) | Step::Old(i) => old_classes.get(i),
                        Step::New(j) => new_classes.get(j),
                    };
                    if class == Some(&Class::Test) {
                        counts.test += 1;
                    } else {
                        counts.production += 1;
                    }
                }
                for (from_old, lines) in cut {
                    kept.extend_from_slice(if from_old {
                        old_lines(lines)
                    } else {
                        new_lines(lines)
                    });
                }
            }
        }
    }

    let eol = old_side.eol.or(new_side.eol).unwrap_or("\n");
    let mut test_only = String::with_capacity(old.len().max(new.len()));
    for (index, line) in kept.iter().enumerate() {
        test_only.push_str(line);
        if index + 1 < kept.len() && !line.ends_with('\n') {
            test_only.push_str(eol);
        }
    }
    Some(Split {
        test_changed: counts.test > 0,
        production_changed: counts.production > 0 || counts.mixed > 0,
        test_only,
        summary: counts.summary(),
    })
}

#[cfg(test)]
mod tests;
