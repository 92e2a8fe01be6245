#!/usr/bin/env bash
# Makes (or remakes) the example repository workspaces/example-repo from tasks/example/repo: one commit on main.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="vouch example" GIT_AUTHOR_EMAIL="example@vouch.invalid"
export GIT_COMMITTER_NAME="vouch example" GIT_COMMITTER_EMAIL="example@vouch.invalid"
rm -rf workspaces/example-repo workspaces/example
mkdir -p workspaces/example-repo
cp -r tasks/example/repo/. workspaces/example-repo/
cd workspaces/example-repo
git init -q -b main
printf 'workspaces/\n.vouch/\n' >> .git/info/exclude
git add -A
git commit -q -m "textstats: word and line counts"
