#!/usr/bin/env python3
"""Per-turn harness overhead of `vouch run` against mini-swe-agent, side by side in one run (issue 5).

Both harnesses drive the same 50-turn task against the same scripted OpenAI-compatible server (this file,
stdlib only, zero model latency: headers and body in one write, TCP_NODELAY; SSE when a request asks for a
stream, as vouch does by default, one whole call per chunk; plain JSON otherwise, as litellm asks), each in a
fresh copy of a small Python fixture repository (calc.py, tests/, pyproject.toml, hermetic git env):

  vouch  49 cheap native tool calls the rails accept (read_file of varying ranges, list_files, search and a
         small edit every fourth turn, so neither the repeated-call nor the stall rail fires), then
         `submit` NO-GO: no gate runs, the measurement is the agent loop alone. Checked: report.json says
         status no-go, turns 50, and the server answered 50 chat requests.
  mini   mini-swe-agent (pinned, from PyPI, in a venv) through its own `mini` CLI with its default `mini.yaml`
         (v2: one `bash` tool call per reply), yolo and exit-immediately: 49 cheap bash commands
         (cat, ls, grep, nl|sed, a sed -i edit), then `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`. Checked: the
         trajectory says exit_status Submitted and 50 API calls.

Measurement, per harness process (never the server, which runs in this process):
  CPU    user+sys of the harness process itself, all its threads, excluding the commands it runs. The
         harness is reaped in two steps: waitid(WNOWAIT) waits for its exit and leaves a zombie whose
         /proc/<pid>/stat still holds the CPU of the children it reaped (cutime+cstime, fields 16, 17, in
         clock ticks); then wait4 reaps it and gives its rusage (microseconds) including those children.
         own = rusage - children. vouch runs no child processes (libgit2, in-process tools), so its figure is
         exact; mini-swe-agent's bash commands are subtracted with tick truncation, which can overstate its
         own CPU by < 2 ticks (20 ms) per run, i.e. < 0.4 ms per turn.
  RSS    peak resident set of the harness process: VmHWM from /proc/<pid>/status, polled every 1 ms, the last
         sample before exit (the mm is gone in the zombie), so growth in the final millisecond is missed.
         wait4's ru_maxrss is not used: it includes the forked bench interpreter's RSS before exec.
  per turn = whole-process CPU / 50, so start-up (e.g. importing litellm) is part of it; each run is paired
         with a 1-turn run of the same harness (submit at once), giving start-up and the marginal CPU per
         turn, (CPU(50) - CPU(1)) / 49.

Runs alternate vouch, mini, vouch, ... N times each; the table has medians.
Usage: python3 bench/agent_bench.py [--runs N] [--only vouch|mini] [--keep] [--vouch-arg=-q ...]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import mswea
from mswea import GIT_ENV, MSWEA_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOUCH = os.path.join(ROOT, "target", "release", "vouch")
TURNS = 50
CLK_TCK = os.sysconf("SC_CLK_TCK")
EXTRA_VOUCH_ARGS = []

# ---------------------------------------------------------------------------------------------------------
# The fixture.

CALC = '''"""A tiny calculator."""

# counter: 0


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b
'''
TEST = '''from calc import add, sub, mul, div


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(3, 1) == 2


def test_mul():
    assert mul(2, 3) == 6


def test_div():
    assert div(6, 3) == 2
'''
PYPROJECT = '''[project]
name = "calc"
version = "0.1.0"

[tool.pytest.ini_options]
pythonpath = ["."]
'''
README = "# calc\n\nA tiny calculator used by vouch's agent benchmark.\n"


def sh(cmd, cwd, env=None, check=True):
    full = dict(os.environ, **GIT_ENV, **(env or {}))
    r = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        sys.exit(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}")
    return r


def make_fixture(repo):
    os.makedirs(os.path.join(repo, "tests"))
    for rel, text in [("calc.py", CALC), ("tests/test_calc.py", TEST), ("pyproject.toml", PYPROJECT),
                      ("README.md", README), (".gitignore", "__pycache__/\n")]:
        with open(os.path.join(repo, rel), "w") as f:
            f.write(text)
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "calc"], repo)


# ---------------------------------------------------------------------------------------------------------
# The scripts: the answer for turn n (1-based) is decided by the number of assistant messages in the request.

def vouch_call(n, turns):
    """Turn n's native tool call for vouch: (name, arguments)."""
    if n == turns:
        return "submit", {"verdict": "NO-GO", "summary": "Benchmark run: nothing to change."}
    k = n % 4
    if k == 0:  # a small edit: the counter comment goes up by one (distinct arguments every time)
        i = n // 4
        return "edit", {"path": "calc.py", "old_string": f"# counter: {i - 1}\n", "new_string": f"# counter: {i}\n"}
    if k == 1:
        start = 1 + (n // 4) % 20
        return "read_file", {"path": "calc.py", "start_line": start, "end_line": start + 5}
    if k == 2:
        return "list_files", {"path": "." if (n // 4) % 2 == 0 else "tests"}
    pats = ["def ", "return", "assert", "import", "counter", "raise", "calc", "b == 0"]
    return "search", {"pattern": pats[(n // 4) % len(pats)]}


def mini_command(n, turns):
    if n == turns:
        return "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    k = n % 5
    i = n // 5
    if k == 0:
        return f"sed -i 's/# counter: {i - 1}$/# counter: {i}/' calc.py"
    if k == 1:
        return f"nl -ba calc.py | sed -n '{1 + i},{6 + i}p'"
    if k == 2:
        return "ls -la" if i % 2 == 0 else "ls tests"
    if k == 3:
        return "cat calc.py" if i % 2 == 0 else "cat tests/test_calc.py"
    pats = ["def ", "return", "assert", "import", "counter", "raise", "calc", "b == 0", "mul", "div"]
    return f"grep -rn '{pats[i % len(pats)]}' --include='*.py' ."


class Server:
    """The scripted OpenAI-compatible server. Counts chat requests per harness kind."""

    def __init__(self):
        self.lock = threading.Lock()
        self.chats = self.streamed = 0
        self.turns = TURNS
        self.problems = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *a):
                pass

            def reply(self, code, body, ctype="application/json"):
                if isinstance(body, str):
                    body = body.encode()
                reason = {200: "OK", 404: "Not Found", 418: "I'm a teapot"}.get(code, "X")
                head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n").encode()
                self.wfile.write(head + body)  # one write: no Nagle/delayed-ACK stall

            def do_GET(self):
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self.reply(200, json.dumps({"object": "list", "data": [
                        {"id": "local", "object": "model", "created": 0, "owned_by": "bench"}]}))
                else:  # /props and the rest: not llama-server
                    self.reply(404, json.dumps({"error": {"message": "not found"}}))

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    outer.problem(f"unexpected POST {self.path}")
                    self.reply(418, "{}")
                    return
                body = json.loads(raw)
                self.reply(*outer.answer(body))

        class Http(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Http(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def problem(self, text):
        with self.lock:
            self.problems.append(text)

    def reset(self, turns):
        with self.lock:
            self.chats, self.streamed, self.problems, self.turns = 0, 0, [], turns

    def answer(self, body):
        with self.lock:
            self.chats += 1
            self.streamed += bool(body.get("stream"))
            turns = self.turns
        messages = body.get("messages") or []
        n = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        if n > turns:
            self.problem(f"a request for turn {n}")
            return 418, "{}"
        if "bash" in tools:
            name, args = "bash", {"command": mini_command(n, turns)}
            content = f"THOUGHT: step {n} of the benchmark script."
        else:
            if "submit" not in tools and n == 1:
                self.problem(f"no vouch tools offered: {tools}")
            name, args = vouch_call(n, turns)
            content = ""
        message = {"role": "assistant", "content": content, "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}]}
        usage = {"prompt_tokens": 100 * n, "completion_tokens": 20, "total_tokens": 100 * n + 20,
                 "prompt_tokens_details": {"cached_tokens": 100 * (n - 1)}}
        base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": body.get("model") or "local"}
        if not body.get("stream"):
            reply = dict(base, object="chat.completion", usage=usage,
                         choices=[{"index": 0, "message": message, "finish_reason": "tool_calls"}])
            return 200, json.dumps(reply)
        # Streaming: a role chunk, one chunk with the whole call, a finish chunk, a usage chunk, [DONE].
        chunk = dict(base, object="chat.completion.chunk")
        call = dict(message["tool_calls"][0], index=0)
        events = [
            dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": content},
                                  "finish_reason": None}]),
            dict(chunk, choices=[{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]),
            dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
            dict(chunk, choices=[], usage=usage),
        ]
        sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        return 200, sse, "text/event-stream"


# ---------------------------------------------------------------------------------------------------------
# Measuring one harness process.

def measure(cmd, cwd, env, log_path):
    """Runs cmd; returns dict(cpu own s, cpu incl children s, rss_kb VmHWM, code, wall s)."""
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        pid = p.pid
        hwm = 0
        status_path = f"/proc/{pid}/status"
        done = threading.Event()

        def poll():
            nonlocal hwm
            while not done.is_set():
                try:
                    with open(status_path) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                hwm = max(hwm, int(line.split()[1]))
                                break
                except (OSError, ValueError):
                    pass
                time.sleep(0.001)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        wall = time.perf_counter() - t0
        done.set()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()  # fields[0] is field 3 (state)
        cutime, cstime = int(fields[13]), int(fields[14])
        _, status, ru = os.wait4(pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        poller.join()
    return {
        "cpu": ru.ru_utime + ru.ru_stime - (cutime + cstime) / CLK_TCK,
        "cpu_children": (cutime + cstime) / CLK_TCK,
        "cpu_all": ru.ru_utime + ru.ru_stime,
        "rss_kb": hwm,
        "code": p.returncode,
        "wall": wall,
    }


def run_vouch(server, work, i, turns):
    d = os.path.join(work, f"vouch-{turns}-{i}")
    repo = os.path.join(d, "repo")
    os.makedirs(repo)
    make_fixture(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_") and k != "RUST_LOG"}
    env.update(GIT_ENV, VOUCH_CACHE=os.path.join(d, "cache"))
    cmd = [VOUCH, "run", "--repo", repo, "--endpoint", server.url, "--prompt", "Benchmark: look around, then submit.",
           "--author", "Agent <agent@example.com>", "--stall-turns", "100", "--max-turns", str(TURNS + 10)] + EXTRA_VOUCH_ARGS
    server.reset(turns)
    m = measure(cmd, d, env, os.path.join(d, "vouch.log"))
    reports = [os.path.join(d, "workspaces", t, ".vouch", "report.json")
               for t in (os.listdir(os.path.join(d, "workspaces")) if os.path.isdir(os.path.join(d, "workspaces")) else [])]
    report = json.load(open(reports[0])) if reports else {}
    ok = (report.get("status") == "no-go" and report.get("turns") == turns and server.chats == turns
          and not server.problems)
    if not ok:
        log = open(os.path.join(d, "vouch.log"), errors="replace").read()[-3000:]
        sys.exit(f"vouch run {i} did not run the script: exit {m['code']}, status {report.get('status')}, "
                 f"stop_reason {report.get('stop_reason')}, turns {report.get('turns')}, chats {server.chats}, "
                 f"problems {server.problems}\n{log}")
    m["turns"] = report["turns"]
    m["streamed"] = server.streamed
    return m


def run_mini(server, work, i, mini, turns):
    d = os.path.join(work, f"mini-{turns}-{i}")
    repo = os.path.join(d, "repo")
    os.makedirs(repo)
    make_fixture(repo)
    traj = os.path.join(d, "traj.json")
    cmd, env = mswea.command(mini, d, server.url, "Benchmark: look around, then submit.", traj, repo)
    server.reset(turns)
    m = measure(cmd, repo, env, os.path.join(d, "mini.log"))
    info = json.load(open(traj)).get("info", {}) if os.path.exists(traj) else {}
    calls = info.get("model_stats", {}).get("api_calls")
    ok = info.get("exit_status") == "Submitted" and calls == turns and server.chats == turns and not server.problems
    if not ok:
        log = open(os.path.join(d, "mini.log"), errors="replace").read()[-3000:]
        sys.exit(f"mini run {i} did not run the script: exit {m['code']}, exit_status {info.get('exit_status')}, "
                 f"api_calls {calls}, chats {server.chats}, problems {server.problems}\n{log}")
    m["turns"] = calls
    m["streamed"] = server.streamed
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["vouch", "mini"])
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--vouch-arg", action="append", default=[], help="an extra argument for vouch run (repeatable)")
    a = ap.parse_args()
    EXTRA_VOUCH_ARGS.extend(a.vouch_arg)

    want = [a.only] if a.only else ["vouch", "mini"]
    if "vouch" in want:
        # Another build holding the lock is waited for by cargo itself.
        if subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT).returncode != 0:
            sys.exit("cargo build --release failed")
    mini = mswea.ensure_venv() if "mini" in want else None

    server = Server()
    work = tempfile.mkdtemp(prefix="vouch-agent-bench-")
    results = {k: [] for k in want}
    starts = {k: [] for k in want}
    try:
        for i in range(a.runs):
            for kind in want:
                for turns in (TURNS, 1):
                    m = (run_vouch(server, work, i, turns) if kind == "vouch"
                         else run_mini(server, work, i, mini, turns))
                    (results if turns == TURNS else starts)[kind].append(m)
                    print(f"  {kind:5} run {i + 1}, {turns:2} turns: cpu {m['cpu'] * 1000:7.1f} ms own, "
                          f"{m['cpu_all'] * 1000:7.1f} ms incl. children, VmHWM {m['rss_kb'] / 1024:6.1f} MB, "
                          f"wall {m['wall']:.2f} s, {m['streamed']}/{turns} requests streamed", file=sys.stderr)
    finally:
        server.httpd.shutdown()
        if a.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    med = lambda kind, key, rs=results: statistics.median(m[key] for m in rs[kind])
    rows = {}
    for kind in want:
        rows[kind] = {
            "turn_ms": med(kind, "cpu") * 1000 / TURNS,
            "turn_all_ms": med(kind, "cpu_all") * 1000 / TURNS,
            "start_ms": med(kind, "cpu", starts) * 1000,
            "marginal_ms": statistics.median(
                (m["cpu"] - s["cpu"]) * 1000 / (TURNS - 1) for m, s in zip(results[kind], starts[kind])),
            "cpu_ms": med(kind, "cpu") * 1000,
            "rss_mb": med(kind, "rss_kb") / 1024,
            "wall_s": med(kind, "wall"),
        }
    names = {"vouch": "vouch run", "mini": f"mini-swe-agent {MSWEA_VERSION}"}
    print(f"\n{TURNS}-turn scripted task, zero model latency, median of {a.runs} alternating runs, "
          f"{os.cpu_count()} cores\n")
    print("| harness | CPU per turn (own) | CPU total (own) | start-up (1-turn run) | marginal CPU per turn "
          "| CPU per turn incl. tool commands | peak RSS | wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in want:
        r = rows[kind]
        print(f"| {names[kind]} | {r['turn_ms']:.2f} ms | {r['cpu_ms']:.0f} ms | {r['start_ms']:.0f} ms | "
              f"{r['marginal_ms']:.2f} ms | {r['turn_all_ms']:.2f} ms | {r['rss_mb']:.1f} MB | {r['wall_s']:.2f} s |")
    if len(want) == 2:
        v, m = rows["vouch"], rows["mini"]
        ratio = m["turn_ms"] / v["turn_ms"] if v["turn_ms"] > 0 else float("inf")
        print(f"\nmini-swe-agent / vouch, CPU per turn (own): {ratio:.1f}x; marginal CPU per turn: "
              f"{m['marginal_ms'] / v['marginal_ms']:.1f}x; peak RSS: {m['rss_mb'] / v['rss_mb']:.1f}x")
    if "vouch" in want:
        v = rows["vouch"]
        print(f"\ntargets: <= 1 ms CPU per turn: {'met' if v['turn_ms'] <= 1 else 'MISSED'} "
              f"({v['turn_ms']:.2f} ms); <= 30 MB peak RSS: {'met' if v['rss_mb'] <= 30 else 'MISSED'} "
              f"({v['rss_mb']:.1f} MB)", end="")
        if len(want) == 2:
            print(f"; >= 10x less CPU per turn than mini-swe-agent: {'met' if ratio >= 10 else 'MISSED'} "
                  f"({ratio:.1f}x)")
        else:
            print()


if __name__ == "__main__":
    main()
