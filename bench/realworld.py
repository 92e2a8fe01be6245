#!/usr/bin/env python3
"""The gate on real repositories: run `vouch gate` on every case of bench/realworld/cases.toml and score it.

A case is a real change (a fix commit, a pull request rebuilt from a dataset row, a non-fix) of a public
repository, labelled by hand with what the gate should say: the verdict, the bite status and, where known, the
bite outcome of each changed test. This script

  run    (the default) prepares each case in the cache, runs the gate on it, compares the report with the labels
         and prints a table (case, expected, got, right?, gate wall time, bare test command wall time at head),
         `N/M right` and the median ratio gate / bare;
  label  re-derives the labels without vouch, the way they were made: check out base, apply only the test part
         of base..head, run the case's selector; then the whole head, run it again (and, with --full, the
         project's whole test command at base and at head, for pre-existing failures);
  prepare only clones repositories, builds synthetic heads and Python virtual environments.

Nothing here is a test and nothing runs in CI: it needs the network (or a local mirror) to clone the
repositories, and hours of CPU for a full run. Python 3.11, standard library only.

Usage:
  python3 bench/realworld.py [run] [--cases ID,...] [--vouch PATH] [--cache DIR] [--runs N] [--cold N]
                                [--json FILE]
  python3 bench/realworld.py label [--cases ID,...] [--cache DIR] [--full]
  python3 bench/realworld.py prepare [--cases ID,...] [--cache DIR]

Repositories are cloned from $REALWORLD_MIRROR/<owner>+<name>/repo when that exists (a bare mirror), else from
https://github.com/<owner>/<name>. The cache (default $REALWORLD_CACHE or ~/.cache/vouch-realworld) holds the
clones, the label and bare worktrees, the virtual environments, vouch's own cache (VOUCH_CACHE) and the reports.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = os.path.join(HERE, "realworld", "cases.toml")
DEFAULT_VOUCH = os.path.join(ROOT, "target", "release", "vouch")

# Synthetic heads are committed with a fixed identity and date, so the same patch on the same base always gives
# the same sha, and the sha recorded in the case list can be checked.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "realworld",
    "GIT_AUTHOR_EMAIL": "realworld@example.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "realworld",
    "GIT_COMMITTER_EMAIL": "realworld@example.invalid",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}

# The project's whole test command, run bare in a plain checkout at head for the time ratio (the preset's own).
BARE = {
    "rust": ["cargo", "test", "--no-fail-fast"],
    "python": ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
    "go": ["go", "test", "-count=1", "./..."],
}

# What the presets call tests, as git pathspecs: the label's "test part" of a change (a case may override).
TEST_PATHS = {
    "rust": [":(glob)**/tests/**", ":(glob)**/benches/**", ":(glob)**/*_test.rs", ":(glob)**/testdata/**"],
    "python": [":(glob)**/test_*.py", ":(glob)**/*_test.py", ":(glob)**/tests/**", ":(glob)**/test/**",
               ":(glob)**/conftest.py", ":(glob)**/testdata/**"],
    "go": [":(glob)**/*_test.go", ":(glob)**/testdata/**"],
}

VERDICTS = {"pass", "fail"}
BITES = {"bites", "no-bite", "not-applicable"}
OUTCOMES = {"bites", "bites-build", "inert", "skipped", "fails-at-head", "absent"}
CASE_KEYS = {"id", "repo", "lang", "base", "head", "apply", "verdict", "bite", "tests", "selector", "traps",
             "setup", "profile", "args", "reason", "note", "test_paths", "bare", "env", "timeout"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, cwd, env=None, check=True, timeout=None, out=None):
    """Runs cmd (niced: the machine is shared) and returns (exit status, output, seconds). Output goes to `out`
    (a path) when given, else it is captured."""
    full = dict(os.environ, **(env or {}))
    argv = ["nice", "-n", "19", *cmd]
    t = time.perf_counter()
    try:
        if out:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as f:
                r = subprocess.run(argv, cwd=cwd, env=full, stdout=f, stderr=subprocess.STDOUT, text=True,
                                   timeout=timeout, stdin=subprocess.DEVNULL)
            text = open(out, errors="replace").read()
        else:
            r = subprocess.run(argv, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)
            text = r.stdout
        code = r.returncode
    except subprocess.TimeoutExpired as e:
        code, text = -1, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += f"\n[realworld: timed out after {timeout}s]"
    secs = time.perf_counter() - t
    if check and code != 0:
        raise RuntimeError(f"command failed ({code}) in {cwd}: {' '.join(cmd)}\n{text[-3000:]}")
    return code, text, secs


def git(repo, *args, check=True, env=None):
    return run(["git", *args], repo, env=dict(GIT_ENV, **(env or {})), check=check)[1].strip()


# ---------------------------------------------------------------------------------------------------------------
# The case list


def load_cases(path=CASES):
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    repos = doc.get("repos", {})
    cases = doc.get("case", [])
    seen = set()
    for c in cases:
        unknown = set(c) - CASE_KEYS
        if unknown:
            sys.exit(f"case {c.get('id')}: unknown keys {sorted(unknown)}")
        for key in ("id", "repo", "lang", "base", "head", "verdict", "bite"):
            if key not in c:
                sys.exit(f"case {c.get('id')}: missing {key}")
        if c["id"] in seen:
            sys.exit(f"case {c['id']}: duplicate id")
        seen.add(c["id"])
        if c["repo"] not in repos:
            sys.exit(f"case {c['id']}: repository {c['repo']} is not in [repos]")
        if c["verdict"] not in VERDICTS or c["bite"] not in BITES:
            sys.exit(f"case {c['id']}: verdict {c['verdict']!r} / bite {c['bite']!r} not one of {VERDICTS} / {BITES}")
        if c["lang"] not in BARE:
            sys.exit(f"case {c['id']}: language {c['lang']!r} not one of {sorted(BARE)}")
        for t, o in c.get("tests", {}).items():
            if o not in OUTCOMES:
                sys.exit(f"case {c['id']}: test {t}: outcome {o!r} not one of {sorted(OUTCOMES)}")
        for key in ("base", "head"):
            if not re.fullmatch(r"[0-9a-f]{40}", c[key]):
                sys.exit(f"case {c['id']}: {key} must be a full sha")
    return repos, cases


def select(cases, ids):
    if not ids:
        return cases
    want = ids.split(",")
    missing = [i for i in want if i not in {c["id"] for c in cases}]
    if missing:
        sys.exit(f"no such case: {', '.join(missing)}")
    return [c for c in cases if c["id"] in want]


# ---------------------------------------------------------------------------------------------------------------
# Preparing a case: clone, synthetic head, virtual environment


def clone(repos, name, cache):
    dest = os.path.join(cache, name)
    if os.path.isdir(os.path.join(dest, ".git")):
        return dest
    slug = repos[name]
    mirror = os.environ.get("REALWORLD_MIRROR")
    src = f"https://github.com/{slug}.git"
    if mirror and os.path.isdir(os.path.join(mirror, slug.replace("/", "+"), "repo")):
        src = os.path.join(mirror, slug.replace("/", "+"), "repo")
    log(f"cloning {slug} from {src}")
    run(["git", "clone", "-q", "--no-checkout", src, dest], cache, env=GIT_ENV)
    return dest


def has_commit(repo, sha):
    return run(["git", "cat-file", "-e", sha + "^{commit}"], repo, env=GIT_ENV, check=False)[0] == 0


def patches_for(case, repos, cache):
    """The patches whose application on base makes a synthetic head, in order."""
    apply = case["apply"]
    if "mswe" in apply:
        data = clone(repos, apply.get("dataset_repo", "mswe"), cache)
        rel = apply["mswe"]
        text = git(data, "show", f"HEAD:{rel}")
        for line in text.splitlines():
            row = json.loads(line)
            if row["number"] == apply["number"]:
                if row["base"]["sha"] != case["base"]:
                    sys.exit(f"case {case['id']}: dataset base {row['base']['sha']} != {case['base']}")
                return [row["fix_patch"], row["test_patch"]]
        sys.exit(f"case {case['id']}: no row {apply['number']} in {rel}")
    if "diffs" in apply:
        repo = os.path.join(cache, case["repo"])
        out = []
        for d in apply["diffs"]:
            a, b = d["range"].split("..")
            out.append(run(["git", "diff", "--binary", a, b, "--", *d.get("paths", [])], repo, env=GIT_ENV)[1])
        return out
    sys.exit(f"case {case['id']}: apply needs mswe or diffs")


def make_head(case, repos, cache):
    """Creates the synthetic head of a case as a commit in the cache clone (and a branch realworld/<id>)."""
    repo = os.path.join(cache, case["repo"])
    if has_commit(repo, case["head"]):
        return
    work = os.path.join(cache, "tmp", "apply-" + case["id"])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(work), exist_ok=True)
    run(["git", "worktree", "prune"], repo, env=GIT_ENV)
    git(repo, "worktree", "add", "-q", "--detach", work, case["base"])
    try:
        for i, patch in enumerate(patches_for(case, repos, cache)):
            pfile = os.path.join(cache, "tmp", f"{case['id']}-{i}.patch")
            with open(pfile, "w") as f:
                f.write(patch)
            git(work, "apply", "--index", "--whitespace=nowarn", pfile)
        git(work, "commit", "-q", "--no-verify", "-m", "realworld: synthetic head")
        sha = git(work, "rev-parse", "HEAD")
    finally:
        run(["git", "worktree", "remove", "--force", work], repo, env=GIT_ENV, check=False)
    git(repo, "branch", "-f", f"realworld/{case['id']}", sha)
    if sha != case["head"]:
        sys.exit(f"case {case['id']}: the synthetic head is {sha}, the case list says {case['head']}")


def find_python(name):
    """A Python interpreter by name: on PATH, else one of pyenv's versions (their shims only see the global one)."""
    found = shutil.which(name)
    if found and run([found, "--version"], "/", check=False)[0] == 0:
        return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    versions = os.path.join(root, "versions")
    for v in sorted(os.listdir(versions)) if os.path.isdir(versions) else []:
        cand = os.path.join(versions, v, "bin", name)
        if os.access(cand, os.X_OK):
            return cand
    sys.exit(f"no {name} on PATH or in {versions}")


