"""Which source files are rerace's own, and how reports name a source file.

``is_ours`` tells the engine's own code (this package's folder, however the path that imported
it is spelled) from the program's: the GIL tracer, the fakes and patch reach skip rerace's
frames, and a finding's place is the innermost frame that is not rerace's. ``site_path`` and
``_short`` are the names reports give a file. Each answer is a function of the file name
alone; ``is_ours`` caches its answers per process (set-up fills the cache before the runs fork).
"""

import os

_ours = os.path.dirname(os.path.realpath(__file__))
_ours_cache = {}


def _short(filename):
    """A file's name as reports show it: from site-packages/ or its package (triton/, fla/) on,
    else its base name (site_path, below)."""
    return site_path(filename)


def is_ours(filename):
    """Is `filename` rerace's own engine code (however the path that imported it is spelled)?"""
    r = _ours_cache.get(filename)
    if r is None:
        r = _ours_cache[filename] = os.path.realpath(filename).startswith(_ours + os.sep)
    return r


def site_path(path):
    """A source file as every report names it: from its package down ("triton/runtime/
    autotuner.py", wherever that Triton is installed: site-packages or a PYTHONPATH folder),
    else the file's name."""
    cut = path.rfind("site-packages/")
    if cut >= 0:
        return path[cut + len("site-packages/"):]
    for package in ("triton/", "fla/"):
        cut = path.rfind("/" + package)
        if cut >= 0:
            return path[cut + 1:]
        if path.startswith(package):
            return path
    return path.rpartition("/")[2]  # os.path.basename without a Python call (control.Unseen)

