#!/usr/bin/env python3
"""`vouch backlog` on 12 tasks against a zero-latency scripted model: wall time with --jobs 1 and --jobs 4, and
the harness's overhead per task (issue 14).

The server (this file, stdlib only) answers every task's conversation at once, statelessly: the task is the
title in the first user message, the answer is picked by the number of assistant messages so far. Each
conversation is four native tool calls (list_files, read_file, write_file, then submit NO-GO), so no gate runs
and what is measured is vouch alone: the backlog, its claims and records, and twelve child `vouch run`s each
with its worktree, transcript and report. Replies are written with TCP_NODELAY, headers and body in one write.

Measurement, per `vouch backlog` run:
  wall   from start to exit of the backlog process.
  CPU    user+sys from wait4 of the backlog process: its own and that of every process it reaped (the twelve
         `vouch run` children; they start nothing else here), divided by 12 tasks.
  RSS    peak resident set of any one vouch process (the backlog or a child): VmHWM from /proc/<pid>/status of
         the backlog and its children, polled every 2 ms (a child's growth in its last 2 ms can be missed).
Each run is checked: exit 1 (every task rejected: NO-GO), 12 rows in the JSON summary, 48 chat requests.
Runs alternate --jobs 1, --jobs 4, ... N times each in fresh fixtures; the table has medians.

Usage: python3 bench/backlog_bench.py [--runs N] [--vouch PATH]   (default target/release/vouch, else debug)
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = 12
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def script(n):
    """The assistant message for turn n (0-based) of any task."""
    calls = [
        ("list_files", {}),
        ("read_file", {"path": "calc.py"}),
        ("write_file", {"path": "calc.py", "content": FIXED}),
        ("submit", {"verdict": "NO-GO", "summary": "bench"}),
    ]
    name, args = calls[min(n, len(calls) - 1)]
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": f"call_{n}", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)}}],
    }


class Server:
    """A minimal HTTP/1.1 server with keep-alive; one thread per connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.chats = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn, _ = self.sock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    if k.strip().lower() == "content-length":
                        length = int(v.strip())
                while len(buf) < length:
                    buf += conn.recv(65536)
                body, buf = buf[:length], buf[length:]
                conn.sendall(self.answer(method, path, body))
        except (ConnectionError, OSError):
            return
        finally:
            conn.close()

    def answer(self, method, path, body):
        if method == "POST" and path == "/v1/chat/completions":
            req = json.loads(body)
            turn = sum(1 for m in req["messages"] if m["role"] == "assistant")
            with self.lock:
                self.chats += 1
            reply = {"id": "b", "object": "chat.completion",
                     "choices": [{"index": 0, "message": script(turn), "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
            status, payload = "200 OK", json.dumps(reply).encode()
        else:
            status, payload = "404 Not Found", b"{}"
        return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(payload)}\r\n\r\n").encode() + payload


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def fixture(root):
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    with open(os.path.join(repo, "calc.py"), "w") as f:
        f.write(CALC)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    tasks = os.path.join(root, "tasks")
    os.makedirs(tasks)
    for i in range(TASKS):
        with open(os.path.join(tasks, f"task-{i:02}.md"), "w") as f:
            f.write(f"---\ntitle: Task {i:02}\n---\nadd() subtracts.\n")
    return repo, tasks


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def one(vouch, server, jobs):
    root = tempfile.mkdtemp(prefix="vouch-backlog-bench-")
    try:
        repo, tasks = fixture(root)
        summary = os.path.join(root, "summary.json")
        env = {**os.environ, **GIT_ENV, "VOUCH_DATA": os.path.join(root, "data"),
               "VOUCH_CACHE": os.path.join(root, "cache"), "XDG_CONFIG_HOME": os.path.join(root, "config")}
        for k in ("VOUCH_ENDPOINT", "VOUCH_MODEL", "RUST_LOG"):
            env.pop(k, None)
        before = server.chats
        argv = [vouch, "backlog", tasks, "--repo", repo, "--endpoint", server.url, "--jobs", str(jobs),
                "--json", summary, "-q", "--", "--tool-mode", "native"]
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seen = {}
        while True:
            got, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if got:
                break
            for pid in [proc.pid] + children(proc.pid):
                seen[pid] = max(seen.get(pid, 0), hwm(pid))
            time.sleep(0.002)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu = ru.ru_utime + ru.ru_stime
        peak = max(seen.values()) if seen else 0
        stderr = proc.stderr.read().decode()
        rows = json.load(open(summary))["tasks"]
        assert proc.returncode == 1, (proc.returncode, stderr)
        assert len(rows) == TASKS and all(r["status"] == "rejected" for r in rows), rows
        assert server.chats - before == 4 * TASKS, server.chats - before
        return wall, cpu, peak / 1024
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vouch")
    args = ap.parse_args()
    vouch = args.vouch
    if not vouch:
        release = os.path.join(ROOT, "target", "release", "vouch")
        vouch = release if os.path.exists(release) else os.path.join(ROOT, "target", "debug", "vouch")
    vouch = os.path.abspath(vouch)
    server = Server()
    results = {1: [], 4: []}
    for _ in range(args.runs):
        for jobs in (1, 4):
            results[jobs].append(one(vouch, server, jobs))
    print(f"vouch: {vouch}; {TASKS} tasks x 4 turns, zero-latency model; median of {args.runs} runs each, alternating")
    print("| --jobs | wall | CPU per task | peak RSS (one vouch process) |")
    print("|---|---|---|---|")
    med = {}
    for jobs, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs) / TASKS
        rss = statistics.median(r[2] for r in rs)
        med[jobs] = wall
        print(f"| {jobs} | {wall:.2f}s | {cpu * 1000:.0f} ms | {rss:.1f} MB |")
    print(f"speed-up --jobs 4 over --jobs 1: {med[1] / med[4]:.2f}x on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
