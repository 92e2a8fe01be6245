#!/usr/bin/env python3
"""Tasks solved by `vouch run` and by mini-swe-agent, same model, same server (issue 11, item 4).

The tasks are tasks/bench/NAME.md (the issue: a symptom, not the fix) with tasks/bench/NAME/repo (the code and
its own tests, made into a one-commit git repository by tasks/bench/make-repo.sh) and tasks/bench/NAME/fix.patch
(the reference fix: the production change and a regression test; never copied into a task repository).

  check   proves every task well-formed with the real toolchains: the repository's tests pass at base, the
          reference fix's test files alone (on base) fail, and `vouch gate` on base..fix says pass with a
          bite (bite.status `bites`).
  run     starts ONE llama-server (`vouch model serve`, port 18011) and, per task, runs each harness on a fresh
          copy of the task repository through a recording proxy (same server, same model): `vouch run --task`
          and mini-swe-agent (pinned, in a venv; its default mini.yaml, yolo, exit at once). Limits, the same
          for both: --turns model turns (vouch --max-turns, mini agent.step_limit), --wall per task (vouch
          --wall-time; the harness process is killed --grace later, mini at --wall), --max-tokens per reply.
          Solved = the harness's final change (vouch: its branch, or its worktree's changes when it committed
          nothing; mini: the changes it left in the repository) passes `vouch gate` against base with
          bite.status `bites`: judged the same way for both. Recorded per run: solved, what the harness
          claimed (vouch's status, mini's exit_status), turns, wall time, and from the proxy the prompt tokens,
          those served from llama-server's cache (`timings.cache_n`) and the completion tokens of each reply.

Results go to --json (default bench/results/agent_success-MODEL.json) as each run finishes; --resume skips
the runs already there. The table is printed at the end; --markdown prints it as Markdown.

Usage: python3 bench/agent_success.py check [--tasks a,b]
       python3 bench/agent_success.py run --model qwen-0.5b|qwen-1.5b [--tasks a,b] [--harness vouch,mini]
                                          [--json F] [--resume] [--markdown] [--turns 15] [--wall 600]
       python3 bench/agent_success.py table --json F [--markdown]
"""

import argparse
import glob
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mswea  # noqa: E402
from mswea import GIT_ENV  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = os.path.join(ROOT, "tasks", "bench")
VOUCH = os.environ.get("VOUCH_BIN") or os.path.join(ROOT, "target", "debug", "vouch")
PORT = 18011
WORK = os.path.expanduser("~/.cache/vouch-bench-success")

# The tests each profile's repository runs at base (the gate runs the profile's own steps).
TEST_CMD = {
    "rust": ["cargo", "test", "-q", "--offline"],
    "python": ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
    "go": ["go", "test", "-count=1", "./..."],
    "node": ["node", "--test"],
}


def sh(cmd, cwd, env=None, check=True, timeout=None):
    full = dict(os.environ, **GIT_ENV, **(env or {}))
    r = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}")
    return r


def tasks(only):
    names = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(TASKS, "*.md")))
    if only:
        want = only.split(",")
        missing = [w for w in want if w not in names]
        if missing:
            sys.exit(f"no such task: {', '.join(missing)} (have {', '.join(names)})")
        names = want
    return names


def front(name):
    """The task file's front matter as a dict of strings, and its body."""
    text = open(os.path.join(TASKS, name + ".md")).read()
    _, head, body = text.split("---\n", 2)
    meta = {}
    for line in head.splitlines():
        k, _, v = line.partition(":")
        meta[k.strip()] = v.strip()
    return meta, body.strip()


def make_repo(name, dest):
    sh([os.path.join(TASKS, "make-repo.sh"), name, dest], ROOT)


def is_test_path(path):
    base = os.path.basename(path)
    return (path.startswith(("tests/", "test/")) or base.endswith("_test.go") or base.startswith("test_")
            or ".test." in base)


def patch_files(name):
    files = []
    for line in open(os.path.join(TASKS, name, "fix.patch")):
        if line.startswith("+++ b/"):
            files.append(line[6:].strip())
    return files


