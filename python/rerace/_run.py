"""Runs the installed ``rerace`` binary with ``--json`` (replay, fuzz and check go through the
command line until their policy and reports live in the replay library; see _core for what is
in-process today).

The binary is the one pip installed beside this package: the scripts folder of the
installation scheme this package lives in (a venv's ``bin``, ``~/.local/bin`` for ``--user``).
It is never looked up in a source tree, nor on PATH. ``RERACE_EXE`` names another one
explicitly (a developer's build, say).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any, Sequence

from ._errors import Error

# Exit codes that carry a verdict (0 nothing found / holds, 1 found / fails, 3 inconclusive):
# their standard output is the --json report. Any other is an Error.
VERDICT_CODES = (0, 1, 3)


def _schemes() -> list[str]:
    names = [sysconfig.get_default_scheme()] if hasattr(sysconfig, "get_default_scheme") else []
    names += [f"{os.name}_user", "posix_prefix", "venv"]
    return [n for n in dict.fromkeys(names) if n in sysconfig.get_scheme_names()]


def invoked_name() -> str:
    """How a printed command names rerace so that it runs as printed: ``rerace`` when that is on
    PATH and is the binary this package runs, else that binary's path (``find_exe``)."""
    try:
        exe = find_exe()
    except Error:
        return "rerace"
    import shutil
    on_path = shutil.which("rerace")
    try:
        if on_path and os.path.samefile(on_path, exe):
            return "rerace"
    except OSError:
        pass
    return exe


def find_exe() -> str:
    """The ``rerace`` binary installed with this package (or ``$RERACE_EXE``).

    Looks in the scripts folder of each installation scheme whose library folder holds this
    package, so a ``pip install --user`` finds ``~/.local/bin/rerace`` and a venv its ``bin``.
    Raises Error (exit 69) when there is none.
    """
    env = os.environ.get("RERACE_EXE")
    if env:
        return env
    here = Path(__file__).resolve().parent.parent
    candidates: list[Path] = []
    for scheme in _schemes():
        paths = sysconfig.get_paths(scheme)
        libs = {Path(paths[k]).resolve() for k in ("purelib", "platlib") if k in paths}
        if here in libs:
            candidates.insert(0, Path(paths["scripts"]) / "rerace")
        else:
            candidates.append(Path(paths["scripts"]) / "rerace")
    candidates = list(dict.fromkeys(candidates))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise Error(
        "the rerace command is not installed beside the rerace package (looked in "
        + ", ".join(str(c.parent) for c in candidates)
        + "); reinstall with `pip install .`, or set RERACE_EXE to a rerace binary",
        69,
    )


def _one_line(stderr: str) -> str:
    """The command line's error line: its last ``rerace: error:`` line, else its last line."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    for l in reversed(lines):
        if "error:" in l:
            return l.split("error:", 1)[1].strip()
    return lines[-1].strip() if lines else "rerace gave no message"


def run_json(args: Sequence[str]) -> tuple[int, Any, list[str], str]:
    """Runs ``rerace ARGS --json``; returns (exit code, parsed JSON, the command, stderr).

    Raises Error with the command's one-line message and exit code when it ends with anything
    but a verdict (0, 1, 3), or prints no JSON.
    """
    cmd = [find_exe(), *args, "--json"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in VERDICT_CODES:
        raise Error(_one_line(proc.stderr), proc.returncode, cmd)
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise Error(f"rerace printed no JSON report ({e}); its messages: {_one_line(proc.stderr)}",
                    70, cmd) from None
    return proc.returncode, data, cmd, proc.stderr


def shell(cmd: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)


def default_python() -> str:
    """The Python that runs the real-code engine unless told: this one (its Triton)."""
    return sys.executable