def venv_for(case, cache):
    """A virtual environment with the case's pip packages, shared by cases with the same set; None if none."""
    setup = case.get("setup", {})
    pip = setup.get("pip")
    if pip is None:
        return None
    python = find_python(setup.get("python", "python3.11"))
    key = hashlib.sha256(json.dumps([python, sorted(pip)]).encode()).hexdigest()[:12]
    dest = os.path.join(cache, "venvs", key)
    if os.path.exists(os.path.join(dest, "ok")):
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    log(f"creating venv {dest}: {' '.join(pip)}")
    run([python, "-m", "venv", dest], cache)
    if pip:
        run([os.path.join(dest, "bin", "python"), "-m", "pip", "install", "-q", *pip], cache, timeout=1800)
    with open(os.path.join(dest, "ok"), "w") as f:
        f.write("\n".join(pip) + "\n")
    return dest


def case_env(case, cache):
    env = dict(case.get("env", {}))
    venv = venv_for(case, cache)
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = os.path.join(venv, "bin") + os.pathsep + os.environ.get("PATH", "")
    env.setdefault("CARGO_TERM_COLOR", "never")
    env.setdefault("GOFLAGS", "-buildvcs=false")
    return env


def prepare(case, repos, cache):
    repo = clone(repos, case["repo"], cache)
    if not has_commit(repo, case["base"]):
        sys.exit(f"case {case['id']}: base {case['base']} not in {repo}")
    if "apply" in case:
        make_head(case, repos, cache)
    elif not has_commit(repo, case["head"]):
        sys.exit(f"case {case['id']}: head {case['head']} not in {repo}")
    return repo, case_env(case, cache)


