#!/usr/bin/env python3
"""The step table of a tuner release, read from the installed wheel's source, and its check.

A tuner model (replay/model/src/models/*.cc) is built from a step table: the ordered accesses of the
tuner's shared state (the attributes of `self` that a method other than `__init__` itself
stores: nargs, cache, restore_copies, ...) in every function of the class (methods and the
functions nested in them: `run.benchmark`, `__init__._post_hook`), each with its line. A model
declares the table it follows in a comment block, and its labels quote the source lines:

    // step-table: triton 3.6.0 triton/runtime/autotuner.py Autotuner
    //   __init__._post_hook:74 R restore_copies
    //   ...
    // end step-table
    .kPostHookRead = "autotuner.py:74 _post_hook: kwargs[name].copy_(self.restore_copies[name])",

R is a read, W a store of the attribute, M a store into it (`self.cache[key] = ...`). Within a
line, accesses are in evaluation order (a value before the name it is stored to).

  step-table.py emit PACKAGE VERSION FILE CLASS   the table of an installed release
  step-table.py --check MODEL                     MODEL: a file, or a name under replay/model/src/models
  step-table.py --check-all                       every model file that declares a table

`--check` fails (exit 1, one line per difference) when the declared table is not the wheel's,
or a label's `FILE:LINE FUNC: TEXT` / `FILE:LINE in FUNC` does not match that line of the
source (TEXT is compared without whitespace; `...` stands for any text). Exit 77 (a ctest
SKIP) when the release is not installed under --py-root (tools/scripts/python-envs.sh installs
them); --check-all skips those releases and exits 77 only when it could check none.
A new release is `emit` pasted into the new model's file.
"""
import argparse
import ast
import glob
import os
import re
import sys

SKIP = 77
MUTATORS = {"pop", "popitem", "update", "clear", "setdefault", "append", "extend", "remove"}
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "replay", "model", "src", "models"))
BEGIN = re.compile(r"^\s*//\s*step-table:\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
ROW = re.compile(r"^\s*//\s+(\S+:\d+ [RWM] \w+)\s*$")
END = re.compile(r"^\s*//\s*end step-table\s*$")
# "autotuner.py:74 _post_hook: TEXT" (a step) and "triton/runtime/autotuner.py:74 in _post_hook"
# (where an error is raised). A label names a file by its last component.
LABEL = re.compile(r"\b([\w/]*?(\w+\.py)):(\d+) (?:in (\w+)|([\w.]+): (.*))$")


class Missing(Exception):
    """The release is not installed."""


def find_source(root, package, version, relpath):
    """The file `relpath` of `package` `version` installed under `root` (a pip --target dir
    or a venv's site-packages that holds its .dist-info)."""
    dist = re.sub(r"[-_.]+", "_", package).lower() + "-" + version + ".dist-info"
    dirs = sorted(glob.glob(os.path.join(root, "*"))) + sorted(
        glob.glob(os.path.join(root, "*", "lib", "python*", "site-packages")))
    for d in dirs:
        for entry in (os.listdir(d) if os.path.isdir(d) else []):
            if entry.lower() == dist and os.path.isfile(os.path.join(d, relpath)):
                return os.path.join(d, relpath)
    raise Missing(f"{package} {version} is not installed under {root} "
                  f"(tools/scripts/python-envs.sh installs it)")


class _Steps(ast.NodeVisitor):
    """The accesses of self.<field> in one function body, in evaluation order; nested
    functions are collected as functions of their own."""

    def __init__(self, qualname, fields, out):
        self.q, self.fields, self.out, self.rows = qualname, fields, out, []

    def access(self, node, kind):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self" and node.attr in self.fields):
            self.rows.append(f"{self.q}:{node.lineno} {kind} {node.attr}")
            return True
        return False

    def visit_FunctionDef(self, node):
        collect(node, f"{self.q}.{node.name}", self.fields, self.out)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        f, args = node.func, node.args
        if (isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and len(args) >= 2
                and isinstance(args[0], ast.Name) and args[0].id == "self"
                and isinstance(args[1], ast.Constant) and args[1].value in self.fields):
            self.rows.append(f"{self.q}:{node.lineno} R {args[1].value}")
        if (isinstance(f, ast.Attribute) and f.attr in MUTATORS and self.access(f.value, "M")):
            for a in args + [k.value for k in node.keywords]:
                self.visit(a)
            return
        self.generic_visit(node)

    def visit_Lambda(self, node):
        pass  # not called where it is defined

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Store):
            if not self.access(node, "W"):
                self.visit(node.value)
        elif not self.access(node, "R"):
            self.visit(node.value)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self.access(node.value, "M"):
            self.visit(node.slice)
            return
        self.visit(node.value)
        self.visit(node.slice)

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node):
        read = self.access(node.target, "R")
        self.visit(node.value)
        if read:
            self.access(node.target, "W")
        else:
            self.visit(node.target)

    def visit_For(self, node):
        self.visit(node.iter)
        self.visit(node.target)
        for s in node.body + node.orelse:
            self.visit(s)

    def _comprehension(self, node, parts):
        for g in node.generators:
            self.visit(g.iter)
            for cond in g.ifs:
                self.visit(cond)
        for p in parts:
            self.visit(p)

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])


