"""What a run changes, put back: many runs in one process, each from the state set-up left.

A ``run`` line forks a fresh child (serve.py): nothing a run does outlives it, and a run costs a
fork. A ``here`` line runs the schedule in one long-lived child instead (``child.serve_here``),
which puts back between two runs what a run changes of the state set-up made (``Pristine``):

* each tuner's attributes (``tuners.TRACKED``) and its class's, and, in place, the contents of
  every dict, list, set, deque and bytearray reachable from them, and the attributes of the
  plain objects reachable from them (a cache two tuners share stays one dict);
* the same for the globals of each module the program's own code lives in that set-up imported
  for it: the patches, the shipped fixes, the tuner classes' modules (``Setup.watched_roots``)
  and Triton's autotuner module;
* the controlled primitives made at set-up (sync.py: owner, count, flag) and sync's names;
* ``threading.local`` storage (logical.py) and ``threading``'s table of live threads;
* and what is the run's own: its thread states and their ``threading.Thread`` objects
  (``Setup.new_states``), the GIL tracer's counts and events, the random module's state.

What it cannot put back it looks for (``Pristine.restore`` returns why, and the child makes
way for a fresh fork): a run that did not end with every thread ended (a deadlock leaves
threads in the middle of the program), an ``functools.lru_cache`` reachable from those roots
whose size changed, a thread the program started and left running, a module a run imported.
State outside the roots (a Triton module other than the autotuner's, a C object's insides) is
not put back: that is why ``fuzz``, the one user of ``here``, replays each run that fails again
in a fresh fork and reports only what reproduces there (replay/search/src/campaign.cc), and
why certificates and ``check`` never use it.

Threads: the child's main thread (its main greenlet), between runs.
"""

import collections
import functools
import gc
import random
import sys
import threading
import types

from . import logical

_LEAF = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
         types.MethodType, types.BuiltinMethodType, types.CodeType, types.FrameType,
         property, staticmethod, classmethod, str, bytes, int, float, complex, bool,
         type(None), range, slice, frozenset)
_LEAF_TYPES = frozenset(_LEAF)
_DEPTH = 8  # how deep from a root the walk looks (a tuner -> configs -> Config -> kwargs: 4)