def gate(repo, head, out_json, timeout=900):
    """`vouch gate` of base main..head: (solved, verdict, bite status, reasons)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_") and k != "RUST_LOG"}
    env.update(GIT_ENV, VOUCH_CACHE=os.path.join(WORK, "gate-cache"))
    r = subprocess.run(["nice", "-n", "19", VOUCH, "gate", "--repo", repo, "--base", "main", "--head", head,
                        "--json", out_json, "-q", "--timeout", f"{timeout}s"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        rep = json.load(open(out_json))
    except (OSError, ValueError):
        return False, "error", None, [r.stdout[-500:]]
    bite = (rep.get("bite") or {}).get("status")
    return rep.get("verdict") == "pass" and bite == "bites", rep.get("verdict"), bite, rep.get("reasons") or []


# ---------------------------------------------------------------------------------------------------------
# check

def check(names):
    work = tempfile.mkdtemp(prefix="vouch-bench-check-")
    bad = 0
    try:
        for name in names:
            meta, _ = front(name)
            profile = meta["profile"]
            t0 = time.time()
            problems = []
            repo = os.path.join(work, name)
            make_repo(name, repo)
            cmd = TEST_CMD[profile]
            env = {"CARGO_TARGET_DIR": os.path.join(work, "target-" + name)}
            r = sh(cmd, repo, env, check=False)
            if r.returncode != 0:
                problems.append(f"tests fail at base:\n{r.stdout[-1500:]}")
            # The fix on a branch.
            sh(["git", "checkout", "-q", "-b", "fix"], repo)
            sh(["git", "apply", os.path.join(TASKS, name, "fix.patch")], repo)
            sh(["git", "add", "-A"], repo)
            sh(["git", "commit", "-q", "-m", f"{name}: reference fix"], repo)
            r = sh(cmd, repo, env, check=False)
            if r.returncode != 0:
                problems.append(f"tests fail with the fix:\n{r.stdout[-1500:]}")
            # Base with only the fix's test files: the regression test must fail.
            tests = [f for f in patch_files(name) if is_test_path(f)]
            prod = [f for f in patch_files(name) if not is_test_path(f)]
            if not tests or not prod:
                problems.append(f"the fix needs test and production files: tests {tests}, production {prod}")
            sh(["git", "checkout", "-q", "main"], repo)
            sh(["git", "checkout", "fix", "--"] + tests, repo)
            r = sh(cmd, repo, env, check=False)
            if r.returncode == 0:
                problems.append("the reference regression test passes at base")
            sh(["git", "checkout", "-q", "-f", "main"], repo)
            sh(["git", "clean", "-qfd"], repo)
            solved, verdict, bite, reasons = gate(repo, "fix", os.path.join(work, name + "-gate.json"))
            if not solved:
                problems.append(f"vouch gate on the fix: verdict {verdict}, bite {bite}, reasons {reasons}")
            status = "ok" if not problems else "BAD"
            bad += bool(problems)
            print(f"{name:24} {profile:7} {status:4} gate {verdict}/{bite}  {time.time() - t0:5.1f}s")
            for p in problems:
                print("    " + p.replace("\n", "\n    "))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(names) - bad} of {len(names)} tasks well-formed")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------------------
# The recording proxy: forwards everything to llama-server, streams passed through as they come, and keeps
# per chat request the prompt tokens, the cached ones and the completion tokens.

class Proxy:
    def __init__(self, upstream_port):
        self.lock = threading.Lock()
        self.records = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def forward(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=3600)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection", "accept-encoding")}
                try:
                    conn.request(method, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                except OSError as e:
                    msg = json.dumps({"error": {"message": f"proxy: {e}"}}).encode()
                    self.send_response(502)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                chat = method == "POST" and self.path.rstrip("/").endswith("chat/completions")
                ctype = resp.getheader("Content-Type", "")
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                t0 = time.time()
                last = None
                if "text/event-stream" in ctype:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    try:
                        while True:
                            line = resp.readline()
                            if not line:
                                break
                            if line.startswith(b"data: {"):
                                try:
                                    ev = json.loads(line[6:])
                                    if ev.get("timings") or ev.get("usage"):
                                        last = ev
                                except ValueError:
                                    pass
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                    except OSError:
                        pass
                else:
                    data = resp.read()
                    self.send_header("Content-Length", str(len(data)))
                    try:
                        self.end_headers()
                        self.wfile.write(data)
                    except OSError:  # the harness went away (killed at its wall time): still recorded
                        pass
                    if chat:
                        try:
                            last = json.loads(data)
                        except ValueError:
                            pass
                conn.close()
                if chat:
                    outer.record(last, time.time() - t0, json.loads(body or b"{}"))

            def do_GET(self):
                self.forward("GET")

            def do_POST(self):
                self.forward("POST")

        class Http(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Http(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def record(self, reply, seconds, request):
        timings = (reply or {}).get("timings") or {}
        usage = (reply or {}).get("usage") or {}
        cached = timings.get("cache_n")
        if cached is None:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        processed = timings.get("prompt_n")
        prompt = (processed + (cached or 0)) if processed is not None else usage.get("prompt_tokens")
        completion = timings.get("predicted_n", usage.get("completion_tokens"))
        with self.lock:
            self.records.append({"prompt": prompt, "cached": cached, "completion": completion,
                                 "seconds": round(seconds, 2), "max_tokens": request.get("max_tokens"),
                                 "stream": bool(request.get("stream"))})

    def take(self):
        with self.lock:
            out, self.records = self.records, []
        return out


def cache_summary(records):
    prompt = sum(r["prompt"] or 0 for r in records)
    cached = sum(r["cached"] or 0 for r in records)
    completions = [r["completion"] for r in records if r["completion"] is not None]
    return {"requests": len(records), "prompt_tokens": prompt, "cached_tokens": cached,
            "cache_reuse": round(cached / prompt, 3) if prompt else None,
            "completion_tokens": completions}


# ---------------------------------------------------------------------------------------------------------
# The server.

def start_server(model, vouch=None, port=PORT, log_path=None, nice=19):
    """`vouch model serve --model MODEL` on `port` (niced unless nice=0), once /health answers."""
    log = open(log_path or os.path.join(WORK, f"llama-server-{model}.log"), "w")
    argv = [vouch or VOUCH, "model", "serve", "--model", model, "--port", str(port)]
    if nice:
        argv = ["nice", "-n", str(nice)] + argv
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline:
        if p.poll() is not None:
            sys.exit(f"vouch model serve exited {p.returncode}; see {log.name}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return p
        except OSError:
            pass
        time.sleep(1)
    stop(p)
    sys.exit("llama-server did not become healthy in 10 minutes")


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def run_proc(cmd, cwd, env, log_path, kill_after):
    """Runs cmd in its own process group; killed (SIGINT, then SIGKILL) after kill_after seconds."""
    with open(log_path, "w") as log:
        t0 = time.time()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True)
        killed = False
        try:
            code = p.wait(kill_after)
        except BaseException as e:
            if not isinstance(e, subprocess.TimeoutExpired):  # Ctrl-C of the bench: no orphan harness
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise
            killed = True
            os.killpg(p.pid, signal.SIGINT)
            try:
                code = p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                code = p.wait()
    return code, time.time() - t0, killed


def commit_all(repo, branch, message):
    """Commits what is in the working tree (the .gitignore applies) on a new branch; False if nothing."""
    sh(["git", "checkout", "-q", "-B", branch], repo)
    sh(["git", "add", "-A"], repo)
    if sh(["git", "diff", "--cached", "--quiet"], repo, check=False).returncode == 0:
        return False
    sh(["git", "commit", "-q", "--no-verify", "-m", message], repo)
    return True


def run_vouch(name, d, proxy, a):
    repo = os.path.join(d, "repo")
    make_repo(name, repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_") and k != "RUST_LOG"}
    env.update(GIT_ENV, VOUCH_CACHE=os.path.join(d, "cache"), VOUCH_DATA=os.path.join(d, "data"),
               XDG_CONFIG_HOME=os.path.join(d, "config"))
    report_path = os.path.join(d, "report.json")
    # The endpoint probe's result, as a user has it after the first run: each run has a cache of its own, so
    # it is carried from run to run (probing every run cost 20-70 s and evicted the server's cached prompt).
    probes = os.path.join(WORK, f"probe-cache-{a.model}-{a.port}")
    if os.path.isdir(probes):
        shutil.copytree(probes, os.path.join(d, "cache", "probe"), dirs_exist_ok=True)
    cmd = ["nice", "-n", "19", VOUCH, "run", "--task", os.path.join(TASKS, name + ".md"), "--repo", repo,
           "--endpoint", proxy.url, "--max-turns", str(a.turns), "--wall-time", f"{a.wall}s",
           "--max-tokens", str(a.max_tokens), "--author", "Agent <agent@example.com>", "--json", report_path,
           "--strategy", a.strategy]
    code, wall, killed = run_proc(cmd, d, env, os.path.join(d, "vouch.log"), a.wall + a.grace)
    if os.path.isdir(os.path.join(d, "cache", "probe")):
        shutil.copytree(os.path.join(d, "cache", "probe"), probes, dirs_exist_ok=True)
    rep = json.load(open(report_path)) if os.path.exists(report_path) else {}
    status = rep.get("status") or ("killed" if killed else f"exit {code}")
    # The final change: the branch's commit, else what the worktree holds uncommitted.
    head = None
    branch = rep.get("branch") or f"vouch/{name}"
    if sh(["git", "rev-parse", "--verify", "-q", branch], repo, check=False).returncode == 0 and \
            sh(["git", "rev-list", "--count", f"main..{branch}"], repo).stdout.strip() != "0":
        head = branch
    worktrees = glob.glob(os.path.join(d, "data", "workspaces", "*", name))
    if worktrees and sh(["git", "status", "--porcelain"], worktrees[0]).stdout.strip():
        if commit_all(worktrees[0], "vouch-final", "vouch's uncommitted final state"):
            head = "vouch-final"
    return repo, head, {"claimed": status, "stop_reason": rep.get("stop_reason"), "turns": rep.get("turns"),
                        "exit": code, "killed": killed, "wall_s": round(wall, 1)}


def run_mini(name, d, proxy, a, mini):
    repo = os.path.join(d, "repo")
    make_repo(name, repo)
    _, body = front(name)
    traj = os.path.join(d, "traj.json")
    cmd, env = mswea.command(mini, d, proxy.url, body, traj, repo,
                             extra=[f"agent.step_limit={a.turns}",
                                    f"model.model_kwargs.max_tokens={a.max_tokens}"],
                             max_output_tokens=a.max_tokens)
    code, wall, killed = run_proc(["nice", "-n", "19"] + cmd, repo, env, os.path.join(d, "mini.log"), a.wall)
    info = json.load(open(traj)).get("info", {}) if os.path.exists(traj) else {}
    head = "mini-final" if commit_all(repo, "mini-final", "mini-swe-agent's final state") else None
    sh(["git", "checkout", "-q", "main"], repo, check=False)
    return repo, head, {"claimed": info.get("exit_status") or ("killed" if killed else f"exit {code}"),
                        "turns": (info.get("model_stats") or {}).get("api_calls"), "exit": code,
                        "killed": killed, "wall_s": round(wall, 1)}


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {"runs": []}


def save(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def run(a):
    names = tasks(a.tasks)
    harnesses = a.harness.split(",")
    os.makedirs(WORK, exist_ok=True)
    path = a.json or os.path.join(ROOT, "bench", "results", f"agent_success-{a.model}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = load(path) if a.resume else {"runs": []}
    data.update(model=a.model, limits={"turns": a.turns, "wall_s": a.wall, "max_tokens": a.max_tokens},
                server_nice=a.server_nice,
                machine=f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().machine}",
                mini_swe_agent=mswea.MSWEA_VERSION)
    done = {(r["task"], r["harness"]) for r in data["runs"]}
    # Harness by harness over blocks of tasks: consecutive runs of one harness share its system prompt, which
    # the server's one slot then serves from its cache (a first prompt costs minutes on a loaded machine).
    blocks = [names[i:i + a.block] for i in range(0, len(names), a.block)]
    todo = [(n, h) for block in blocks for h in harnesses for n in block if (n, h) not in done]
    print(f"model {a.model}; limits per task and harness: {a.turns} turns, {a.wall} s wall time, "
          f"{a.max_tokens} tokens per reply; {len(todo)} runs to do, {len(done)} already done", flush=True)
    if not todo:
        table(data, a.markdown)
        return 0
    mini = mswea.ensure_venv() if "mini" in harnesses else None
    server = start_server(a.model, port=a.port, nice=a.server_nice)
    proxy = Proxy(a.port)
    try:
        for name, harness in todo:
            d = tempfile.mkdtemp(prefix=f"{harness}-{name}-", dir=WORK)
            proxy.take()
            t0 = time.time()
            if harness == "vouch":
                repo, head, res = run_vouch(name, d, proxy, a)
            else:
                repo, head, res = run_mini(name, d, proxy, a, mini)
            res.update(cache_summary(proxy.take()))
            if head:
                solved, verdict, bite, reasons = gate(repo, head, os.path.join(d, "judge.json"))
            else:
                solved, verdict, bite, reasons = False, "no change", None, []
            res.update(task=name, harness=harness, solved=solved, gate=verdict, bite=bite,
                       strategy=a.strategy if harness == "vouch" else None,
                       reasons=reasons[:3], dir=d, total_s=round(time.time() - t0, 1),
                       finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            data["runs"].append(res)
            save(path, data)
            print(f"{name:24} {harness:5} solved {str(solved):5} claimed {res['claimed']:<12} "
                  f"turns {res['turns']} wall {res['wall_s']} s cache {res['cache_reuse']} "
                  f"gate {verdict}/{bite}", flush=True)
    finally:
        stop(server)
    table(data, a.markdown)
    return 0


def table(data, markdown):
    runs = {(r["task"], r["harness"]): r for r in data["runs"]}
    names = sorted({r["task"] for r in data["runs"]})
    harnesses = [h for h in ("vouch", "mini") if any(r["harness"] == h for r in data["runs"])]
    lim = data.get("limits", {})
    print(f"\nmodel {data.get('model')}, {lim.get('turns')} turns, {lim.get('wall_s')} s, "
          f"{lim.get('max_tokens')} tokens per reply; {data.get('machine')}\n")
    head = ["task"] + [f"{h} {c}" for h in harnesses for c in ("solved", "claimed", "turns", "wall s", "cache")]
    rows = []
    for n in names:
        row = [n]
        for h in harnesses:
            r = runs.get((n, h))
            if not r:
                row += ["-", "missing", "-", "-", "-"]
                continue
            reuse = f"{r['cache_reuse'] * 100:.0f}%" if r.get("cache_reuse") is not None else "-"
            claimed = "killed at wall time" if r.get("killed") else str(r["claimed"])
            if r.get("stop_reason") and r["claimed"] == "incomplete":
                claimed += f" ({r['stop_reason']})"
            row += ["yes" if r["solved"] else "no", claimed, str(r["turns"]), f"{r['wall_s']:.0f}", reuse]
        rows.append(row)
    total = ["solved"]
    for h in harnesses:
        rs = [r for r in data["runs"] if r["harness"] == h]
        solved = sum(r["solved"] for r in rs)
        walls = [r["wall_s"] for r in rs]
        prompt = sum(r["prompt_tokens"] for r in rs)
        cached = sum(r["cached_tokens"] for r in rs)
        total += [f"{solved}/{len(rs)}", "", "", f"median {statistics.median(walls):.0f}" if walls else "-",
                  f"{cached / prompt * 100:.0f}%" if prompt else "-"]
    rows.append(total)
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *rows)]
        for row in [head] + rows:
            print("  ".join(x.ljust(w) for x, w in zip(row, widths)))
    false = [r for r in data["runs"] if r["harness"] == "vouch" and r["claimed"] == "verified" and not r["solved"]]
    print(f"\nvouch claimed verified but not solved: {len(false)}"
          + (f" ({', '.join(r['task'] for r in false)})" if false else ""))
    comps = [c for r in data["runs"] for c in r.get("completion_tokens", [])]
    if comps:
        comps.sort()
        q = lambda p: comps[min(len(comps) - 1, int(p * len(comps)))]
        print(f"completion tokens per reply (both harnesses, {len(comps)} replies): median {q(0.5)}, "
              f"p90 {q(0.9)}, p99 {q(0.99)}, max {comps[-1]}")


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    # SIGTERM (and SIGINT, which a background job ignores) stop the server and the running harness.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--tasks")
    r = sub.add_parser("run")
    r.add_argument("--model", choices=["qwen-0.5b", "qwen-1.5b"], required=True)
    r.add_argument("--tasks")
    r.add_argument("--harness", default="vouch,mini")
    r.add_argument("--strategy", choices=["tools", "guided"], default="tools",
                   help="vouch run --strategy: the model drives tools, or vouch asks for code")
    r.add_argument("--json")
    r.add_argument("--resume", action="store_true")
    r.add_argument("--markdown", action="store_true")
    r.add_argument("--turns", type=int, default=15)
    r.add_argument("--wall", type=int, default=600, help="seconds per task and harness")
    r.add_argument("--grace", type=int, default=300, help="seconds after --wall before vouch is killed "
                   "(its gate and repair run after the wall time)")
    r.add_argument("--max-tokens", type=int, default=2048)
    r.add_argument("--port", type=int, default=PORT,
                   help="llama-server's port (another one runs a second model beside the first)")
    r.add_argument("--server-nice", type=int, default=19,
                   help="nice of llama-server (0 on a quiet machine; the harnesses always run at 19)")
    r.add_argument("--block", type=int, default=3, help="tasks per block: each harness runs a block in a row")
    t = sub.add_parser("table")
    t.add_argument("--json", required=True)
    t.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if a.cmd == "check":
        return check(tasks(a.tasks))
    if a.cmd == "table":
        table(load(a.json), a.markdown)
        return 0
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
