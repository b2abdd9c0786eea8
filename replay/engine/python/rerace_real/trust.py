"""Which module names written in a recording the engine may import.

A trace is a file strangers send (bug reports, CI artifacts): the names in it (the kernel's
module in the call-begin detail, the module a patched ``run`` came from) must never choose code
to run. The engine imports only what the user named:

- ``--patch`` files (engine_setup.py imports them by path, never by a name from the trace);
- a module named by the recording only when it resolves, without importing anything, to a file
  inside an installed-packages folder of this interpreter (``site-packages``/``dist-packages``
  on ``sys.path``) or inside a ``PYTHONPATH`` entry the user set; never the current directory
  (the engine runs with ``PYTHONSAFEPATH=1`` and ``-c``'s empty entry removed), never the
  standard library (``this``, ``antigravity``, ``os`` run code or replay stock code), never a
  built-in or frozen module;
- rerace's own shipped fixes (``rerace_real.fixes.NAME``, a file in fixes/).

A kernel module that passes is imported (a package's kernels: its real tuner object); a
*patch* module named by a recording is imported only with ``--allow-recorded-patch``.
"""

import importlib.util
import os
import re
import sys

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_FIXES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixes")


def _real(p):
    return os.path.realpath(p or ".")


def roots(user_paths):
    """The folders a recorded name may resolve into: this interpreter's installed-packages
    folders on sys.path and the user's own PYTHONPATH entries (empty entries, which mean the
    current directory, are not the user's choice of a folder and are left out)."""
    out = []
    for p in sys.path:
        if p and os.path.basename(os.path.normpath(p)) in ("site-packages", "dist-packages"):
            out.append(_real(p))
    for p in user_paths or []:
        if p:
            out.append(_real(p))
    return out


def _inside(path, folders):
    r = _real(path)
    for f in folders:
        try:
            if os.path.commonpath([r, f]) == f:
                return True
        except ValueError:
            continue
    return False


def check(name, folders):
    """(path, "") when the recorded module `name` may be imported, else (None, why not)."""
    if not isinstance(name, str) or not _NAME.match(name):
        return None, "%r is not a module name" % (name,)
    top = name.split(".")[0]
    if top == "rerace_real":
        parts = name.split(".")
        if len(parts) == 3 and parts[1] == "fixes":
            path = os.path.join(_FIXES, parts[2] + ".py")
            if os.path.isfile(path):
                return path, ""
        return None, "%s is no fix rerace ships" % name
    stdlib = getattr(sys, "stdlib_module_names", ())
    if top in sys.builtin_module_names or top in stdlib:
        return None, "%s is in the standard library, not an installed package" % top
    spec = sys.modules[top].__spec__ if top in sys.modules else None
    if spec is None:
        try:
            spec = importlib.util.find_spec(top)  # a top-level name: finds, imports nothing
        except (ImportError, ValueError) as e:
            return None, "%s cannot be found: %s" % (top, e)
    if spec is None:
        return None, "%s is not installed here" % top
    places = []
    if spec.has_location and spec.origin:
        places.append(spec.origin)
    places += list(spec.submodule_search_locations or [])
    if not places:
        return None, "%s is built in or frozen, not an installed package" % top
    for p in places:
        if not _inside(p, folders):
            return None, ("%s resolves to %s, outside the installed packages (site-packages) and "
                          "your PYTHONPATH" % (top, p))
    return places[0], ""