def checkout(repo, cache, kind, case, rev):
    """A plain worktree of the cache clone at rev (reused between runs), for labels and bare test runs."""
    dest = os.path.join(cache, kind, case["id"])
    if not os.path.exists(os.path.join(dest, ".git")):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        run(["git", "worktree", "prune"], repo, env=GIT_ENV)
        git(repo, "worktree", "add", "-q", "--detach", dest, rev)
    git(dest, "checkout", "-q", "--detach", "--force", rev)
    git(dest, "clean", "-q", "-fdx", "-e", "/target")
    return dest


def build_env(case, cache, kind, tree):
    """The environment of labels and bare runs: build output in one target directory per repository and kind,
    outside the tree; Python imports the project from the checkout (src/ layout included), as the preset does."""
    env = {"CARGO_TARGET_DIR": os.path.join(cache, "targets", f"{case['repo']}-{kind}")}
    if case["lang"] == "python":
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(tree, "src"), tree])
    return env


# ---------------------------------------------------------------------------------------------------------------
# Labels: what the tests say without vouch


def parse_results(lang, text, junit=None):
    """Per-test status (pass/fail/skip) from a selector's output: libtest lines, go test -json, pytest JUnit."""
    res = {}
    if lang == "rust":
        for m in re.finditer(r"^test (\S+)(?: - should panic)?(?: - compile(?: fail)?)? \.\.\. (ok|FAILED|ignored)", text, re.M):
            res[m.group(1)] = {"ok": "pass", "FAILED": "fail", "ignored": "skip"}[m.group(2)]
    elif lang == "go":
        for line in text.splitlines():
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if ev.get("Test") and ev.get("Action") in ("pass", "fail", "skip"):
                res[ev["Test"]] = ev["Action"]
    elif lang == "python" and junit and os.path.exists(junit):
        for tc in ET.parse(junit).getroot().iter("testcase"):
            cls, name, file = tc.get("classname", ""), tc.get("name", ""), tc.get("file")
            # xunit1 names the file; classname is the dotted module path and then the classes.
            module = file[:-3].replace("/", ".") if file and file.endswith(".py") else ""
            rest = cls[len(module) + 1:].split(".") if module and cls.startswith(module + ".") else []
            node = "::".join([file or cls, *rest, name])
            status = "pass"
            if tc.find("failure") is not None or tc.find("error") is not None:
                status = "fail"
            elif tc.find("skipped") is not None:
                status = "skip"
            res[node] = status
    return res


