"""Patch reach: whether each callable a patch replaced was on the path of the tuner calls.

The incident's "phantom patch": a lock around ``Autotuner.run`` sat in ``Autotuner.__dict__``,
yet FLA's ``CachedAutotuner.run`` reached Triton's ``run`` without it. A patch that is never
entered is not checked by any schedule, however many hold.

Set-up (engine_setup.py, after each patch is imported): for every name a patch replaced in the tuner
class whose old and new values are code (a function, a property's getter, a static or class
method), and every property a patch added (thread-local ``nargs``: the instance attribute's
reads and writes now go through it), one ``Replaced``: the new code (the patch's), the old code (the target it replaced),
the patch's file and line. During a replayed tuner call, a 'call' profile event that enters a
replaced callable marks it entered for that call; one that enters the target with no
replacement of it on the stack is a bypass, and the first such frame chain is kept
("TeamAutotuner.run (bypass.py:9) reached Autotuner.run (autotuner.py:238) without it"). After
each call the thread sends ``r <json>`` (control.py): which replacements the call entered, and
the bypass chains seen. The C++ side (replay/engine/src/python_engine.cc) counts them over the run's
calls: a replacement entered by none is the finding ``patch-not-reached``; otherwise a
``patch reach:`` line.

The target is matched by file, first line and name, not by identity, so a reloaded module's
fresh copy of the function (a class object the patch never touched) counts as the target.

Threads: ``Reach.profile`` runs on the logical thread that holds the turn (it only reads and
writes that thread's own call record); everything else runs at set-up.
"""

import sys

from . import control


def _code(v):
    """The code object a class attribute runs when called or read, or None."""
    f = getattr(v, "fget", None) or getattr(v, "__func__", None) or v
    return getattr(f, "__code__", None)


def _where(code):
    return "%s:%d" % (control.site_path(code.co_filename), code.co_firstlineno)


def _source_file(cls):
    """The file `cls` was defined in, or "" (a built-in class, or no file to name)."""
    import inspect
    try:
        return inspect.getsourcefile(cls) or ""
    except (TypeError, OSError):
        return ""


def _qualname(code):
    return getattr(code, "co_qualname", None) or code.co_name


class Replaced:
    __slots__ = ("name", "new", "old", "patch", "kind", "source")

    def __init__(self, name, new, old, patch, kind, source=""):
        self.name = name      # "Autotuner.run"
        self.new = new        # the patch's code object
        self.old = old        # the replaced code object (None: a property where there was none)
        self.patch = patch    # the patch's "file.py:line"
        self.kind = kind      # "replacement" or "property"
        self.source = source  # the patch (file or module) whose import made the change

    def info(self):
        # A property put where the instance attribute was (thread-local nargs): no code before.
        target = "%s (%s)" % (self.name, _where(self.old)) if self.old is not None else \
            "%s (an instance attribute before the patch)" % self.name
        return {"name": self.name, "kind": self.kind, "patch": self.patch, "target": target,
                "source": self.source}


