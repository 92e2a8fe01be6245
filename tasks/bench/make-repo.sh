#!/usr/bin/env bash
# Makes a benchmark task's repository from tasks/bench/NAME/repo: one commit on main. The task's reference fix
# (tasks/bench/NAME/fix.patch) stays here, out of the repository the harness works in.
#   make-repo.sh NAME [DIR]   DIR defaults to workspaces/bench/NAME (the task file's repo)
set -euo pipefail
cd "$(dirname "$0")/../.."
name="${1:?usage: make-repo.sh NAME [DIR]}"
src="tasks/bench/$name/repo"
[ -d "$src" ] || { echo "no task $name ($src)" >&2; exit 2; }
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="vouch bench" GIT_AUTHOR_EMAIL="bench@vouch.invalid"
export GIT_COMMITTER_NAME="vouch bench" GIT_COMMITTER_EMAIL="bench@vouch.invalid"
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
dest="${2:-workspaces/bench/$name}"
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$src/." "$dest/"
cd "$dest"
git init -q -b main
printf 'workspaces/\n.vouch/\n' >> .git/info/exclude
git add -A
git commit -q -m "$name: the code and its tests"
