#!/usr/bin/env python3
"""DESIGN.md names every file under src/, and every path it names exists.

A file counts as named when DESIGN.md holds its path in backticks (`src/gate/mod.rs`), or when one entry (a list
item with its indented continuation lines) holds its directory (`src/gate/bite/`) and its file name
(`plan.rs`), each in backticks. A backticked path under src/, tests/, gates/, tasks/, bench/, benches/ or .ci/
without wildcards or placeholders must exist, so a file that moves or goes is not left named here.

Usage: python3 .ci/check_design.py   (exit 1, naming the files, when the check fails)
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKED_ROOTS = ("src/", "tests/", "gates/", "tasks/", "bench/", "benches/", ".ci/")


def entries(text):
    """The list items of a Markdown text, each with its continuation lines; other lines are entries too."""
    out = []
    for line in text.splitlines():
        item = re.match(r"\s*- ", line)
        if out and not item and line.startswith(" ") and line.strip():
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def spans(text):
    """The contents of the backtick spans in `text`."""
    return re.findall(r"`([^`\n]+)`", text)


def src_files():
    """Every file under src/, as a path from the repository root."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "src")):
        dirnames.sort()
        for name in sorted(filenames):
            found.append(os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/"))
    return found


def main():
    with open(os.path.join(ROOT, "DESIGN.md"), encoding="utf-8") as f:
        text = f.read()
    named = set(spans(text))
    entry_spans = [set(spans(e)) for e in entries(text)]

    missing = []
    for path in src_files():
        if path in named:
            continue
        directory, name = path.rsplit("/", 1)
        if any(directory + "/" in s and name in s for s in entry_spans):
            continue
        missing.append(path)

    stale = []
    for span in sorted(named):
        if not span.startswith(CHECKED_ROOTS) or any(c in span for c in "*{}<> "):
            continue
        if not os.path.exists(os.path.join(ROOT, span)):
            stale.append(span)

    for path in missing:
        print(f"DESIGN.md does not mention {path}", file=sys.stderr)
    for path in stale:
        print(f"DESIGN.md names {path}, which does not exist", file=sys.stderr)
    if missing or stale:
        return 1
    print(f"DESIGN.md names all {len(src_files())} files under src/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
