"""What the engine's process sets up once, before any run: ``Setup``.

``Setup.start`` installs the controlled threading primitives (sync.py), chooses OS threads or
greenlets for the logical threads (logical.py), imports Triton and puts the fakes in place
(fakes.py), imports the tuner classes the recording names, then each ``--patch`` file as a
module (or, for a patched recording without one, the recorded patch module where trust.py
allows it), noting what each changed in the tuner classes, builds one tuner per recorded tuner
object (tuners.py), and makes the GIL tracer (gil_tracer.py). ``Setup.info`` is what the
``ready`` line reports; a problem for the user is a ``SetupError`` (serve.py's docstring lists
its kinds). Every run's child (child.py) starts from a fork of this state.

Called by the set-up process's main thread only (serve.main), before the first run.
"""

import hashlib
import importlib.util
import os
import random
import sys
import traceback

from . import child, control, fakes, gil_tracer, reach, sync, trust, tuners


def _class_attrs(cls):
    """What a patch may change: the tuner class's functions and descriptors, by name."""
    out = {}
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, v in vars(klass).items():
            if name in out or name.startswith("__") and name not in ("__init__", "__call__"):
                continue
            out[name] = v
    return out


def _own_attrs(cls):
    """What a patch may change of a subclass itself (its own functions and descriptors)."""
    return {name: v for name, v in vars(cls).items()
            if not name.startswith("__") or name in ("__init__", "__call__")}


_PATCH_MODULE = "rerace_patch_"  # the module name a --patch file is imported under


def _describe(v):
    f = getattr(v, "fget", None) or v
    mod = getattr(f, "__module__", None) or type(v).__module__
    qn = getattr(f, "__qualname__", None) or type(v).__qualname__
    kind = type(v).__name__
    code = getattr(f, "__code__", None)
    wrapped = getattr(f, "__wrapped__", None)
    if wrapped is not None and code is not None:
        # functools.wraps copied the wrapped function's names onto the wrapper: name the
        # wrapper by its own code, and what it wraps.
        return "%s %s (%s:%d), a wrapper of %s" % (
            kind, getattr(code, "co_qualname", code.co_name), os.path.basename(code.co_filename),
            code.co_firstlineno, "%s.%s" % (mod, qn))
    if mod.startswith(_PATCH_MODULE) and code is not None:
        # A --patch file's module name is this engine's own: name the user's file instead.
        return "%s %s (%s:%d)" % (kind, qn, os.path.basename(code.co_filename), code.co_firstlineno)
    return "%s %s.%s" % (kind, mod, qn)


