#!/usr/bin/env bash
# The gate demo: build vouch, make a copy of the example repository under workspaces/demo-repo, and gate two
# changes: a real fix with a regression test (PASS), and a change that claims GO but breaks a test (FAIL, claim
# overturned). It leaves workspaces/example-repo and the agent's workspaces/example alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME="vouch example" GIT_AUTHOR_EMAIL="example@vouch.invalid"
export GIT_COMMITTER_NAME="vouch example" GIT_COMMITTER_EMAIL="example@vouch.invalid"

echo "== building vouch (release)"
cargo build --release
vouch="$PWD/target/release/vouch"
reports="$PWD/workspaces/example-reports"

# Replaces the body of word_count in src/lib.rs with $1.
replace_body() {
  BODY="$1" awk '
    /^pub fn word_count/ { print; getline; print "    " ENVIRON["BODY"]; next }
    { print }' src/lib.rs > src/lib.rs.new
  mv src/lib.rs.new src/lib.rs
}

echo "== creating workspaces/demo-repo from tasks/example/repo"
rm -rf "$reports"
mkdir -p "$reports"
bash tasks/example/make-repo.sh workspaces/demo-repo
cd workspaces/demo-repo

# --fresh-rooms on both gates: the repository was just made anew at the same path, and a clean room reused
# from an earlier demo still points at the removed repository's commits (the gate then fails to check out).
echo "== change 1: a real fix with a regression test"
git switch -q -c fix/word-count
replace_body 'text.split_whitespace().count()'
cat >> tests/words.rs <<'RS'

#[test]
fn counts_words_separated_by_tabs_and_newlines() {
    assert_eq!(word_count("one\ttwo\nthree"), 3);
}
RS
git commit -q -am "word_count: split on any whitespace" -m "Agent-Verdict: GO"
"$vouch" gate --base main --fresh-rooms --markdown "$reports/good.md" --json "$reports/good.json" && good=$? || good=$?

echo
echo "== change 2: claims GO, but its new test fails"
git switch -q main
git switch -q -c fix/word-count-wrong
replace_body "text.split(['\\t', ' ']).filter(|w| !w.is_empty()).count()"
cat >> tests/words.rs <<'RS'

#[test]
fn counts_words_separated_by_tabs_and_newlines() {
    assert_eq!(word_count("one\ttwo\nthree"), 3);
}
RS
git commit -q -am "word_count: split on tabs" -m "Agent-Verdict: GO"
"$vouch" gate --base main --fresh-rooms --markdown "$reports/wrong.md" --json "$reports/wrong.json" && wrong=$? || wrong=$?

echo
echo "== result: the real fix exited $good (0 = pass), the wrong one exited $wrong (1 = fail)"
echo "   reports: $reports/{good,wrong}.{md,json}"
[ "$good" = 0 ] && [ "$wrong" = 1 ]
