#!/usr/bin/env python3
"""`vouch probe --quick` against the managed llama-server: wall time, and its speed figures against the server's own.

For each model this starts `vouch model serve --model M` (the server `vouch run` manages), then

  1. runs `vouch probe --quick --json` straight against it `--runs` times and takes the median wall time;
  2. runs it once more through a recording proxy that keeps the `timings` object of every reply, picks out the
     speed requests (`ignore_eos`, 32 tokens: the probe's cold prompts, in depth order, `--reps` each) and
     recomputes, from the server's numbers alone, the mean prefill and decode tokens/s of each depth; then
     compares them with what the probe reported (`speed[]` of its JSON). A difference above 5% is a failure.

Usage:
  python3 bench/probe_quick.py [--vouch PATH] [--models smollm2,qwen-0.5b,qwen-1.5b] [--runs 3] [--json FILE]

Needs `vouch model setup` done for the models (the llama-server build and the GGUF files). Nothing here runs
in CI. Python 3.11, standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agent_success import Proxy, start_server, stop  # noqa: E402

PORT = 18021
TOLERANCE = 0.05


class TimingProxy(Proxy):
    """The recording proxy, keeping each chat reply's whole `timings` and the request's speed markers."""

    def __init__(self, upstream_port):
        super().__init__(upstream_port)
        self.raw = []
        self.raw_lock = threading.Lock()

    def record(self, reply, seconds, request):
        with self.raw_lock:
            self.raw.append({"timings": (reply or {}).get("timings"), "max_tokens": request.get("max_tokens"),
                             "ignore_eos": bool(request.get("ignore_eos"))})


def probe(vouch, endpoint, out_json):
    t0 = time.monotonic()
    c = subprocess.run([vouch, "probe", "--endpoint", endpoint, "--quick", "--json", out_json],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if c.returncode != 0:
        sys.exit(f"vouch probe exited {c.returncode}:\n{c.stdout}\n{c.stderr}")
    with open(out_json) as f:
        return wall, json.load(f), c.stdout


def compare(report, raw):
    """The probe's speed[] against means recomputed from the server's timings of the speed requests."""
    speed = report.get("speed") or []
    samples = [r["timings"] for r in raw if r["ignore_eos"] and r["max_tokens"] == 32 and r["timings"]]
    reps = len(samples) // max(len(speed), 1)
    rows, worst = [], 0.0
    for i, s in enumerate(speed):
        group = samples[i * reps:(i + 1) * reps]
        prefill = statistics.mean(t["prompt_per_second"] for t in group)
        decode = statistics.mean(t["predicted_per_second"] for t in group)
        dp = abs(s["prefill_tps_mean"] - prefill) / prefill
        dd = abs(s["decode_tps_mean"] - decode) / decode
        worst = max(worst, dp, dd)
        rows.append({"depth_tokens": s["depth_tokens"], "requests": len(group),
                     "probe_prefill_tps": round(s["prefill_tps_mean"], 1), "server_prefill_tps": round(prefill, 1),
                     "probe_decode_tps": round(s["decode_tps_mean"], 1), "server_decode_tps": round(decode, 1),
                     "prefill_diff": round(dp, 4), "decode_diff": round(dd, 4)})
    return rows, worst, len(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vouch", default="target/release/vouch")
    ap.add_argument("--models", default="smollm2,qwen-0.5b,qwen-1.5b")
    ap.add_argument("--runs", type=int, default=3, help="direct probe runs per model for the wall-time median")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    vouch = os.path.abspath(a.vouch)
    work = tempfile.mkdtemp(prefix="vouch-probe-quick-")
    results = []
    for model in a.models.split(","):
        server = start_server(model, vouch, PORT, os.path.join(work, f"server-{model}.log"), nice=0)
        try:
            endpoint = f"http://127.0.0.1:{PORT}"
            walls = []
            for i in range(a.runs):
                wall, report, _ = probe(vouch, endpoint, os.path.join(work, f"{model}-{i}.json"))
                walls.append(wall)
                print(f"{model}: run {i + 1}/{a.runs}: {wall:.1f}s", flush=True)
            proxy = TimingProxy(PORT)
            _, report, console = probe(vouch, proxy.url, os.path.join(work, f"{model}-proxied.json"))
            proxy.httpd.shutdown()
            rows, worst, n = compare(report, proxy.raw)
        finally:
            stop(server)
        res = {"model": model, "runs": a.runs, "wall_s": [round(w, 1) for w in walls],
               "wall_median_s": round(statistics.median(walls), 1), "speed_requests": n,
               "depths": rows, "worst_diff": round(worst, 4), "within_5pct": worst <= TOLERANCE,
               "tool_mode": report.get("tool_mode"), "warnings": report.get("warnings")}
        results.append(res)
        print(f"{model}: median {res['wall_median_s']}s over {a.runs} runs; speed vs server timings: worst "
              f"difference {worst * 100:.2f}% over {n} requests", flush=True)
    print()
    print("| model | probe --quick wall (median) | runs | depth | prefill tok/s probe / server | "
          "decode tok/s probe / server | worst difference |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for d in r["depths"]:
            print(f"| {r['model']} | {r['wall_median_s']}s | {r['runs']} | {d['depth_tokens']} | "
                  f"{d['probe_prefill_tps']} / {d['server_prefill_tps']} | {d['probe_decode_tps']} / "
                  f"{d['server_decode_tps']} | {max(d['prefill_diff'], d['decode_diff']) * 100:.2f}% |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "machine": os.uname().nodename, "cores": os.cpu_count()}, f, indent=1)
    sys.exit(0 if all(r["within_5pct"] for r in results) else 1)


if __name__ == "__main__":
    main()