def run_selector(case, tree, env, cache, label):
    argv = list(case["selector"])
    junit = None
    if case["lang"] == "python":
        junit = os.path.join(cache, "tmp", f"{case['id']}-{label}.xml")
        if os.path.exists(junit):
            os.remove(junit)
        argv += ["-o", "junit_family=xunit1", f"--junitxml={junit}"]
    logf = os.path.join(cache, "logs", case["id"], f"label-{label}.log")
    os.makedirs(os.path.dirname(logf), exist_ok=True)
    code, text, secs = run(argv, tree, env=env, check=False, out=logf, timeout=case.get("timeout", 3600))
    res = parse_results(case["lang"], text, junit)
    build_failed = code != 0 and not res
    return {"exit": code, "tests": res, "build_failed": build_failed, "secs": round(secs, 1), "log": logf}


def outcome(before, after, name):
    a = after["tests"].get(name)
    b = before["tests"].get(name)
    if a == "skip":
        return "skipped"
    if a != "pass":
        return "fails-at-head" if a else "absent"
    if b == "pass":
        return "inert"
    if b is None and before["build_failed"]:
        return "bites-build"
    return "bites" if b == "fail" else f"absent-before({b})"


def label(case, repos, cache, full):
    repo, env = prepare(case, repos, cache)
    tree = checkout(repo, cache, "label", case, case["base"])
    env = dict(env, **build_env(case, cache, "label", tree))
    paths = case.get("test_paths", TEST_PATHS[case["lang"]])
    diff = run(["git", "diff", "--binary", case["base"], case["head"], "--", *paths], tree, env=GIT_ENV)[1]
    excludes = [":(exclude,glob)" + p[len(":(glob)"):] if p.startswith(":(glob)") else ":(exclude)" + p for p in paths]
    prod = run(["git", "diff", "--stat", case["base"], case["head"], "--", ".", *excludes], tree, env=GIT_ENV)[1]
    out = {"id": case["id"], "test_part": bool(diff.strip()), "production_part": bool(prod.strip())}
    if full:
        c, _, s = run(BARE[case["lang"]] if "bare" not in case else case["bare"], tree, env=env, check=False,
                      out=os.path.join(cache, "logs", case["id"], "label-base-full.log"), timeout=7200)
        out["base_full"] = {"exit": c, "secs": round(s, 1)}
    if diff.strip():
        pfile = os.path.join(cache, "tmp", f"{case['id']}-tests.patch")
        with open(pfile, "w") as f:
            f.write(diff + "\n")
        git(tree, "apply", "--whitespace=nowarn", pfile)
    if "selector" in case:
        before = run_selector(case, tree, env, cache, "tests-on-base")
        git(tree, "checkout", "-q", "--force", case["head"])
        git(tree, "clean", "-q", "-fdx", "-e", "/target")
        after = run_selector(case, tree, env, cache, "head")
        names = sorted(set(before["tests"]) | set(after["tests"]))
        out["selector"] = {"tests_on_base": before, "head": after,
                           "outcomes": {n: outcome(before, after, n) for n in names}}
    else:
        git(tree, "checkout", "-q", "--force", case["head"])
    if full:
        c, _, s = run(BARE[case["lang"]] if "bare" not in case else case["bare"], tree, env=env, check=False,
                      out=os.path.join(cache, "logs", case["id"], "label-head-full.log"), timeout=7200)
        out["head_full"] = {"exit": c, "secs": round(s, 1)}
    return out


