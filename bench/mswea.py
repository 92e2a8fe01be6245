"""mini-swe-agent for vouch's benchmarks: the pinned package in a venv, and its `mini` command line against an
OpenAI-compatible server (the documented local-model setup: the model registered with litellm at a tiny
price, so cost tracking works without errors; the cost limit off). Shared by agent_bench.py (per-turn
overhead) and agent_success.py (tasks solved)."""

import json
import os
import subprocess
import sys
import tempfile

MSWEA_VERSION = "2.4.6"
VENV = os.path.expanduser("~/.cache/vouch-bench-venv")
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_TERMINAL_PROMPT": "0",
}


def ensure_venv():
    """The path of the `mini` command, installing mini-swe-agent==MSWEA_VERSION into VENV if needed."""
    py = os.path.join(VENV, "bin", "python")
    mini = os.path.join(VENV, "bin", "mini")
    with tempfile.TemporaryDirectory(prefix="mswea-") as cfg:  # importing it creates its config dir
        env = dict(os.environ, MSWEA_SILENT_STARTUP="1", MSWEA_GLOBAL_CONFIG_DIR=cfg)
        r = subprocess.run([py, "-c", "import minisweagent; print(minisweagent.__version__)"],
                           capture_output=True, text=True, env=env) if os.path.exists(py) else None
    if r is None or r.returncode != 0 or r.stdout.strip().splitlines()[-1:] != [MSWEA_VERSION]:
        print(f"installing mini-swe-agent=={MSWEA_VERSION} into {VENV}", file=sys.stderr)
        if not os.path.exists(py):
            subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", f"mini-swe-agent=={MSWEA_VERSION}"], check=True)
    return mini


def command(mini, d, api_base, task, traj, repo, extra=(), max_output_tokens=4096):
    """(argv, env) of one `mini` run: `task` in `repo`, trajectory to `traj`, scratch files under `d`.
    `extra` are more `-c key=value` settings."""
    registry = os.path.join(d, "registry.json")
    with open(registry, "w") as f:
        json.dump({"openai/local": {"max_tokens": 32768, "max_input_tokens": 32768,
                                    "max_output_tokens": max_output_tokens,
                                    "input_cost_per_token": 1e-9, "output_cost_per_token": 1e-9,
                                    "litellm_provider": "openai", "mode": "chat", "supports_function_calling": True}}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MSWEA_", "OPENAI_", "LITELLM_"))}
    env.update(GIT_ENV, MSWEA_CONFIGURED="true", MSWEA_SILENT_STARTUP="1", MSWEA_COST_TRACKING="ignore_errors",
               LITELLM_MODEL_REGISTRY_PATH=registry,
               MSWEA_GLOBAL_CONFIG_DIR=os.path.join(d, "mswea-config"), LITELLM_LOCAL_MODEL_COST_MAP="True",
               NO_COLOR="1", TERM="dumb")
    cmd = [mini, "-y", "--exit-immediately", "-l", "0", "-m", "openai/local", "-t", task,
           "-o", traj, "-c", "mini.yaml",
           "-c", f"model.model_kwargs.api_base={api_base}/v1", "-c", "model.model_kwargs.api_key=dummy",
           "-c", f"environment.cwd={repo}"]
    for kv in extra:
        cmd += ["-c", kv]
    return cmd, env