class Reach:
    """The replaced callables of all patches, and the per-call profile check."""

    def __init__(self):
        self.replaced = []
        self._new = {}      # patch code -> index
        self._old = {}      # (file, first line, name) of a target -> index
        self._by_id = {}    # id(code) -> (code, kind, index): _index's cache
        self._hidden = {}   # index -> why a replayed tuner class does not run it (check_class)

    def note(self, cls_name, before, after, source=""):
        """A patch's changes: `before` and `after` map names to the class attributes; `source`
        names the patch being imported."""
        for name in sorted(after):
            if name in before and before[name] is after[name]:
                continue
            new = _code(after[name])
            old = _code(before[name]) if name in before else None
            if name not in before and not isinstance(after[name], property):
                continue  # a new helper, not on the path of any stock code
            if new is None or new is old or (name in before and old is None):
                continue
            full = "%s.%s" % (cls_name, name)
            if any(r.name == full and r.new is new for r in self.replaced):
                continue  # noted already (a class put in Autotuner's place inherits it)
            if old is not None and (new.co_filename, new.co_firstlineno, new.co_name) == (
                    old.co_filename, old.co_firstlineno, old.co_name):
                continue  # a reloaded module's fresh copy of the same function, not a patch
            kind = "property" if isinstance(after[name], property) else "replacement"
            r = Replaced(full, new, old,
                         "%s:%d" % (control.site_path(new.co_filename), new.co_firstlineno), kind,
                         source)
            self._new[new] = len(self.replaced)
            if kind == "property":  # entered through its setter or deleter as well
                for f in (after[name].fset, after[name].fdel):
                    c = getattr(f, "__code__", None)
                    if c is not None and c is not new:
                        self._new.setdefault(c, len(self.replaced))
            if old is not None:
                self._old.setdefault((old.co_filename, old.co_firstlineno, old.co_name),
                                     len(self.replaced))
            self.replaced.append(r)

    def info(self):
        return [r.info() for r in self.replaced]

    def check_class(self, cls):
        """A tuner of class `cls` is replayed: a replacement that `cls` does not resolve its
        name to (a subclass's own attribute of that name, a later patch's, a class the patch
        did not change) is hidden from that tuner's calls; no profile event says so when
        nothing is called (a property)."""
        import inspect
        for i, r in enumerate(self.replaced):
            if i in self._hidden:
                continue
            field = r.name.rpartition(".")[2]
            attr = inspect.getattr_static(cls, field, None)
            if _code(attr) is r.new:
                continue
            owner = next((k for k in cls.__mro__ if field in vars(k)), None)
            if owner is None:
                self._hidden[i] = "the replayed tuner's class %s.%s has no %s (not the class " \
                    "the patch changed)" % (cls.__module__, cls.__qualname__, field)
                continue
            code = _code(attr)
            source = _source_file(owner) if code is None else ""
            what = "%s (%s)" % (_qualname(code), _where(code)) if code is not None else \
                "a plain attribute%s" % (" (%s)" % control.site_path(source) if source else "")
            self._hidden[i] = "the replayed tuner's class %s resolves %s to %s.%s, %s" % (
                cls.__qualname__, field, owner.__qualname__, field, what)

    def start_call(self, c):
        c["_reach"] = (set(), {})

    def _index(self, code):
        """(code, kind, index) of a code object: kind 1 a replacement, 2 a target, 0 neither.
        Cached by id(code), holding the code (hashing a code object hashes its bytecode)."""
        e = self._by_id.get(id(code))
        if e is None or e[0] is not code:
            i = self._new.get(code)
            if i is not None:
                e = (code, 1, i)
            else:
                i = self._old.get((code.co_filename, code.co_firstlineno, code.co_name))
                e = (code, 2, i) if i is not None else (code, 0, -1)
            self._by_id[id(code)] = e
        return e

    def wanted(self, code):
        """Whether entering `code` matters to reach (a replacement or a target)."""
        return self._index(code)[1] != 0

    def profile(self, frame, event):
        """From the thread's profile function, for every event; cheap when nothing matches."""
        if event != "call":
            return
        self._enter(frame.f_code, frame)

    def on_start(self, code):
        """From the GIL tracer's sys.monitoring PY_START/PY_RESUME callback (gil_tracer.py): the
        frame entering `code` is two frames up, looked up only for a target."""
        self._enter(code, None)

    def on_start_c(self, code):
        """The same from the C hooks (_rerace_gil), which add no Python frame: the frame
        entering `code` is the caller of this one."""
        self._enter(code, sys._getframe(1))

    def _enter(self, code, frame):
        ts = control.current()
        if ts is None or ts.call is None or ts.tid < 0:
            return
        state = ts.call.get("_reach")
        if state is None:
            return
        _, kind, i = self._index(code)
        if kind == 0:
            return
        if kind == 1:
            state[0].add(i)
            return
        if i in state[1]:
            return
        if frame is None:
            frame = sys._getframe(3)  # _enter, on_start, the tracer's callback, the frame
        new = self.replaced[i].new
        f = frame.f_back
        while f is not None:
            if f.f_code is new:
                return
            f = f.f_back
        caller = frame.f_back
        while caller is not None and control.is_ours(caller.f_code.co_filename):
            caller = caller.f_back
        by = "%s (%s:%d)" % (_qualname(caller.f_code), control.site_path(caller.f_code.co_filename),
                             caller.f_lineno) if caller is not None else "rerace's call"
        state[1][i] = "%s reached %s (%s) without it" % (
            by, self.replaced[i].name, _where(code))

    def report(self, c):
        """The call's message: the replacements it entered and the bypasses it made."""
        entered, bypass = c.get("_reach") or (set(), {})
        out = {"entered": sorted(entered), "bypass": {str(k): v for k, v in sorted(bypass.items())}}
        if self._hidden:
            out["hidden"] = {str(k): v for k, v in sorted(self._hidden.items())}
        return out