# ---------------------------------------------------------------------------------------------------------------
# Running the gate and scoring it


def id_matches(gate_id, name):
    return gate_id == name or gate_id.endswith("::" + name)


def judge(case, report):
    """Compares a gate report with the case's labels; returns (right, list of differences)."""
    diffs = []
    verdict = report.get("verdict")
    bite = (report.get("bite") or {}).get("status")
    if verdict != case["verdict"]:
        diffs.append(f"verdict {verdict} (expected {case['verdict']})")
    if bite != case["bite"]:
        diffs.append(f"bite {bite} (expected {case['bite']})")
    if verdict == "fail" and case["verdict"] == "fail" and case.get("reason"):
        reasons = " ".join(report.get("reasons", []))
        if case["reason"].lower() not in reasons.lower():
            diffs.append(f"fails without the expected reason {case['reason']!r}")
    got = {t["id"]: t["outcome"] for t in (report.get("bite") or {}).get("tests", [])}
    for name, want in case.get("tests", {}).items():
        hits = [o for i, o in got.items() if id_matches(i, name)]
        have = hits[0] if hits else "not selected"
        if have != want:
            diffs.append(f"{name}: {have} (expected {want})")
    return not diffs, diffs


def gate_once(case, repo, env, vouch, cache, out_json, label, vouch_cache=None):
    args = [vouch, "gate", "--repo", repo, "--base", case["base"], "--head", case["head"], "--json", out_json]
    if case.get("profile"):
        args += ["--profile", os.path.join(HERE, "realworld", case["profile"])]
    args += case.get("args", [])
    logf = os.path.join(cache, "logs", case["id"], f"gate-{label}.log")
    os.makedirs(os.path.dirname(logf), exist_ok=True)
    if os.path.exists(out_json):
        os.remove(out_json)
    genv = dict(env, VOUCH_CACHE=vouch_cache or os.path.join(cache, "vouch-cache"))
    code, _, secs = run(args, cache, env=genv, check=False, out=logf, timeout=case.get("timeout", 3600) * 3)
    report = None
    if os.path.exists(out_json):
        try:
            with open(out_json) as f:
                report = json.load(f)
        except json.JSONDecodeError:
            report = None
    return code, report, secs, logf