def collect(fn, qualname, fields, out):
    v = _Steps(qualname, fields, out)
    out.append(v.rows)  # before the nested functions: the table is in source order
    for stmt in fn.body:
        v.visit(stmt)


def shared_fields(cls):
    """Attributes of self stored by any function but __init__'s own body."""
    fields = set()

    def walk(fn, top_init):
        for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn:
                walk(node, False)
            target = node
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                target = node.value
            elif not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)):
                continue
            if (not top_init and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == "self"):
                fields.add(target.attr)

    for fn in cls.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            walk(fn, fn.name == "__init__")
    return fields


def table(source, cls_name):
    """The step table (a list of "FUNC:LINE KIND FIELD") of class `cls_name` in `source`."""
    tree = ast.parse(source)
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls_name]
    if not classes:
        raise ValueError(f"no class {cls_name}")
    fields = shared_fields(classes[0])
    groups = []
    for fn in classes[0].body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            collect(fn, fn.name, fields, groups)
    return [row for g in groups for row in g]


def functions_at(source):
    """line -> the names of the functions (innermost last) whose body holds it."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.lineno, node.end_lineno, node.name))
    return lambda line: [n for a, b, n in sorted(spans) if a <= line <= b]


def statement_text(lines, line):
    """The source of the statement starting at `line` (up to 8 lines), without whitespace."""
    out = ""
    for i in range(line - 1, min(line + 7, len(lines))):
        out += re.sub(r"\s+", "", lines[i])
        if i >= line - 1 and out.count("(") + out.count("[") + out.count("{") <= \
                out.count(")") + out.count("]") + out.count("}"):
            break
    return out


def check_labels(text, path, source, src_name):
    """The differences between the labels of the model file `text` and `source`."""
    lines, where = source.splitlines(), functions_at(source)
    errors = []
    text = re.sub(r'"\s+"', "", text)  # C++ joins adjacent literals
    for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', text):
        m = LABEL.search(lit)
        if not m or m.group(2) != src_name:
            continue
        line = int(m.group(3))
        if line > len(lines):
            errors.append(f"{path}: '{lit}': {src_name} has {len(lines)} lines")
            continue
        func = m.group(4) or m.group(5).split(".")[-1]
        if func not in where(line):
            errors.append(f"{path}: '{lit}': line {line} is not in {func} "
                          f"(in {'.'.join(where(line)) or 'no function'})")
        if m.group(6) is None:
            continue
        have, pos = statement_text(lines, line), 0
        for part in re.sub(r"\s+", "", m.group(6)).split("..."):
            found = have.find(part, pos)
            if found < 0:
                errors.append(f"{path}: '{lit}': line {line} is `{lines[line - 1].strip()}`")
                break
            pos = found + len(part)
    return errors


def declared(text, path):
    """[(package, version, file, class, rows)] of the model file's step-table blocks."""
    lines, blocks = text.splitlines(), []
    for i, line in enumerate(lines):
        m = BEGIN.match(line)
        if not m:
            continue
        rows = []
        for row in lines[i + 1:]:
            if END.match(row):
                break
            r = ROW.match(row)
            if not r:
                raise ValueError(f"{path}: step-table row `{row.strip()}` is not `// FUNC:LINE R|W|M FIELD`")
            rows.append(r.group(1))
        else:
            raise ValueError(f"{path}: step-table block has no `// end step-table`")
        blocks.append(m.groups() + (rows,))
    return blocks


