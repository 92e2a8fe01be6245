#!/usr/bin/env python3
"""What the sandbox costs: every gate step with `--sandbox require` against `--sandbox off`, side by side.

Two fixture repositories with a fix commit on top of their base (a Rust crate with a few tests, a Python
project with pytest), gated alternately with the sandbox on and off, N times each after one warm-up of each,
with warm rooms and caches. Per step, the median duration from the gate's own JSON report in each mode and the
difference; and the bare cost of starting one process under bubblewrap (`bwrap ... true` against `true`).

Usage: python3 bench/sandbox_bench.py [--runs N] [--vouch PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}

RUST = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    "tests/basic.rs": "#[test]\nfn zero() {\n    assert_eq!(calc::add(0, 0), 0);\n}\n",
}
RUST_FIX = {
    "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    "tests/add.rs": "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
}
PYTHON = {
    "pyproject.toml": '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_basic.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}
PYTHON_FIX = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_add.py": "from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n",
}


def sh(cmd, cwd, env=None, check=True):
    full = dict(os.environ, **GIT_ENV, **(env or {}))
    r = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}")
    return r


def write(repo, files):
    for path, text in files.items():
        p = os.path.join(repo, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


def make_repo(work, name, base, fix):
    repo = os.path.join(work, name)
    os.makedirs(repo)
    sh(["git", "init", "-q", "-b", "main"], repo)
    write(repo, base)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "base"], repo)
    write(repo, fix)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "fix"], repo)
    return repo


def gate(vouch, repo, cache, mode, out):
    start = time.monotonic()
    r = sh(
        [vouch, "gate", "--repo", repo, "--base", "HEAD~1", "--sandbox", mode, "--json", out, "-q"],
        repo,
        env={"VOUCH_CACHE": cache},
        check=False,
    )
    wall = time.monotonic() - start
    with open(out) as f:
        report = json.load(f)
    if report["verdict"] != "pass":
        sys.exit(f"the fixture did not pass with --sandbox {mode}:\n{r.stdout[-3000:]}")
    steps = {s["name"]: s["duration_ms"] / 1000 for s in report["steps"] if s["status"] != "skipped"}
    steps["bite"] = report["bite"]["duration_ms"] / 1000
    return wall, steps


def spawn_cost(runs):
    """Median wall seconds of `true` and of `true` under the sandbox's bubblewrap command line."""
    bwrap = [
        "bwrap", "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup-try", "--unshare-net", "--cap-drop", "ALL", "--ro-bind", "/", "/",
        "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
        "--chdir", "/", "--", "true",
    ]
    plain, boxed = [], []
    for _ in range(runs):
        for argv, into in ((["true"], plain), (bwrap, boxed)):
            start = time.monotonic()
            subprocess.run(argv, check=True)
            into.append(time.monotonic() - start)
    return statistics.median(plain), statistics.median(boxed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--vouch", default=os.path.join(ROOT, "target", "release", "vouch"))
    args = ap.parse_args()
    plain, boxed = spawn_cost(max(args.runs, 20))
    print(f"one process: `true` {plain * 1000:.1f} ms, under bubblewrap {boxed * 1000:.1f} ms "
          f"(+{(boxed - plain) * 1000:.1f} ms), median of {max(args.runs, 20)}")
    with tempfile.TemporaryDirectory(prefix="vouch-sandbox-bench-") as work:
        for name, base, fix in (("rust", RUST, RUST_FIX), ("python", PYTHON, PYTHON_FIX)):
            repo = make_repo(work, name, base, fix)
            cache = os.path.join(work, f"cache-{name}")
            out = os.path.join(work, f"{name}.json")
            runs = {"off": [], "require": []}
            for mode in runs:
                gate(args.vouch, repo, cache, mode, out)  # warm-up
            for _ in range(args.runs):
                for mode in runs:
                    runs[mode].append(gate(args.vouch, repo, cache, mode, out))
            print(f"\n{name}: median of {args.runs} alternating runs, warm caches")
            print(f"  {'step':<12} {'off':>8} {'sandbox':>8} {'cost':>8}")
            names = list(runs["off"][0][1])
            for step in names + ["(whole gate)"]:
                def med(mode):
                    if step == "(whole gate)":
                        return statistics.median(w for w, _ in runs[mode])
                    return statistics.median(s.get(step, 0.0) for _, s in runs[mode])
                off, on = med("off"), med("require")
                print(f"  {step:<12} {off:>7.3f}s {on:>7.3f}s {on - off:>+7.3f}s")


if __name__ == "__main__":
    main()