def bare_once(case, tree, env, cache, label):
    argv = case.get("bare", BARE[case["lang"]])
    logf = os.path.join(cache, "logs", case["id"], f"bare-{label}.log")
    code, _, secs = run(argv, tree, env=env, check=False, out=logf, timeout=7200)
    return code, secs


def summarize_report(report, code):
    if report is None:
        return {"verdict": "error" if code else None, "bite": None, "reasons": [f"exit {code}, no report"]}
    bite = report.get("bite") or {}
    return {
        "verdict": report.get("verdict"),
        "bite": bite.get("status"),
        "reasons": report.get("reasons", []),
        "bite_tests": [(t.get("id"), t.get("outcome")) for t in bite.get("tests", [])][:50],
        "steps": [(s.get("name"), s.get("status")) for s in report.get("steps", [])],
    }


def cold_runs(case, repo, env, vouch, cache, runs):
    """`runs` alternating pairs from cold: the bare test command at head in a new target directory, and a
    first gate run with a new vouch cache (rooms, build output, virtual environments); both deleted after."""
    tree = checkout(repo, cache, "bare", case, case["head"])
    gates, bares = [], []
    for i in range(runs):
        scratch = os.path.join(cache, "cold", case["id"])
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        benv = dict(env, **build_env(case, cache, "bare", tree))
        benv["CARGO_TARGET_DIR"] = os.path.join(scratch, "target")
        _, b = bare_once(case, tree, benv, cache, f"cold{i}")
        bares.append(b)
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        out_json = os.path.join(cache, "reports", case["id"] + f".cold{i}.json")
        _, _, g, _ = gate_once(case, repo, env, vouch, cache, out_json, f"cold{i}",
                               vouch_cache=os.path.join(scratch, "vouch-cache"))
        gates.append(g)
        shutil.rmtree(scratch, ignore_errors=True)
        log(f"  cold run {i + 1}/{runs}: bare {b:.1f}s, gate {g:.1f}s")
    return {"gate_cold_s": round(statistics.median(gates), 2), "bare_cold_s": round(statistics.median(bares), 2),
            "cold_ratio": round(statistics.median(gates) / statistics.median(bares), 2)}


def run_case(case, repos, cache, vouch, runs, cold=0):
    repo, env = prepare(case, repos, cache)
    out_json = os.path.join(cache, "reports", case["id"] + ".json")
    os.makedirs(os.path.dirname(out_json), exist_ok=True)
    code, report, first, logf = gate_once(case, repo, env, vouch, cache, out_json, "first")
    if report is None:
        right, diffs = False, [f"no report (exit {code}); see {logf}"]
    else:
        right, diffs = judge(case, report)
    res = {"id": case["id"], "lang": case["lang"], "exit": code, "right": right, "diffs": diffs,
           "expected": {"verdict": case["verdict"], "bite": case["bite"]},
           "got": summarize_report(report, code), "gate_first_s": round(first, 2), "report": out_json}
    if runs > 0:
        tree = checkout(repo, cache, "bare", case, case["head"])
        benv = dict(env, **build_env(case, cache, "bare", tree))
        bare_once(case, tree, benv, cache, "warmup")
        gates, bares = [], []
        for i in range(runs):
            _, b = bare_once(case, tree, benv, cache, f"run{i}")
            bares.append(b)
            _, _, g, _ = gate_once(case, repo, env, vouch, cache, out_json + f".warm{i}", f"warm{i}")
            gates.append(g)
        res["gate_warm_s"] = round(statistics.median(gates), 2)
        res["bare_s"] = round(statistics.median(bares), 2)
        res["ratio"] = round(res["gate_warm_s"] / res["bare_s"], 2) if res["bare_s"] > 0 else None
        log(f"  warm: gate {res['gate_warm_s']}s, bare {res['bare_s']}s, ratio {res['ratio']}x "
            f"(medians of {runs}: gate {sorted(round(g, 1) for g in gates)}, bare {sorted(round(b, 1) for b in bares)})")
    if cold > 0:
        res.update(cold_runs(case, repo, env, vouch, cache, cold))
    return res


