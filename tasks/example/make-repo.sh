#!/usr/bin/env bash
# Makes (or remakes) an example repository from tasks/example/repo: one commit on main.
#   make-repo.sh [DIR]   DIR defaults to workspaces/example-repo (tasks/example.md's repo); remaking that one
#                        also removes the agent's old worktree workspaces/example, which belonged to it.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="vouch example" GIT_AUTHOR_EMAIL="example@vouch.invalid"
export GIT_COMMITTER_NAME="vouch example" GIT_COMMITTER_EMAIL="example@vouch.invalid"
dest="${1:-workspaces/example-repo}"
rm -rf "$dest"
if [ "$dest" = workspaces/example-repo ]; then rm -rf workspaces/example; fi
mkdir -p "$dest"
cp -r tasks/example/repo/. "$dest/"
cd "$dest"
git init -q -b main
printf 'workspaces/\n.vouch/\n' >> .git/info/exclude
git add -A
git commit -q -m "textstats: word and line counts"
