#!/usr/bin/env python3
"""Gate wall time with a warm baseline cache against the bare test command, side by side in one run.

Two repositories, each with a fix commit on top of its base:
  fixture  a generated crate with ~200 tests in 20 test files (bench/make_fixture.py)
  semver   the real `semver` crate from crates.io, with a bug injected at base and fixed (plus a test) at head

For each: warm everything once (the bare checkout's target dir, the gate's rooms and caches), then alternate
`cargo test --no-fail-fast` in a plain checkout at head and `vouch gate --base HEAD~1` N times, and report the
medians and their ratio. Usage: python3 bench/gate_bench.py [--runs N] [--only fixture|semver]
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOUCH = os.path.join(ROOT, "target", "release", "vouch")
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def sh(cmd, cwd, env=None, check=True):
    full = dict(os.environ, **GIT_ENV, **(env or {}))
    r = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}")
    return r


def git_init(repo):
    sh(["git", "init", "-q", "-b", "main"], repo)


def commit(repo, msg):
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", msg], repo)


def semver_repo(work):
    """The published semver crate with a bug injected at base; head restores it and adds a regression test."""
    probe = os.path.join(work, "probe")
    sh(["cargo", "new", "-q", "--lib", probe], work)
    sh(["cargo", "add", "-q", "semver@=1.0.28"], probe)
    sh(["cargo", "fetch", "-q"], probe)
    src = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/semver-1.0.28"))[0]
    repo = os.path.join(work, "semver")
    shutil.copytree(src, repo)
    os.remove(os.path.join(repo, "Cargo.toml.orig")) if os.path.exists(os.path.join(repo, "Cargo.toml.orig")) else None
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("/target\n")
    impls = os.path.join(repo, "src", "impls.rs")
    good = open(impls).read()
    # The bug: numeric pre-release identifiers compared as strings, so alpha.99 > alpha.100.
    needle = "(true, true) => Ord::cmp(&lhs.len(), &rhs.len()).then_with(string_cmp),"
    assert needle in good, "semver's Prerelease::cmp changed; update the injected bug"
    bad = good.replace(needle, "(true, true) => string_cmp(),")
    git_init(repo)
    with open(impls, "w") as f:
        f.write(bad)
    # The published crate has a test file with a cfg that today's rustc flags (unexpected_cfgs): a maintainer
    # allows that lint in the repository's own profile, which the gate reads at base.
    preset = subprocess.run([VOUCH, "profile", "--name", "rust"], capture_output=True, text=True, check=True).stdout
    clippy = '"-D", "warnings"]'
    assert clippy in preset
    os.makedirs(os.path.join(repo, ".vouch"))
    with open(os.path.join(repo, ".vouch", "gate.toml"), "w") as f:
        f.write(preset.replace(clippy, '"-D", "warnings", "-A", "unexpected_cfgs"]'))
    commit(repo, "semver 1.0.28 with a bug injected")
    with open(impls, "w") as f:
        f.write(good)
    test = os.path.join(repo, "tests", "test_version.rs")
    with open(test, "a") as f:
        f.write(
            "\n#[test]\nfn test_numeric_prerelease_identifiers_compare_as_numbers() {\n"
            "    let a = semver::Version::parse(\"1.0.0-alpha.99\").unwrap();\n"
            "    let b = semver::Version::parse(\"1.0.0-alpha.100\").unwrap();\n"
            "    assert!(a < b);\n}\n"
        )
    commit(repo, "fix: numeric pre-release identifiers compare as numbers")
    return repo


def fixture_repo(work):
    repo = os.path.join(work, "fixture")
    sh([sys.executable, os.path.join(ROOT, "bench", "make_fixture.py"), repo], work)
    return repo


def checkout(repo, work, name):
    dest = os.path.join(work, name)
    sh(["git", "clone", "-q", repo, dest], work)
    return dest


def timed(cmd, cwd, env, to_file=None):
    """Runs cmd and times it. With to_file, output goes to that file (as the gate's steps do: runners are
    measurably slower writing into a pipe), else it is captured through a pipe."""
    full = dict(os.environ, **GIT_ENV, **(env or {}))
    t = time.perf_counter()
    if to_file:
        with open(to_file, "w") as f:
            r = subprocess.run(cmd, cwd=cwd, env=full, stdout=f, stderr=subprocess.STDOUT, text=True)
        elapsed = time.perf_counter() - t
        r.stdout = open(to_file).read()
        return elapsed, r
    r = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.perf_counter() - t, r


def bench(name, repo, work, vouch, runs):
    bare_dir = checkout(repo, work, name + "-bare")
    env = {"VOUCH_CACHE": os.path.join(work, "cache-" + name), "CARGO_TERM_COLOR": "never"}
    bare_cmd = ["cargo", "test", "--no-fail-fast"]
    gate_cmd = [vouch, "gate", "--repo", repo, "--base", "HEAD~1", "--quiet", "--json", os.path.join(work, name + ".json")]
    # Warm up: build the bare checkout, fill the gate's rooms, build caches and baseline cache.
    print(f"[{name}] warming up (cold builds)...", flush=True)
    _, r = timed(bare_cmd, bare_dir, env)
    if r.returncode != 0:
        sys.exit(f"bare tests fail in {name}:\n{r.stdout[-2000:]}")
    _, r = timed(gate_cmd + ["--refresh-baseline"], work, env)
    if r.returncode != 0:
        sys.exit(f"the gate does not pass on {name} (exit {r.returncode}):\n{r.stdout[-3000:]}")
    first = json.load(open(os.path.join(work, name + ".json")))
    first_bite = first["bite"]["duration_ms"] / 1000
    bare, gate, nobite, bite = [], [], [], []
    bare_log = os.path.join(work, name + "-bare.log")
    for i in range(runs):
        t, r = timed(bare_cmd, bare_dir, env, to_file=bare_log)
        assert r.returncode == 0
        bare.append(t)
        t, r = timed(gate_cmd, work, env)
        assert r.returncode == 0, r.stdout[-2000:]
        gate.append(t)
        report = json.load(open(os.path.join(work, name + ".json")))
        assert report["bite"]["status"] == "bites", report["bite"]
        bite.append(report["bite"]["duration_ms"] / 1000)
        t, r = timed(gate_cmd + ["--no-bite"], work, env)
        assert r.returncode == 0, r.stdout[-2000:]
        nobite.append(t)
        print(f"[{name}] run {i + 1}/{runs}: bare {bare[-1]:.2f}s  gate {gate[-1]:.2f}s  "
              f"gate --no-bite {nobite[-1]:.2f}s  bite step {bite[-1]:.2f}s", flush=True)
    med = statistics.median
    return med(bare), med(gate), med(nobite), med(bite), first_bite


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["fixture", "semver"])
    args = ap.parse_args()
    sh(["cargo", "build", "--release", "-q"], ROOT)
    vouch = VOUCH
    work = tempfile.mkdtemp(prefix="vouch-bench-")
    rows = []
    try:
        if args.only in (None, "fixture"):
            rows.append(("fixture crate, 200 tests", *bench("fixture", fixture_repo(work), work, vouch, args.runs)))
        if args.only in (None, "semver"):
            rows.append(("semver 1.0.28, fix commit", *bench("semver", semver_repo(work), work, vouch, args.runs)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmedian of {args.runs} runs, alternating, warm caches (bite: the step alone, from the gate's report)")
    print(f"| repository | bare `cargo test` | `vouch gate` | ratio | `gate --no-bite` | ratio | bite step | bite / suite | first bite (cold) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, b, g, nb, bt, fb in rows:
        print(f"| {name} | {b:.2f}s | {g:.2f}s | {g / b:.2f}x | {nb:.2f}s | {nb / b:.2f}x | {bt:.2f}s | {bt / b:.2f}x | {fb:.2f}s |")


if __name__ == "__main__":
    main()