class Setup:
    def __init__(self, cfg):
        self.cfg = cfg
        self.program = cfg["program"]
        recorded = [m.get("python") for m in (self.program.get("tuner_meta") or {}).values()
                    if isinstance(m.get("python"), dict)]
        mode = cfg.get("mode", "auto")
        if mode == "auto":
            # The interpreter that recorded the step decides; a recording without metadata
            # was made by a GIL build (no free-threaded build existed before 3.13t).
            self.free_threaded = any(r.get("gil") is False for r in recorded)
        else:
            self.free_threaded = mode == "free-threaded"
        self.fixes_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixes") + os.sep
        self.patch_modules = []  # the modules the patches are (sys.modules names): reset.py
        self.info = {"python": sys.version.split()[0], "replaced": [], "patches": [],
                     "mode": "free-threaded" if self.free_threaded else "gil"}
        versions = sorted({r.get("version") for r in recorded if r.get("version")})
        if versions:
            self.info["recorded_python"] = versions
            running = "%d.%d" % sys.version_info[:2]
            if any(not v.startswith(running + ".") and v != running for v in versions):
                self.info["python_differs"] = True

    def start(self):
        # The program's random numbers (the random module's own generator) are the same in
        # every run and every rerace process: seeded here, before Triton and the patches import,
        # and each run's child puts back the state set-up leaves (child._child), since a fork
        # reseeds that generator from the system (random's after-fork handler).
        random.seed(0)
        self.cfg["patches"] = [os.path.realpath(p) for p in self.cfg.get("patches", [])]
        self.folders = trust.roots(self.cfg.get("user_pythonpath"))
        patches = set(self.cfg["patches"])
        fixes_dir = self.fixes_dir
        real = {}
        self.watched_roots = []  # a recorded tuner class's module or package (_build_tuners)

        def watched(filename):
            r = real.get(filename)
            if r is None:
                r = real[filename] = os.path.realpath(filename)
            return (r in patches or r.startswith(fixes_dir) or "/triton/" in r or "/fla/" in r or
                    filename.startswith("<rerace") or
                    any(r == w or r.startswith(w + os.sep) for w in self.watched_roots))

        self.watched = watched
        sync.set_watched(watched)
        sync.install()
        self._choose_threads()
        try:
            import triton
            from triton.runtime import autotuner
        except Exception as e:  # noqa: BLE001 - any failure to import is the user's to see
            raise SetupError("cannot import triton with %s: %s: %s" % (
                sys.executable, type(e).__name__, e), kind="env")
        self.triton = triton
        self.autotuner = autotuner
        self.info["triton"] = getattr(triton, "__version__", "?")
        recorded = sorted({m.get("triton") for m in (self.program.get("tuner_meta") or {}).values()
                           if m.get("triton")})
        if recorded:
            self.info["recorded_triton"] = recorded
            if recorded != [self.info["triton"]]:
                self.info["triton_differs"] = True
        self.info["triton_file"] = autotuner.__file__
        self.info["replaced"] = fakes.install(triton)
        gil_enabled = getattr(sys, "_is_gil_enabled", lambda: True)()
        self.info["interpreter_gil"] = bool(gil_enabled)
        from . import gil
        if self.free_threaded:
            self.rules = gil.rules_for(sys.version_info[:2], free_threaded=True)
        else:
            self.rules = gil.rules_for(sys.version_info[:2])
        self.info["rules"] = self.rules.name
        self.reach = reach.Reach()
        self._import_tuner_classes()
        if tuners.FAKE_TORCH:
            self.info["fake_torch"] = list(tuners.FAKE_TORCH)
        if tuners.ALONE:
            self.info["imported_alone"] = [list(a) for a in tuners.ALONE]
        before = _class_attrs(autotuner.Autotuner)
        for i, path in enumerate(self.cfg.get("patches", [])):
            self.info["patches"].append(self._import_patch(i, path, before))
            before = _class_attrs(autotuner.Autotuner)
        if not self.cfg.get("patches"):
            self._load_recorded_patches(before)
        self.info["reach"] = self.reach.info()
        self._build_tuners()
        # The GIL tracer, made here so that its sys.monitoring tool id is claimed before a
        # run forks (a patch or an import that took the ids leaves the settrace one): each
        # run's child installs its own copy.
        self.tracer = None
        if not self.free_threaded:
            try:
                self.tracer = gil_tracer.make_tracer(self.rules, self.watched)
            except gil_tracer.HooksUnavailable as e:
                # Asked for by the environment variable, not by the Python given: the remedy is
                # the variable (or a build that made the module), not another --python-exe.
                raise SetupError("%s (unset RERACE_GIL_HOOKS to run the Python hooks where the C "
                                 "ones do not load)" % e, kind="usage")
            if isinstance(self.tracer, gil_tracer.MonitoringTracer) and self.reach.replaced:
                self.tracer.reach = self.reach
            self.info["gil_tracer"] = "sys.monitoring" if isinstance(
                self.tracer, gil_tracer.MonitoringTracer) else "sys.settrace"
            self.info["gil_hooks"] = getattr(self.tracer, "hooks", "Python")
            if control.GREENLET is not None and self.info["gil_tracer"] != "sys.monitoring":
                # Every sys.monitoring tool id taken (by a patch): logical.py's identity is in
                # place, so greenlets without the tracer they need cannot go on.
                raise SetupError("logical threads as greenlets need a sys.monitoring tool id "
                                 "and every one is taken (by a patch or an import?); run with "
                                 "RERACE_ENGINE_THREADS=os", kind="env")
        self.plans = [child._plan(self, call) for call in self.program["calls"]]
        # The calls some call begins after (child._wait_for_calls): only their ends are points.
        self.waited_calls = frozenset(b for call in self.program["calls"]
                                      for b in call.get("after") or ())
        self._warm_caches()
        # Each run's ThreadStates (and, with greenlets, the Thread each logical thread is to the
        # program), made once here: every run's child starts with a pristine copy (fork).
        self.states = self.new_states()
        self.random_state = random.getstate()
        self.info["in_process"] = self.can_run_here()

    def new_states(self):
        """A run's ThreadStates, as a run starts them (with greenlets, each with the Thread it
        is to the program: logical.make_thread)."""
        states = [control.ThreadState(t, th["name"]) for t, th in enumerate(self.program["threads"])]
        if control.GREENLET is not None:
            from . import logical
            for ts in states:
                logical.make_thread(ts)
        return states

    def can_run_here(self):
        """Whether runs may share one process, reset between them (serve.py's ``here``,
        reset.py); RERACE_ENGINE_IN_PROCESS=0 says no."""
        return os.environ.get("RERACE_ENGINE_IN_PROCESS") != "0"

    def _warm_caches(self):
        """Fills, once here, the caches that every run's child would otherwise fill again from
        empty (a child's writes die with it): for each source file of the loaded code, whether
        it is rerace's own (control.is_ours) and whether it is watched (a realpath each: about
        180 stat calls a run), and the tracer's opcode table of each watched code object.
        Each is a function of the file name or of the code object alone: a child's own lookup
        gives the same answer. Code loaded later (a run's own imports) is looked up as before."""
        import gc
        import types
        codes = {}
        stack = [o.__code__ for o in gc.get_objects() if type(o) is types.FunctionType]
        while stack:
            code = stack.pop()
            if id(code) in codes:
                continue
            codes[id(code)] = code
            stack.extend(k for k in code.co_consts if type(k) is types.CodeType)
        tracer = self.tracer
        for filename in sorted({c.co_filename for c in codes.values()}):
            control.is_ours(filename)
            self.watched(filename)
            if tracer is not None:
                tracer._is_watched(filename)
        if tracer is not None:
            for code in codes.values():
                if not control.is_ours(code.co_filename) and tracer._is_watched(code.co_filename):
                    tracer._ops(code)

    def _choose_threads(self):
        """Logical threads as greenlets (control.GREENLET) where they can be: CPython 3.12+,
        the greenlet package importable, and in GIL mode the sys.monitoring tracer (the
        settrace one keeps per-thread frame state). RERACE_ENGINE_THREADS=os keeps OS threads;
        =greenlet makes a missing greenlet an error. Before Triton and the patches import:
        thread identity and threading.local follow the logical thread (logical.py)."""
        want = os.environ.get("RERACE_ENGINE_THREADS", "")
        if want not in ("", "os", "greenlet"):
            raise SetupError("RERACE_ENGINE_THREADS=%s: neither os nor greenlet" % want, kind="usage")
        # A misspelt tracer would be ignored and the default tracer run: said instead.
        tracer = os.environ.get("RERACE_GIL_TRACER", "")
        if tracer not in ("", "settrace", "monitoring"):
            raise SetupError("RERACE_GIL_TRACER=%s: neither settrace nor monitoring" % tracer,
                             kind="usage")
        hooks = os.environ.get("RERACE_GIL_HOOKS", "")
        if hooks not in ("", "c", "python"):
            raise SetupError("RERACE_GIL_HOOKS=%s: neither c nor python" % hooks, kind="usage")
        self.info["threads"] = "os"
        if want == "os":
            return
        why = None
        if sys.version_info < (3, 12):
            why = "CPython %d.%d (greenlets need 3.12+ here)" % sys.version_info[:2]
        elif not self.free_threaded and os.environ.get("RERACE_GIL_TRACER") == "settrace":
            why = "RERACE_GIL_TRACER=settrace"
        else:
            try:
                import greenlet
            except ImportError as e:
                why = "no greenlet module (%s)" % e
        if why is not None:
            if want == "greenlet":
                raise SetupError("RERACE_ENGINE_THREADS=greenlet: %s with %s" % (
                    why, sys.executable), kind="env")
            return
        from . import logical
        logical.install()
        control.GREENLET = greenlet
        self.info["threads"] = "greenlet"

    def _recorded_patches(self):
        """(what, module, qualname, where) of each part the recording says was patched."""
        out = []
        for meta in (self.program.get("tuner_meta") or {}).values():
            parts = [("run", meta.get("run")), ("_bench", meta.get("bench"))]
            for field, d in (meta.get("fields") or {}).items():
                parts.append(("self." + field, d.get("fget") if isinstance(d, dict) else None))
            for what, f in parts:
                if not isinstance(f, dict):
                    continue
                mod = f.get("module") or ""
                if not mod or mod.startswith(("triton.", "fla.")) or mod in ("rerace_probe", "functools"):
                    continue
                where = "%s:%s" % (f.get("file", "?"), f.get("line", "?"))
                out.append((what, mod, f.get("qualname") or "?", where))
        return out

    def _load_recorded_patches(self, before):
        """A recording of a patched program, replayed without --patch: refuse, naming the module
        the recording says the patch came from (never replay stock code for it, never import a
        name the trace chose). rerace's own shipped fixes are imported; an installed module
        (trust.check) only with --allow-recorded-patch."""
        import importlib
        allow = bool(self.cfg.get("allow_recorded_patch"))
        for what, mod, qualname, where in self._recorded_patches():
            if any(p["file"] == mod for p in self.info["patches"]):
                continue
            said = "the recorded program was patched: %s was %s.%s (%s)" % (what, mod, qualname, where)
            if mod == "__main__" or mod.startswith("rerace_patch_"):
                raise SetupError("%s, defined in its main script; give that patch with --patch FILE"
                                 % said, kind="usage")
            path, why = trust.check(mod, self.folders)
            if why:
                raise SetupError("%s; module %s is not imported: %s; give the patch with --patch FILE"
                                 % (said, mod, why), kind="usage")
            if not allow and not mod.startswith("rerace_real.fixes."):
                raise SetupError(
                    "%s; give that patch with --patch FILE, or pass --allow-recorded-patch to "
                    "import the installed module %s (%s)" % (said, mod, path), kind="usage")
            try:
                m = importlib.import_module(mod)
                self.patch_modules.append(mod)
            except Exception as e:  # noqa: BLE001
                raise SetupError(
                    "%s, and module %s cannot be imported here (%s: %s); give the patch with "
                    "--patch FILE" % (said, mod, type(e).__name__, e), kind="data")
            after = _class_attrs(self.autotuner.Autotuner)
            changed = sorted(n for n in set(before) | set(after) if before.get(n) is not after.get(n))
            self.reach.note("Autotuner", before, after, source=mod)
            self.info["patches"].append({
                "file": mod, "recorded": True, "path": getattr(m, "__file__", "?"),
                "changed": ["Autotuner.%s -> %s" % (n, _describe(after[n])) if n in after
                            else "Autotuner.%s removed" % n for n in changed]})
            before = after

    def _import_patch(self, i, path, before):
        if not os.path.exists(path):
            raise SetupError("patch %s: no such file" % path, kind="nofile")
        if not os.path.isfile(path):
            raise SetupError("patch %s: not a regular file" % path, kind="nofile")
        name = "%s%d_%s" % (_PATCH_MODULE, i, os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise SetupError("patch %s: not a Python file" % path, kind="data")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        self.patch_modules.append(name)
        cls = self.autotuner.Autotuner  # the class object the patch finds (it may rebind the name)
        # The recorded tuner classes besides Autotuner (FLA's CachedAutotuner, a team's): what
        # the patch changes of their own is a change of the class being replayed.
        subs = {name: (sub, _own_attrs(sub)) for name, sub in sorted(self.tuner_classes.items())}
        try:
            spec.loader.exec_module(mod)
        except SyntaxError as e:
            at = "%s:%s" % (e.filename or path, e.lineno or "?")
            raise SetupError("patch %s does not compile: %s: %s (at %s)" % (
                path, type(e).__name__, e.msg, at), kind="data")
        except BaseException as e:  # noqa: BLE001 - SystemExit too: the patch's, reported
            raise SetupError("patch %s raised %s: %s (at %s)" % (
                path, type(e).__name__, e, _patch_frame(e, path)), kind="data")
        after = _class_attrs(cls)
        changed = sorted(n for n in set(before) | set(after) if before.get(n) is not after.get(n))
        self.reach.note("Autotuner", before, after, source=path)
        with open(path, "rb") as f:
            sha256 = hashlib.sha256(f.read()).hexdigest()
        out = {"file": path, "sha256": sha256,
               "changed": ["Autotuner.%s -> %s" % (n, _describe(after[n]))
                           if n in after else "Autotuner.%s removed" % n
                           for n in changed]}
        for name, (sub, sub_before) in subs.items():
            sub_after = _own_attrs(sub)
            label = sub.__name__
            for n in sorted(set(sub_before) | set(sub_after)):
                if sub_before.get(n) is not sub_after.get(n):
                    out["changed"].append("%s.%s -> %s" % (label, n, _describe(sub_after[n]))
                                          if n in sub_after else "%s.%s removed" % (label, n))
            self.reach.note(label, sub_before, sub_after, source=path)
        now = self.autotuner.Autotuner
        if now is not cls:
            # A reload, or a subclass put in its place: what the patch changed is on the old
            # class object; tuners built from here on use the new one.
            out["changed"].append("triton.runtime.autotuner.Autotuner rebound to another class "
                                  "object (%s.%s)" % (getattr(now, "__module__", "?"),
                                                      getattr(now, "__qualname__", "?")))
            if isinstance(now, type):
                # What the new class runs in place of the stock code (a locked subclass's run,
                # a lock put on a reloaded module's fresh class) is a replacement too: a tuner
                # class defined over the old class object (FLA's CachedAutotuner, imported
                # before the patches) never enters it (patch-not-reached). A reload's fresh
                # copies of stock functions are not (reach.py).
                fresh = _class_attrs(now)
                n = len(self.reach.replaced)
                self.reach.note("Autotuner", before, fresh, source=path)
                for r in self.reach.replaced[n:]:
                    out["changed"].append("its %s -> %s" % (
                        r.name.split(".", 1)[1], _describe(fresh[r.name.split(".", 1)[1]])))
        return out

    def _watch(self, path):
        """Watches a recorded tuner class's module: its package folder, or its file."""
        r = os.path.realpath(path)
        if os.path.basename(r) == "__init__.py":
            r = os.path.dirname(r)
        self.watched_roots.append(r)

    def _import_tuner_classes(self):
        """Imports each tuner class the recording names other than Triton's Autotuner (a
        team's subclass, a library's such as FLA's CachedAutotuner) before the patches, as a
        training script's imports come before the patches it applies at start-up (a module that
        keeps a reference to Autotuner.run keeps the original). Refused in one line when its
        module is not installed here or the class is not an Autotuner."""
        self.tuner_classes = {}
        for call in self.program["calls"]:
            cls = call.get("tuner_class", "")
            if cls in ("", "triton.runtime.autotuner.Autotuner") or cls in self.tuner_classes:
                continue
            meta = (self.program.get("tuner_meta") or {}).get(str(call["tuner"]))
            subclass, refused = tuners.tuner_class(cls, meta, self.autotuner.Autotuner,
                                                   self.folders, watch=self._watch)
            if subclass is None:
                raise SetupError(
                    "tuner class %s is not imported: %s; the python engine replays a tuner "
                    "through its real class (install its module or put it on PYTHONPATH, or "
                    "use --engine model)" % (cls, refused), kind="data")
            self.tuner_classes[cls] = subclass

    def _build_tuners(self):
        self.tuners = {}
        self.names = {}
        self.first_call = {}
        for call in self.program["calls"]:
            tid = call["tuner"]
            if tid in self.tuners:
                continue
            self.first_call[tid] = call
            tuner, positional, keys, source = self._make_tuner(call)
            used = [t for (t, _, _) in self.tuners.values()]
            if any(tuner is t for t in used):
                # Two recorded tuner objects, one importable kernel: the program held two
                # objects (a copy of the module's tuner); so does the replay.
                import copy
                tuner = copy.copy(tuner)
                source += "; a copy of it (another recorded tuner object)"
            self.info.setdefault("tuners", []).append("%s: %s" % (call["kernel"], source))
            self.reach.check_class(type(tuner))
            tuners.track(tuner, self._short_name(call["kernel"]))
            self.tuners[tid] = (tuner, positional, keys)
        self._share_recorded()

    def _short_name(self, kernel, suffix=""):
        short = "Autotuner(%s)" % kernel
        n = self.names.get(short, 0)
        self.names[short] = n + 1
        return short + ("#%d" % n if n else "") + suffix

    def _share_recorded(self):
        """Shares between the built tuners what the program shared, as the probe's identity
        records say (metadata version 2): one cache dict where the recording had one, and hooks
        that act on the tuner they acted on. A shallow copy of a tuner keeps the original's
        hooks, closures over the original, so every copy's hooks write the original's
        restore_copies; an original that made no call is built too (watched, named
        "... (hooks' owner)") for them to act on. Recordings without identity share nothing."""
        metas = self.program.get("tuner_meta") or {}
        order = list(self.tuners)
        ident = {}
        for tid in order:
            meta = metas.get(str(tid))
            got = meta.get("identity") if isinstance(meta, dict) else None
            if isinstance(got, dict):
                ident[tid] = got
        if not ident:
            return
        token = lambda tid: "%#x" % tid
        holder = {}
        for tid in order:
            fields = (ident.get(tid) or {}).get("fields")
            tok = fields.get("cache") if isinstance(fields, dict) else None
            if not isinstance(tok, str):
                continue
            if tok not in holder:
                holder[tok] = tid
                continue
            home = self.tuners[holder[tok]][0]
            if "cache" in vars(home):
                object.__setattr__(self.tuners[tid][0], "cache", vars(home)["cache"])
        owners = {token(tid): self.tuners[tid][0] for tid in order}
        for tid in order:
            hooks = (ident.get(tid) or {}).get("hooks")
            if not isinstance(hooks, dict):
                continue
            tuner = self.tuners[tid][0]
            for name in ("pre_hook", "post_hook"):
                h = hooks.get(name)
                tok = h.get("tuner") if isinstance(h, dict) else None
                if not isinstance(tok, str) or tok == token(tid):
                    continue
                owner = owners.get(tok)
                if owner is None:
                    owner, _, _, _ = self._make_tuner(self.first_call[tid])
                    if not any(owner is t for (t, _, _) in self.tuners.values()):
                        kernel = self.first_call[tid]["kernel"]
                        tuners.track(owner, self._short_name(kernel, " (hooks' owner %s)" % tok))
                        self.info.setdefault("tuners", []).append(
                            "%s: the hooks' owner %s, which made no call: built for the hooks "
                            "of the tuners that share it to act on" % (kernel, tok))
                    owners[tok] = owner
                rebound = tuners.rebind(vars(tuner).get(name), owner, self.autotuner.Autotuner)
                if rebound is not None:
                    object.__setattr__(tuner, name, rebound)

    def _make_tuner(self, call):
        """The tuner object for recorded call `call`'s tuner: its kernel's real tuner when the
        recording names an importable one, else one built from the recording (through the
        recorded class). Returns the tuner, the names of the arguments a call passes, the key
        names (or None) and where it came from (for the engine's info)."""
        tid = call["tuner"]
        cls = call.get("tuner_class", "")
        meta = (self.program.get("tuner_meta") or {}).get(str(tid))
        tuner, why = tuners.imported_kernel(meta, self.autotuner.Autotuner, self.folders)
        subclass = None
        if cls not in ("", "triton.runtime.autotuner.Autotuner") and (
                tuner is None or "%s.%s" % (type(tuner).__module__,
                                            type(tuner).__qualname__) != cls):
            # Another tuner class (a team's subclass, a library's such as FLA's
            # CachedAutotuner): replayed through the real class, or refused in one line.
            tuner = None
            subclass = self.tuner_classes[cls]
        keys = None
        if tuner is not None:
            config_names = set()
            for c in tuner.configs:
                config_names |= set(c.kwargs)
            positional = [a for a in tuner.arg_names if a not in config_names]
            keys = list(tuner.keys)
            source = "imported %s.%s" % (meta["kernel"]["module"], meta["kernel"]["qualname"])
        else:
            keys = (meta or {}).get("keys") or None
            if keys and tuners.key_values(keys, call["arg_names"], call["key"]) is None:
                keys = None
            try:
                tuner, positional = tuners.build(call, self.triton, keys=keys, cls=subclass)
            except Exception as e:  # noqa: BLE001
                if subclass is None:
                    raise
                raise SetupError("tuner class %s (module %s) cannot be built as Triton's "
                                 "autotune builds an Autotuner: %s: %s" % (
                                     cls, subclass.__module__, type(e).__name__, e),
                                 kind="data")
            source = "built from the recording" + (
                " (key names %s from the probe)" % ", ".join(keys) if keys else
                " (the recorded key carried by an extra argument)")
            if subclass is not None:
                source += "; class %s.%s (%s)" % (
                    subclass.__module__, subclass.__qualname__,
                    control.site_path(getattr(sys.modules.get(subclass.__module__),
                                              "__file__", None) or "?"))
            if meta:
                source += "; its kernel not imported: " + why
        return tuner, positional, keys, source


class SetupError(Exception):
    """A set-up problem for the user: `kind` says whose (see serve.py's docstring)."""

    def __init__(self, message, kind="internal"):
        super().__init__(message)
        self.kind = kind


def _patch_frame(e, path):
    """Where a patch's import failed: the innermost frame in real source (not importlib's
    frozen bootstrap, not rerace's own), else the patch file."""
    for fr in reversed(traceback.extract_tb(e.__traceback__)):
        if fr.filename.startswith("<frozen") or control.is_ours(fr.filename):
            continue
        return "%s:%d" % (fr.filename, fr.lineno)
    return path
