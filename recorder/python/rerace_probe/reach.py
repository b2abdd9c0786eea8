"""Patch reach at a call (issue 29): whether a patch that replaced ``Autotuner.run`` after the
probe was on the call's stack, and which frame called Triton's ``run``."""

import json
import os
import sys


def reach(cls, probe_run):
    """Patch reach at a call (issue 29): when ``cls.run`` is no longer the probe's wrapper (a
    patch replaced it after the probe), whether that replacement is on the call's stack, and
    which frame called the probe's ``run`` (``CachedAutotuner.run (cache.py:360)``); None when
    nothing replaced it. Called from the probe's ``run``: frame 2 is its caller."""
    cur = vars(cls).get("run")
    if cur is None or cur is probe_run:
        return None
    fn = getattr(cur, "__func__", cur)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    caller = sys._getframe(2)
    f, on = caller, False
    while f is not None:
        if f.f_code is code:
            on = True
            break
        f = f.f_back
    cc = caller.f_code
    by = "%s (%s:%d)" % (getattr(cc, "co_qualname", cc.co_name), os.path.basename(cc.co_filename),
                         caller.f_lineno)
    return {"Autotuner.run": {
        "module": getattr(fn, "__module__", None),
        "qualname": getattr(fn, "__qualname__", None),
        "patch": "%s:%d" % (os.path.basename(code.co_filename), code.co_firstlineno),
        "on_stack": on, "by": by}}


def with_reach(detail, reach):
    """The call-begin's detail= with {"reach": ...} added (a JSON object, or None)."""
    if reach is None:
        return detail
    text = json.dumps(reach, sort_keys=True, separators=(",", ":"))
    if detail is None:
        return '{"reach":' + text + "}"
    return detail[:-1] + ',"reach":' + text + "}"
