#!/usr/bin/env python3
"""Runs every rerace command that README.md and docs/*.md show, as written, and prints a table.

  doc-commands.py RERACE_BIN [--timeout S] [--fill] [FILE.md ...]

A command is a line of a fenced block, or an inline `code span`, that starts with `rerace `
(after `$ ` and VAR=value assignments; a block's `$ export VAR=value` line applies to the
commands below it in that block). Each runs under bash in the source tree's root with
`rerace` meaning RERACE_BIN, in a temporary folder that links every entry of the tree (so what
a command writes lands there, and a later command finds it). A command that names what is not
there (a placeholder such as TRACE or my_fix.py), a fragment of prose (`rerace check`) or a GPU
recording is listed with the reason, not run. The docs' <!-- example: --> blocks are run and compared byte for byte by
gen-doc-examples.py --check (make test); this covers the rest.
The table gives, per command: where, the exit code, the engine line (`engine: ...`) if any, and
the first line of the report or the error, so that a reader can check each against the text
around it (issue 28: "every command in README.md and docs/*.md run as written").

--fill: a command whose only placeholders are in FILL below (TRACE, F, $T, my_fix.py, ...) runs
with each replaced by a sample of its kind, said in the table ("filled: TRACE=..."); the others
stay listed with their reason.

Exit 0 when no command crashed or timed out (exit >= 128 or a timeout); the exit codes rerace
documents (0 ok, 1 found, 3 inconclusive, 6x usage/data) are what the docs say they are, which
the reader checks.
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
COMMAND = re.compile(r"^(?:\$ )?((?:[A-Z_]+=\S+ )*rerace \S.*)$")
EXPORT = re.compile(r"^\$ export ([A-Z_]+=\S+)$")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_.]*$")
# What --fill puts for a placeholder: a sample of what the docs mean by it.
FILL = {
    "TRACE": "traces/samples/triton-none-h200.rrt",
    "TRACE...": "traces/samples/triton-none-h200.rrt traces/samples/native-none-h200.rrt",
    "SYNTH": "traces/samples/synth-h200-shape.rrt",
    "$T": "traces/samples/triton-none-h200.rrt",
    "$E": "--engine python --python-exe build/py/venv312/bin/python",
    "F": "lock-run",
    "S": "pct",
    "N": "2",
    "BUG": "lost-update",
    "my_fix.py": "tests/data/patches/reach_works.py",
    "my_lock.py": "tests/data/patches/reach_works.py",
}
OUTPUT_FLAGS = ("-o", "--save-schedule", "--save-failures", "--junit", "--perfetto")


def commands(path):
    text = open(path, encoding="utf-8").read()
    out = []
    for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S):
        line_no = text.count("\n", 0, m.start()) + 2
        exports = ""  # a block's `$ export VAR=value` holds for the commands after it
        for i, line in enumerate(m.group(1).split("\n")):
            e = EXPORT.match(line.strip())
            if e:
                exports += e.group(1) + " "
                continue
            c = COMMAND.match(line.strip())
            if c:
                out.append((f"{os.path.relpath(path, ROOT)}:{line_no + i}", exports + c.group(1)))
    fenced = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for m in re.finditer(r"`([^`\n]+)`", fenced):
        c = COMMAND.match(m.group(1).strip())
        if c:
            out.append((f"{os.path.relpath(path, ROOT)}:{fenced.count(chr(10), 0, m.start()) + 1}", c.group(1)))
    return out


def strip_comment(cmd):
    try:
        words = shlex.split(cmd, comments=True)
    except ValueError:
        return None
    return words


def not_runnable(words, cwd):
    """Why a command cannot run as written here (a placeholder, a fragment of prose, a GPU
    recording), or None."""
    at = words.index("rerace")
    rest = words[at + 1:]
    if not rest or "|" in rest[0]:
        return "fragment: no subcommand"
    if any(w.startswith("[") for w in rest):
        return "fragment: a synopsis ([optional] parts)"
    if any("|" in w and w != "|" for w in rest):
        return "fragment: alternatives (A|B)"
    if rest[0] == "record":
        return "needs a GPU machine (CUPTI): run there"
    args = []
    for w in rest[1:]:
        if w in ("|", "&&", ";"):
            break
        args.append(w)
    if "--help" in args or rest[0] == "--help":
        return None
    skip_next = False
    for w in args:
        if skip_next:
            skip_next = False
            continue
        if w in OUTPUT_FLAGS:
            skip_next = True
            continue
        if "..." in w or w.startswith("$") or PLACEHOLDER.match(w):
            return f"placeholder: {w}"
        if w.startswith("-"):
            continue
        if re.search(r"\.(rrt|py|sched|json)$", w) and not os.path.exists(os.path.join(cwd, w)):
            return f"placeholder: {w} (not here)"
    if rest[0] in ("replay", "fuzz", "check", "show", "export", "merge") and \
            all(w.startswith("-") for w in args):
        return "fragment: no trace"
    return None


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    rerace = os.path.abspath(args.pop(0))
    timeout = 600
    if args[:1] == ["--timeout"]:
        timeout = int(args[1])
        args = args[2:]
    fill = "--fill" in args
    args = [a for a in args if a != "--fill"]
    files = args or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    bindir = tempfile.mkdtemp(prefix="doc-commands-bin-")
    os.symlink(rerace, os.path.join(bindir, "rerace"))
    env = dict(os.environ, NO_COLOR="1", NO_PROGRESS="1", PATH=bindir + os.pathsep + os.environ["PATH"])
    # The commands run in a folder that links each entry of the source tree: inputs resolve as
    # in the tree, what they write (-o, --save-*, a.json) lands beside, and later commands of
    # a doc find what earlier ones made (synth -o fla-step.rrt, then check fla-step.rrt).
    cwd = tempfile.mkdtemp(prefix="doc-commands-")
    for entry in os.listdir(ROOT):
        if entry != ".git":
            os.symlink(os.path.join(ROOT, entry), os.path.join(cwd, entry))
    seen = set()
    bad = 0
    print("| where | command | exit | engine | first line |")
    print("|---|---|---|---|---|")
    for path in files:
        for where, cmd in commands(path):
            if cmd in seen:
                continue
            seen.add(cmd)
            shown = cmd.replace("|", "\\|")
            words = strip_comment(cmd)
            if words is None:
                print(f"| {where} | `{shown}` | - | - | not a shell command as written |")
                continue
            why = not_runnable(words, cwd)
            filled = []
            while why and fill and why.startswith("placeholder: "):
                word = why[len("placeholder: "):].split(" (")[0]
                if word not in FILL or (filled and word in [f[0] for f in filled]):
                    break
                filled.append((word, FILL[word]))
                cmd = re.sub(r"(?<![\w/.-])" + re.escape(word) + r"(?![\w/.-])", lambda _: FILL[word], cmd)
                words = strip_comment(cmd)
                why = not_runnable(words, cwd) if words is not None else "not a shell command"
            if why:
                print(f"| {where} | `{shown}` | - | - | {why} |")
                continue
            try:
                r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True,
                                   text=True, timeout=timeout)
                code, out = r.returncode, r.stderr + r.stdout
            except subprocess.TimeoutExpired:
                code, out = "timeout", ""
            lines = [l for l in out.splitlines() if l.strip()]
            engine = next((l for l in lines if l.startswith("engine: ") and "--engine auto" in l), "")
            engine = engine.split(" (")[0].replace("engine: ", "") if engine else ""
            first = next((l for l in lines if not l.startswith(("engine:", "tuner ", "patch ", "NB:"))), "")
            if code == "timeout" or (isinstance(code, int) and (code >= 128 or code < 0)):
                bad += 1
            said = "filled: " + ", ".join(f"{w}={v}" for w, v in filled) + "; " if filled else ""
            print(f"| {where} | `{shown}` | {code} | {engine} | {said}{first[:140].replace('|', '/')} |")
            sys.stdout.flush()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
