#!/usr/bin/env python3
"""Writes a fixture crate for benchmarks: 20 test files of 10 tests each (200 tests), as a git repository with two
commits: base has a bug in `stats::median`, head fixes it and adds a regression test to one test file.

Usage: python3 bench/make_fixture.py DIR
"""

import os
import subprocess
import sys

GIT_ENV = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com")

LIB = '''//! Small numeric routines with enough work in them that tests take real time.

pub mod stats {
    /// The median of the values (the mean of the middle two for an even count).
    pub fn median(values: &[f64]) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mid = v.len() / 2;
        Some(MEDIAN_BODY)
    }

    /// The arithmetic mean.
    pub fn mean(values: &[f64]) -> Option<f64> {
        if values.is_empty() {
            None
        } else {
            Some(values.iter().sum::<f64>() / values.len() as f64)
        }
    }
}

pub mod primes {
    /// The primes below `n` (sieve of Eratosthenes).
    pub fn below(n: usize) -> Vec<usize> {
        let mut is = vec![true; n.max(2)];
        is[0] = false;
        is[1] = false;
        let mut i = 2;
        while i * i < n {
            if is[i] {
                let mut j = i * i;
                while j < n {
                    is[j] = false;
                    j += i;
                }
            }
            i += 1;
        }
        (0..n).filter(|&k| is[k]).collect()
    }
}

pub mod text {
    /// Words in `s`, lowercased, sorted, unique.
    pub fn vocabulary(s: &str) -> Vec<String> {
        let mut w: Vec<String> = s.split_whitespace().map(|w| w.to_lowercase()).collect();
        w.sort();
        w.dedup();
        w
    }
}
'''

BUGGY = "v[mid]"
FIXED = "if v.len().is_multiple_of(2) { (v[mid - 1] + v[mid]) / 2.0 } else { v[mid] }"


def test_file(i):
    out = ["use fixture::{primes, stats, text};", ""]
    for j in range(10):
        n = 200_000 + 10_000 * ((i * 10 + j) % 17)
        out += [
            "#[test]",
            f"fn case_{i:02}_{j:02}() {{",
            f"    let p = primes::below({n});",
            "    assert!(p.windows(2).all(|w| w[0] < w[1]));",
            "    let xs: Vec<f64> = p.iter().map(|&x| (x % 97) as f64).collect();",
            "    let m = stats::mean(&xs).unwrap();",
            "    assert!(m > 0.0 && m < 97.0);",
            f"    let words = text::vocabulary(&\"lorem ipsum dolor sit amet i{i} j{j} \".repeat(200));",
            "    assert_eq!(words.len(), 7);",
            "}",
            "",
        ]
    return "\n".join(out)


def main():
    repo = sys.argv[1]
    os.makedirs(os.path.join(repo, "src"))
    os.makedirs(os.path.join(repo, "tests"))

    def write(path, text):
        with open(os.path.join(repo, path), "w") as f:
            f.write(text)

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, stdout=subprocess.DEVNULL)

    write("Cargo.toml", '[package]\nname = "fixture"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    write(".gitignore", "/target\n")
    write("src/lib.rs", LIB.replace("MEDIAN_BODY", BUGGY))
    for i in range(20):
        write(f"tests/t{i:02}.rs", test_file(i))
    fmt = lambda: subprocess.run(["cargo", "fmt"], cwd=repo, check=True)
    fmt()
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "fixture with a median bug")
    write("src/lib.rs", LIB.replace("MEDIAN_BODY", FIXED))
    with open(os.path.join(repo, "tests/t07.rs"), "a") as f:
        f.write("\n#[test]\nfn median_of_an_even_count_is_the_mean_of_the_middle_two() {\n"
                "    assert_eq!(stats::median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));\n}\n")
    fmt()
    git("add", "-A")
    git("commit", "-q", "-m", "fix: median of an even count")


if __name__ == "__main__":
    main()
