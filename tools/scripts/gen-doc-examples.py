#!/usr/bin/env python3
"""Regenerates the examples in the docs from real runs, or checks that they are current.

  gen-doc-examples.py RERACE_BIN [--check] [FILE.md ...]

An example is a marker line followed by a fenced block:

  <!-- example: rerace check traces/samples/triton-none-h200.rrt --fix tls-nargs | head -3 -->
  ```
  (the command's output, written here by this script)
  ```

The command runs under bash in the source tree's root with `rerace` meaning RERACE_BIN, stdout
and stderr together, NO_COLOR and NO_PROGRESS set; whatever it prints replaces the block. rerace
is deterministic, so the same build gives the same bytes; `make test` runs this with --check
(ctest doc_examples_current), which fails with a diff when a doc no longer says what rerace
prints. Without FILEs: README.md and docs/*.md.
"""
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MARKER = re.compile(r"^<!-- example: (.*) -->$")


def run(command, bindir):
    env = dict(os.environ, NO_COLOR="1", NO_PROGRESS="1", PATH=bindir + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    out = r.stdout + r.stderr
    return out if out.endswith("\n") or not out else out + "\n"


def regenerate(text, bindir, path):
    lines = text.splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        m = MARKER.match(lines[i].rstrip("\n"))
        i += 1
        if not m:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            sys.exit(f"gen-doc-examples: {path}:{i}: an example marker must be followed by a ``` block")
        out.append(lines[i])
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        if i >= len(lines):
            sys.exit(f"gen-doc-examples: {path}: the block after line {i} is not closed")
        out.append(run(m.group(1), bindir))
        out.append(lines[i])
        i += 1
    return "".join(out)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit("usage: gen-doc-examples.py RERACE_BIN [--check] [FILE.md ...]")
    binary = os.path.abspath(args.pop(0))
    check = "--check" in args
    files = [a for a in args if a != "--check"] or (
        [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    stale = 0
    with tempfile.TemporaryDirectory() as bindir:
        os.symlink(binary, os.path.join(bindir, "rerace"))
        for path in files:
            with open(path) as f:
                text = f.read()
            if "<!-- example: " not in text:
                continue
            new = regenerate(text, bindir, path)
            if new == text:
                continue
            if check:
                stale += 1
                rel = os.path.relpath(path, ROOT)
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(keepends=True), new.splitlines(keepends=True),
                    f"{rel} (in the tree)", f"{rel} (what rerace prints now)"))
            else:
                with open(path, "w") as f:
                    f.write(new)
                print(f"gen-doc-examples: updated {os.path.relpath(path, ROOT)}")
    if stale:
        print(f"gen-doc-examples: {stale} file(s) out of date: run tools/scripts/gen-doc-examples.py "
              "build/bin/rerace")
        sys.exit(1)


if __name__ == "__main__":
    main()