def fmt_s(x):
    return "-" if x is None else f"{x:.1f}s"


def print_table(results):
    print("| case | lang | expected | got | right? | gate (first) | gate (warm) | bare | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        exp = f"{r['expected']['verdict']} / {r['expected']['bite']}"
        got = f"{r['got']['verdict']} / {r['got']['bite']}"
        ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
        print(f"| {r['id']} | {r['lang']} | {exp} | {got} | {'yes' if r['right'] else 'NO'} | "
              f"{fmt_s(r['gate_first_s'])} | {fmt_s(r.get('gate_warm_s'))} | {fmt_s(r.get('bare_s'))} | {ratio} |")
    right = sum(r["right"] for r in results)
    print(f"\n{right}/{len(results)} right")
    ratios = [r["ratio"] for r in results if r.get("ratio")]
    if ratios:
        print(f"median gate (warm) / bare test command at head: {statistics.median(ratios):.2f}x over {len(ratios)} cases")
    for r in results:
        if r.get("cold_ratio") is not None:
            print(f"{r['id']} from cold: first gate {r['gate_cold_s']:.1f}s / bare cold test {r['bare_cold_s']:.1f}s "
                  f"= {r['cold_ratio']:.2f}x")
    for r in results:
        if not r["right"]:
            print(f"  {r['id']}: " + "; ".join(r["diffs"]))
            for reason in r["got"].get("reasons", [])[:4]:
                print(f"      reason: {reason[:300]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="run", choices=["run", "label", "prepare"])
    ap.add_argument("--cases", help="comma-separated case ids (default: all)")
    ap.add_argument("--vouch", default=DEFAULT_VOUCH, help="the vouch binary (default: target/release/vouch)")
    ap.add_argument("--cache", default=os.environ.get("REALWORLD_CACHE", os.path.expanduser("~/.cache/vouch-realworld")))
    ap.add_argument("--runs", type=int, default=1,
                    help="timed runs of warm gate and bare test command, alternating (0: no timing)")
    ap.add_argument("--cold", type=int, default=0,
                    help="timed pairs from cold, alternating: bare test command in a new target directory, "
                         "first gate run with a new vouch cache (0: none)")
    ap.add_argument("--json", help="save the results to this file")
    ap.add_argument("--full", action="store_true", help="label: also run the whole test command at base and head")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    args = ap.parse_args()
    repos, cases = load_cases()
    cases = select(cases, args.cases)
    if args.list:
        for c in cases:
            print(f"{c['id']:28} {c['lang']:7} {c['verdict']:5} {c['bite']:15} {','.join(c.get('traps', []))}")
        return
    cache = os.path.abspath(args.cache)
    os.makedirs(os.path.join(cache, "tmp"), exist_ok=True)
    results = []
    started = time.perf_counter()
    for c in cases:
        log(f"== {c['id']}")
        if args.command == "prepare":
            prepare(c, repos, cache)
            continue
        if args.command == "label":
            r = label(c, repos, cache, args.full)
            print(json.dumps(r, indent=1), flush=True)
            results.append(r)
            continue
        if not os.access(args.vouch, os.X_OK):
            sys.exit(f"no vouch binary at {args.vouch} (cargo build --release, or --vouch PATH)")
        r = run_case(c, repos, cache, os.path.abspath(args.vouch), args.runs, args.cold)
        log(f"   {'right' if r['right'] else 'WRONG'}: got {r['got']['verdict']} / {r['got']['bite']} "
            f"in {r['gate_first_s']}s" + ("" if r["right"] else f" ({'; '.join(r['diffs'])})"))
        results.append(r)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": results, "partial": True}, f, indent=1)
    total = time.perf_counter() - started
    if args.command == "run":
        print_table(results)
        print(f"harness wall time: {total / 60:.1f} min")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": args.command, "results": results, "wall_s": round(total, 1)}, f, indent=1)


if __name__ == "__main__":
    main()