def check_model(path, root):
    """The differences between model file `path` and its releases' sources: every block it
    declares (a file may follow several releases) and every label against each source of its
    file name. Raises Missing when no block's release is installed; a block whose release is
    not installed is reported as a line starting with SKIP."""
    with open(path) as f:
        text = f.read()
    blocks = declared(text, path)
    if not blocks:
        return [f"{path}: no step-table block"]
    errors, skipped = [], []
    for package, version, relpath, cls, rows in blocks:
        try:
            src_path = find_source(root, package, version, relpath)
        except Missing as e:
            skipped.append(e)
            continue
        with open(src_path) as f:
            source = f.read()
        want = table(source, cls)
        for i in range(max(len(rows), len(want))):
            a = rows[i] if i < len(rows) else "(nothing)"
            b = want[i] if i < len(want) else "(nothing)"
            if a != b:
                errors.append(f"{path}: step {i + 1}: declared `{a}`, {package} {version} has `{b}`")
        errors += check_labels(text, path, source, os.path.basename(relpath))
    if len(skipped) == len(blocks):
        raise skipped[0]
    return errors + [f"SKIP {os.path.basename(path)}: {e}" for e in skipped]


def model_path(name):
    if os.path.isfile(name):
        return name
    p = os.path.join(MODELS, name if name.endswith(".cc") else name.replace("-", "_").replace(".", "_") + ".cc")
    if not os.path.isfile(p):
        raise FileNotFoundError(f"no model file {name} (looked for {p})")
    return p


def models_with_tables():
    return [p for p in sorted(glob.glob(os.path.join(MODELS, "*.cc")) + sorted(glob.glob(os.path.join(MODELS, "*.h"))))
            if any(BEGIN.match(line) for line in open(p))]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--py-root", default=os.environ.get("RERACE_PY_ROOT", "build/py"))
    ap.add_argument("--check", metavar="MODEL")
    ap.add_argument("--check-all", action="store_true")
    ap.add_argument("emit", nargs="*", help="emit PACKAGE VERSION FILE CLASS")
    a = ap.parse_args(argv)
    try:
        if a.emit:
            if len(a.emit) != 5 or a.emit[0] != "emit":
                ap.error("emit takes PACKAGE VERSION FILE CLASS")
            _, package, version, relpath, cls = a.emit
            with open(find_source(a.py_root, package, version, relpath)) as f:
                rows = table(f.read(), cls)
            print(f"// step-table: {package} {version} {relpath} {cls}")
            for r in rows:
                print(f"//   {r}")
            print("// end step-table")
            return 0
        paths = [model_path(a.check)] if a.check else models_with_tables() if a.check_all else None
        if paths is None:
            ap.error("emit, --check MODEL or --check-all")
        checked, failed = 0, False
        for p in paths:
            try:
                errors = check_model(p, a.py_root)
            except Missing as e:
                print(f"SKIP {os.path.basename(p)}: {e}")
                continue
            checked += 1
            for e in errors:
                print(e)
            errors = [e for e in errors if not e.startswith("SKIP ")]
            failed |= bool(errors)
            if not errors:
                print(f"ok {os.path.basename(p)}")
        return 1 if failed else (0 if checked else SKIP)
    except Missing as e:
        print(f"step-table: {e}", file=sys.stderr)
        return SKIP
    except (OSError, ValueError, SyntaxError) as e:
        print(f"step-table: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
