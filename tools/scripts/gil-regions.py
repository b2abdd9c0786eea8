#!/usr/bin/env python3
"""Makes (or checks) a tuner model's table of the windows the GIL makes atomic.

For each pair of consecutive accesses the model takes in one function of Triton's autotuner.py
(the lines in the model's label table), the code between them is disassembled, as each CPython
version compiles it, and read with the engine's rules (replay/engine/python/rerace_real/gil.py,
docs/GIL.md): if every path from the first access to the second has no place where that version
can hand the GIL over, the window is atomic (warmup 0); if the only such places are calls that
stop checking once specialized (len, isinstance, type(x)), it is atomic once warm (warmup =
the version's Rules.warmup); otherwise (a checking call, a backward jump, the second access
not reached forward) it is split (-1). The table is written between the
markers `// BEGIN GIL REGIONS` and `// END GIL REGIONS` of the model's file.

    tools/scripts/gil-regions.py triton_3_6 [--check] [--py-root /work/main/build/py]

The wheel's autotuner.py is read from the py root (venv312's Triton 3.6 for triton_3_6,
triton-X.Y.0/ for the others); the interpreters are the py root's venv (3.11) and venv312
(3.12): other versions get no table (the model then makes every access a step). Exit 0: written / the file matches; 1: the
file differs (--check); 77: the py root lacks a venv or the wheel (nothing checked).
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# The model's accesses (Labels fields) and what each does in the bytecode: the first
# instruction of its line that loads or stores the attribute (or stores into it by subscript).
ACCESS = {
    "kRunSetNargs": ("store", "nargs"), "kRunReadNargs": ("load", "nargs"),
    "kRunCacheCheck": ("load", "cache"), "kRunCacheRead": ("load", "cache"),
    "kBestConfig": ("store", "best_config"), "kRunClearNargs": ("store", "nargs"),
    "kBenchTime": ("store", "bench_time"), "kCacheWrite": ("subscr", "cache"),
    "kBenchmarkNargs": ("load", "nargs"), "kConfigsTimings": ("store", "configs_timings"),
    "kPostHookRead": ("load", "restore_copies"), "kPostHookReset": ("store", "restore_copies"),
}
# Consecutive accesses of one function, in the order the model (triton_3_6.cc) takes them.
PAIRS = [
    ("kRunSetNargs", "kRunReadNargs"), ("kRunSetNargs", "kBestConfig"),
    ("kRunReadNargs", "kRunCacheCheck"), ("kRunCacheCheck", "kRunCacheRead"),
    ("kRunCacheRead", "kBestConfig"), ("kBestConfig", "kRunClearNargs"),
    ("kBenchTime", "kCacheWrite"), ("kCacheWrite", "kBenchmarkNargs"),
    ("kBenchmarkNargs", "kConfigsTimings"),
    ("kPostHookRead", "kPostHookRead"), ("kPostHookRead", "kPostHookReset"),
]
def find_models():
    """Model name -> (model file, wheel dir under the py root, Triton version, table's name), for
    every file under replay/model/src/models/ with GIL markers: the version from its step-table block,
    the wheel from triton-VERSION/ (3.6.0: venv312's own Triton), the name kTritonXYGil. A new
    model's file with the markers is all this script needs."""
    out = {}
    folder = os.path.join(ROOT, "replay", "model", "src", "models")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".cc"):
            continue
        text = open(os.path.join(folder, name)).read()
        marker = re.search(r"// BEGIN GIL REGIONS \(tools/scripts/gil-regions.py (\w+);", text)
        block = re.search(r"// step-table: triton (\d+)\.(\d+)\.(\d+) ", text)
        if marker is None or block is None:
            continue
        version = ".".join(block.groups())
        wheel = ("venv312/lib/python3.12/site-packages" if version == "3.6.0"
                 else "triton-" + version)
        out[marker.group(1)] = ("replay/model/src/models/" + name, wheel, version,
                                "kTriton%s%sGil" % block.groups()[:2])
    return out


MODELS = find_models()

# Runs inside each interpreter: prints the windows as JSON.
ANALYSE = r'''
import dis, json, sys, builtins
sys.path.insert(0, sys.argv[1])
import importlib.util
spec = importlib.util.spec_from_file_location("gil", sys.argv[1] + "/rerace_real/gil.py")
gil = importlib.util.module_from_spec(spec); spec.loader.exec_module(gil)
rules = gil.rules_for(sys.version_info[:2])
src = open(sys.argv[2]).read()
todo = json.loads(sys.argv[3])
top = compile(src, "autotuner.py", "exec")
codes = []
def walk(c):
    codes.append(c)
    for k in c.co_consts:
        if hasattr(k, "co_code"): walk(k)
walk(top)
def instrs(c):
    out = list(dis.get_instructions(c))
    line = None
    for i in out:
        ln = getattr(i, "positions", None)
        ln = ln.lineno if ln is not None and ln.lineno is not None else i.starts_line
        if isinstance(ln, int) and ln is not True and ln is not False: line = ln
        i.__dict__["_line"] = line if not isinstance(i, tuple) else None
    return out
def find(kind, attr, line):
    for c in codes:
        ins = list(dis.get_instructions(c))
        cur = None
        for k, i in enumerate(ins):
            pos = getattr(i, "positions", None)
            ln = pos.lineno if pos is not None and pos.lineno is not None else None
            if ln is None and isinstance(i.starts_line, int) and not isinstance(i.starts_line, bool):
                ln = i.starts_line
            if ln is not None: cur = ln
            if cur != line: continue
            if kind == "load" and i.opname in ("LOAD_ATTR", "LOAD_METHOD") and i.argval == attr:
                return c, ins, k
            if kind == "store" and i.opname == "STORE_ATTR" and i.argval == attr:
                return c, ins, k
            if kind == "subscr" and i.opname == "STORE_SUBSCR":
                return c, ins, k
    return None
UNCOND = {"JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP",
          "JUMP_NO_INTERRUPT"}
END = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
CALLS = {"CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_KW"}
SPECIAL = {"len": (builtins.len, 1), "isinstance": (builtins.isinstance, 2), "type": (type, 1)}
def callee(ins, k):
    """The builtin a CALL calls when it is len/isinstance/type loaded by LOAD_GLOBAL just before
    its arguments (no other call between), else None."""
    for j in range(k - 1, max(k - 8, -1), -1):
        o = ins[j]
        if o.opname in CALLS or o.opname == "PRECALL" and j != k - 1: return None
        if o.opname in ("LOAD_GLOBAL", "LOAD_NAME") and o.argval in SPECIAL:
            f, n = SPECIAL[o.argval]
            argc = ins[k].arg if ins[k].opname != "PRECALL" else ins[k].arg
            return f if argc == n else None
    return None
def check(ins, k, jumped):
    """'always', 'cold' or None: can the instruction hand the GIL over."""
    i = ins[k]
    if i.opname in CALLS:
        f = callee(ins, k)
        if f is None: return "always"
        if rules.after_call(f, True, 1): return "always"
        return "cold" if rules.after_call(f, False, 1) else None
    if i.opname == "PRECALL": return None
    if rules.at_opcode(i.opname, True, jumped=jumped): return "always"
    return None
out = []
for a, b in todo:
    fa = find(*a); fb = find(*b)
    if fa is None or fb is None:
        out.append({"pair": [a, b], "error": "not found"}); continue
    ca, ins, ia = fa; cb, _, ib = fb
    if ca is not cb or ib <= ia:
        out.append({"pair": [a, b], "result": -1, "why": "another function or a backward jump"}); continue
    by_off = {i.offset: n for n, i in enumerate(ins)}
    worst = [0, ""]
    reached = [False]
    seen = set()
    def visit(k, state):
        if (k, state) in seen: return
        seen.add((k, state))
        if k == ib:
            reached[0] = True
            if state == "always": worst[0] = -1
            elif state == "cold" and worst[0] == 0: worst[0] = 1
            return
        if k > ib or k >= len(ins): return
        i = ins[k]
        def go(n, jumped):
            c = check(ins, k, jumped)
            s = state
            if c == "always": s = "always"; worst[1] = worst[1] or "%s at offset %d" % (i.opname, i.offset)
            elif c == "cold" and s is None: s = "cold"
            if s == "cold" and not worst[1]: worst[1] = "%s (len/isinstance/type)" % i.opname
            visit(n, s)
        is_jump = i.opcode in dis.hasjrel or i.opcode in dis.hasjabs
        if i.opname in END: return
        if is_jump and i.opname not in ("SETUP_FINALLY", "SETUP_WITH", "SETUP_ASYNC_WITH",
                                        "SETUP_CLEANUP", "SETUP_EXCEPT", "SEND"):
            t = by_off.get(i.argval)
            if t is not None and t > k: go(t, True)
            elif t is not None:  # a loop: its backward jump may check (3.11+: always)
                worst[0] = -1
                worst[1] = worst[1] or "a backward jump (%s)" % i.opname
            if i.opname in UNCOND: return
            go(k + 1, False)
        else:
            go(k + 1, None)
    visit(ia + 1, None)
    res = worst[0] if reached[0] else -1
    if res == 0: worst[1] = ""
    if res == 1: res = rules.warmup if rules.warmup > 0 else -1
    out.append({"pair": [a, b], "result": res, "why": worst[1]})
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "windows": out}))
'''


def labels(model_file):
    """Labels field -> line, from the model's designated initializers."""
    text = open(model_file).read()
    out = {}
    for m in re.finditer(r'\.(k\w+) = "autotuner\.py:(\d+) ', text):
        out[m.group(1)] = int(m.group(2))
    return out


def interpreters(py_root):
    found = []
    for rel in ("venv/bin/python", "venv312/bin/python"):
        p = os.path.join(py_root, rel)
        if not os.access(p, os.X_OK):
            return None
        found.append(p)
    return found


def table(model, py_root):
    path, wheel, triton, var = MODELS[model]
    src = os.path.join(py_root, wheel, "triton/runtime/autotuner.py")
    if not os.path.exists(src):
        return None, "%s missing" % src
    pys = interpreters(py_root)
    if pys is None:
        return None, "%s lacks venv/ or venv312/ (tools/scripts/python-envs.sh makes them)" % py_root
    lines = labels(os.path.join(ROOT, path))
    todo = [[list(ACCESS[a]) + [lines[a]], list(ACCESS[b]) + [lines[b]]] for a, b in PAIRS]
    results = {}
    for py in pys:
        r = subprocess.run([py, "-c", ANALYSE, os.path.join(ROOT, "replay/engine/python"), src,
                            json.dumps(todo)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("gil-regions: %s failed: %s" % (py, r.stderr.strip()[-400:]))
        j = json.loads(r.stdout)
        results[j["python"]] = j["windows"]
    out = ["// BEGIN GIL REGIONS (tools/scripts/gil-regions.py %s; do not edit by hand)" % model]
    names = []
    for ver in sorted(results, key=lambda v: tuple(map(int, v.split(".")))):
        name = "%s%s" % (var, ver.replace(".", ""))
        names.append((ver, name))
        out.append("constexpr GilWindow %s[] = {" % name)
        for (a, b), w in zip(PAIRS, results[ver]):
            if "error" in w:
                sys.exit("gil-regions: %s: %s -> %s: an access not found in %s's bytecode"
                         % (model, a, b, ver))
            what = {-1: "split", 0: "atomic"}.get(w["result"], "atomic once warm")
            why = (": " + w["why"]) if w["why"] else ""
            out.append("    {.from = %d, .to = %d, .warmup = %d},  // %s -> %s: %s%s"
                       % (lines[a], lines[b], w["result"], a[1:], b[1:], what, why))
        out.append("};")
    out.append("constexpr GilTable %s[] = {" % var)
    for ver, name in names:
        out.append('    {.python = "%s", .windows = %s},' % (ver, name))
    out.append("};")
    out.append("// END GIL REGIONS")
    return "\n".join(out), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--py-root", default=os.environ.get("RERACE_PY_ROOT",
                                                        os.path.join(ROOT, "build", "py")))
    a = ap.parse_args()
    text, why = table(a.model, a.py_root)
    if text is None:
        print("gil-regions: skipped: " + why)
        return 77
    path = os.path.join(ROOT, MODELS[a.model][0])
    src = open(path).read()
    m = re.search(r"// BEGIN GIL REGIONS.*?// END GIL REGIONS", src, re.S)
    if m is None:
        sys.exit("gil-regions: %s has no BEGIN/END GIL REGIONS markers" % path)
    if a.check:
        # Versions without an interpreter here are left as the file has them.
        have = m.group(0)
        if have != text:
            print("gil-regions: %s differs from the bytecode; run tools/scripts/gil-regions.py %s"
                  % (path, a.model))
            import difflib
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True)))
            return 1
        print("gil-regions: %s matches the bytecode of Triton %s" % (path, MODELS[a.model][2]))
        return 0
    open(path, "w").write(src[:m.start()] + text + src[m.end():])
    print("gil-regions: wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