class Pristine:
    """The state of the roots as set-up left it, and ``restore`` to put it back.

    Made once, in the long-lived child before its first run (a fork of set-up: set-up's state).
    Holds a shallow copy of each container and object it walked; memory: one copy of that
    part of set-up's state."""

    def __init__(self, setup, roots, classes):
        self.setup = setup
        self._seen = set()
        self._dicts = []     # (dict, its items)       restored in place (dict's own methods)
        self._lists = []     # (list, its items)
        self._sets = []      # (set, its items)
        self._deques = []    # (deque, its items)
        self._bytes = []     # (bytearray, its bytes)
        self._objects = []   # (object, copy of its __dict__), the __dict__ walked as a dict
        self._classes = []   # (class, copy of its __dict__)
        self._lru = []       # (lru_cache wrapper, its size)
        self._cells = []     # (a function's closure cell, its contents or _MISSING)
        self._randoms = []   # (random.Random, its state)
        for r in roots:
            self._walk(r, 0)
        for cls in classes:
            if id(cls) in self._seen:
                continue
            self._seen.add(id(cls))
            d = dict(vars(cls))
            self._classes.append((cls, d))
            for v in d.values():
                self._walk(v, 1)
        self._threads = threading.active_count()
        self._active = dict(threading._active)
        self._modules = len(sys.modules)
        self._locals = [(loc, dict(getattr(object.__getattribute__(loc, "_rr_os"), "d", None) or {}))
                        for loc in list(logical.LOCALS)]
        self._nlocals = len(logical.LOCALS)

    def _walk(self, obj, depth):
        # By type(), never isinstance(): an object's __class__ is its own code to run.
        t = type(obj)
        if depth > _DEPTH or id(obj) in self._seen:
            return
        if t is types.FunctionType:
            # What a function keeps between calls: its closure's cells, its defaults.
            self._seen.add(id(obj))
            for cell in obj.__closure__ or ():
                try:
                    v = cell.cell_contents
                except ValueError:
                    v = _MISSING
                self._cells.append((cell, v))
                if v is not _MISSING:
                    self._walk(v, depth + 1)
            self._walk(obj.__defaults__, depth + 1)
            self._walk(obj.__kwdefaults__, depth + 1)
            return
        if t in _LEAF_TYPES or issubclass(t, _LEAF):
            return
        self._seen.add(id(obj))
        if issubclass(t, dict):
            items = dict.copy(obj)
            self._dicts.append((obj, items))
            for v in items.values():
                self._walk(v, depth + 1)
            return
        if issubclass(t, list):
            items = list.copy(obj)
            self._lists.append((obj, items))
            for v in items:
                self._walk(v, depth + 1)
            return
        if issubclass(t, tuple):
            for v in tuple.__iter__(obj):
                self._walk(v, depth + 1)
            return
        if issubclass(t, set):
            items = set.copy(obj)
            self._sets.append((obj, items))
            for v in items:
                self._walk(v, depth + 1)
            return
        if issubclass(t, collections.deque):
            items = list(collections.deque.__iter__(obj))
            self._deques.append((obj, items))
            for v in items:
                self._walk(v, depth + 1)
            return
        if issubclass(t, bytearray):
            self._bytes.append((obj, bytes(obj)))
            return
        if issubclass(t, functools._lru_cache_wrapper):
            self._lru.append((obj, obj.cache_info().currsize))
            return
        if issubclass(t, random.Random):
            # Its generator's state is inside the C object (getstate, setstate).
            self._randoms.append((obj, obj.getstate()))
        try:
            d = object.__getattribute__(obj, "__dict__")
        except (AttributeError, TypeError):
            d = None
        if type(d) is dict and id(d) not in self._seen:
            self._seen.add(id(d))
            items = dict.copy(d)
            self._objects.append((d, items))
            for v in items.values():
                self._walk(v, depth + 1)
        for v in _slot_values(obj, t):
            self._walk(v, depth + 1)

    def restore(self):
        """Puts the roots back as set-up left them; returns None, or why this process cannot
        run another schedule as a fresh fork would (then it exits: serve.py forks another)."""
        if threading.active_count() != self._threads:
            return "a thread the program started is still running"
        if len(sys.modules) != self._modules:
            return "a run imported a module"
        for d, items in self._dicts:
            _put_dict(d, items)
        for d, items in self._objects:
            _put_dict(d, items)
        for lst, items in self._lists:
            if len(lst) != len(items) or any(a is not b for a, b in zip(lst, items)):
                list.clear(lst)
                list.extend(lst, items)
        for s, items in self._sets:
            if s != items:
                set.clear(s)
                set.update(s, items)
        for q, items in self._deques:
            if len(q) != len(items) or any(a is not b for a, b in zip(q, items)):
                q.clear()
                q.extend(items)
        for b, items in self._bytes:
            if b != items:
                b[:] = items
        for cls, items in self._classes:
            now = vars(cls)
            for k in [k for k in now if k not in items]:
                if not k.startswith("__"):
                    delattr(cls, k)
            for k, v in items.items():
                if now.get(k, _MISSING) is not v and not k.startswith("__"):
                    setattr(cls, k, v)
        _put_dict(threading._active, self._active)
        if len(logical.LOCALS) != self._nlocals:
            # A threading.local made in a run and kept (weakly listed while it lives).
            gc.collect()
            if len(logical.LOCALS) != self._nlocals:
                return "a threading.local made in a run outlives it"
        for loc, items in self._locals:
            object.__getattribute__(loc, "_rr_by_ts").clear()
            real = object.__getattribute__(loc, "_rr_os")
            d = getattr(real, "d", None)
            if items:
                if d is None:
                    d = real.d = {}
                _put_dict(d, items)
            elif d is not None:
                del real.d
        for cell, v in self._cells:
            try:
                now = cell.cell_contents
            except ValueError:
                now = _MISSING
            if now is not v:
                if v is _MISSING:
                    del cell.cell_contents
                else:
                    cell.cell_contents = v
        for rng, state in self._randoms:
            rng.setstate(state)
        for f, size in self._lru:
            if f.cache_info().currsize != size:
                return "an lru_cache's contents changed (%s)" % getattr(f, "__qualname__", "?")
        return None


_MISSING = object()


def _put_dict(d, items):
    if len(d) == len(items):
        for k, v in items.items():
            if dict.get(d, k, _MISSING) is not v:
                break
        else:
            return
    dict.clear(d)
    dict.update(d, items)


def _slot_values(obj, t):
    out = []
    for klass in t.__mro__:
        slots = klass.__dict__.get("__slots__")
        if not slots:
            continue
        if isinstance(slots, str):
            slots = (slots,)
        for name in slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                out.append(object.__getattribute__(obj, name))
            except AttributeError:
                pass
    return out


def roots_of(setup):
    """The roots ``Pristine`` walks for `setup` (engine_setup.Setup): the tracked tuners, and
    the globals of the modules the program's own code set-up imported lives in."""
    from . import sync, tuners
    roots = [sync._counters]
    roots.extend(sync.MADE)
    roots.extend(tuners.TRACKED)
    classes = []
    for t in tuners.TRACKED:
        for klass in type(t).__mro__:
            if klass is not object:
                classes.append(klass)
    names = set(setup.patch_modules)
    names.add(setup.autotuner.__name__)
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if not f or m.__name__ in names:
            continue
        if setup.fixes_dir and f.startswith(setup.fixes_dir):
            names.add(m.__name__)
        elif any(f == w or f.startswith(w + "/") for w in setup.watched_roots):
            names.add(m.__name__)
    for name in sorted(names):
        m = sys.modules.get(name)
        if m is None:
            continue
        roots.append(vars(m))
        # The classes the module defines: their class attributes are its state too.
        for v in list(vars(m).values()):
            if isinstance(v, type) and v.__module__ == name:
                classes.append(v)
    return roots, classes
