"""rerace_probe: announce Triton's autotuner state transitions to the rerace recorder.

Loaded by ``rerace record --probe triton`` through ``boot/sitecustomize.py`` (a path entry
that imports it at start-up: the recorded program is not touched). When no recorder is loaded
(``NVTX_INJECTION64_PATH`` unset) it does nothing.

It wraps ``triton.runtime.autotuner.Autotuner`` when that module is imported: ``run``
(call-begin with the key, configs, in-parameter names and ``restore_value`` /
``reset_to_zero`` indices; call-end; the exception that leaves it), ``_bench`` (bench-begin,
bench-end with ``do_bench``'s quantiles and the repetitions), the default pre- and post-hooks
(one mark per repetition, before the hook touches ``restore_copies``), and the final launch.
With ``RERACE_PROBE_FIELDS=1`` it also marks every write of ``nargs``, ``cache``,
``restore_copies`` and ``best_config``. The first call of each tuner carries, in its call-begin
mark's ``detail=`` field, a JSON object that says what ran (``metadata``): the kernel's module
and qualname, the key names, the Python, GIL, Triton and FLA versions, and where ``run`` and the
``nargs`` / ``restore_copies`` descriptors resolved to at that call, so a patched program is
recognised, and which objects it holds by identity (``identity``: its cache dict, configs and
hooks, and the tuner each hook acts on), so that tuners sharing state (shallow copies of one
tuner) replay sharing it; a later call's detail carries ``{"identity": ...}`` again when one of
them was reassigned. Every call whose class's ``run`` a patch replaced after the probe carries
``{"reach": {"Autotuner.run": {"patch", "on_stack", "by", ...}}}`` in its detail: whether the
replacement was on that call's stack, and which frame called Triton's ``run`` (the phantom
patch of issue 29, seen on the GPU). FLA's ``CachedAutotuner`` subclasses ``Autotuner`` and is covered by the same
wrappers (its class name is recorded).

Marks use the recorder's grammar (recorder/include/rerace/recorder/grammar.h) and travel as
NVTX marks (``torch.cuda.nvtx.mark``). ``Lock`` is a ``threading.Lock`` whose acquisitions and
releases are recorded, so a fix written in Python is checked as it was implemented.
"""

import functools
import importlib.abc
import importlib.util
import json
import os
import platform
import sys
import sysconfig
import threading
import traceback

from . import identity
from .identity import unwrap as _unwrap
from .reach import reach as _reach, with_reach as _with_reach

__all__ = ["Lock", "install", "install_import_hook", "install_sync", "set_emitter",
           "patch_autotuner", "encode", "metadata"]

#: Version of the metadata object (its "v" field).
METADATA_VERSION = 2

_emitter = None
_tls = threading.local()
_enabled = bool(os.environ.get("NVTX_INJECTION64_PATH"))
_fields = os.environ.get("RERACE_PROBE_FIELDS") == "1"


def set_fields(on):
    """Mark field reads and writes from now on (takes effect for classes patched after)."""
    global _fields
    _fields = bool(on)


def _torch_emitter(text):
    import torch  # the programs this probe serves use it

    torch.cuda.nvtx.mark(text)


def set_emitter(fn):
    """Route marks to ``fn(text)`` instead of NVTX (tests); enables the probe."""
    global _emitter, _enabled
    _emitter = fn
    _enabled = fn is not None


def _emit(text):
    if not _enabled:
        return
    (_emitter or _torch_emitter)(text)


def _esc(value):
    out = []
    for b in str(value).encode("utf-8"):
        if b <= 0x20 or b >= 0x7F or b in (0x25, 0x7C, 0x3D):  # % | =
            out.append("%{:02X}".format(b))
        else:
            out.append(chr(b))
    return "".join(out)


def encode(kind, tuner=0, cls="", kernel="", **f):
    """One tuner mark in the recorder's grammar."""
    parts = ["rerace:tuner", "kind=" + kind, "tuner={:#x}".format(tuner)]
    if cls:
        parts.append("class=" + _esc(cls))
    if kernel:
        parts.append("kernel=" + _esc(kernel))
    for name in ("field", "key", "config", "detail"):
        if f.get(name) is not None and f.get(name) != "":
            parts.append("{}={}".format(name, _esc(f[name])))
    for name in ("configs", "args"):
        if f.get(name):
            parts.append("{}={}".format(name, "|".join(_esc(v) for v in f[name])))
    for name in ("restore", "reset"):
        if f.get(name):
            parts.append("{}={}".format(name, ",".join(str(int(i)) for i in f[name])))
    if f.get("timings"):
        parts.append("timings=" + ",".join(repr(float(t)) for t in f["timings"]))
    if f.get("reps"):
        parts.append("reps={}".format(int(f["reps"])))
    for name, key in (("etype", "etype"), ("emsg", "emsg"), ("ewhere", "ewhere")):
        if f.get(key):
            parts.append("{}={}".format(name, _esc(f[key])))
    return " ".join(parts)


def _thread_mark():
    if getattr(_tls, "named", False):
        return
    _tls.named = True
    _emit("rerace:thread name=" + _esc(threading.current_thread().name))


class Lock:
    """A threading.Lock whose acquisitions and releases the recorder sees."""

    def __init__(self, name="lock"):
        self._lock = threading.Lock()
        self.name = name

    def acquire(self, blocking=True, timeout=-1):
        ok = self._lock.acquire(blocking, timeout)
        if ok:
            _thread_mark()
            _emit("rerace:lock kind=acquire lock={:#x} name={}".format(id(self), _esc(self.name)))
        return ok

    def release(self):
        _emit("rerace:lock kind=release lock={:#x} name={}".format(id(self), _esc(self.name)))
        self._lock.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


def _class_name(obj):
    t = type(obj)
    return "{}.{}".format(t.__module__, t.__qualname__)


def _kernel_name(tuner):
    base = getattr(tuner, "base_fn", None)
    return getattr(base, "__name__", "kernel")


def _key(tuner, args, kwargs):
    # As Autotuner.run computes it (triton 3.6, autotuner.py:216-222).
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    _args = {k: v for (k, v) in all_args.items() if k in tuner.arg_names}
    key = [_args[k] for k in tuner.keys if k in _args]
    for _, arg in _args.items():
        if hasattr(arg, "dtype"):
            key.append(str(arg.dtype))
    return str(tuple(key))


def _index(tuner, config):
    for i, c in enumerate(tuner.configs):
        if c is config:
            return i
    return -1


def _where(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return ""
    frame = tb[-1]
    path = frame.filename
    cut = path.rfind("triton/")
    if cut >= 0:
        path = path[cut:]
    return "{}:{} {}".format(path, frame.lineno, frame.name)


def _mark(tuner, kind, **f):
    _thread_mark()
    _emit(encode(kind, id(tuner), _class_name(tuner), _kernel_name(tuner), **f))


def _where_defined(obj):
    """{module, qualname, file, line} of a function (or of an object's type otherwise)."""
    obj = _unwrap(obj)
    fn = getattr(obj, "__func__", obj)  # bound and class methods
    code = getattr(fn, "__code__", None)
    if code is None and not hasattr(fn, "__qualname__"):
        fn = type(fn)
    out = {"module": getattr(fn, "__module__", None),
           "qualname": getattr(fn, "__qualname__", getattr(fn, "__name__", None))}
    if code is not None:
        out["file"] = code.co_filename
        out["line"] = code.co_firstlineno
    return out


def _descriptor(cls, name):
    """How class attribute ``name`` is defined, when it is a descriptor (a property...)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            v = vars(klass)[name]
            break
    else:
        return None
    if not hasattr(type(v), "__get__"):
        return None
    if isinstance(v, property):
        out = {"kind": "property", "owner": klass.__module__ + "." + klass.__qualname__}
        for part in ("fget", "fset", "fdel"):
            f = getattr(v, part)
            if f is not None:
                out[part] = _where_defined(f)
        return out
    t = type(v)
    return {"kind": t.__module__ + "." + t.__qualname__,
            "owner": klass.__module__ + "." + klass.__qualname__}


def _version(module_name, dist=None):
    mod = sys.modules.get(module_name)
    if mod is None:
        return None
    v = getattr(mod, "__version__", None)
    if v is None and dist:
        try:
            from importlib import metadata as md

            v = md.version(dist)
        except Exception:
            v = None
    return None if v is None else str(v)


def _gil():
    check = getattr(sys, "_is_gil_enabled", None)
    if check is not None:
        return bool(check()), "sys._is_gil_enabled"
    # Before 3.13 CPython has no free-threaded build: the GIL is always there.
    return platform.python_implementation() == "CPython", "version"


def metadata(tuner):
    """What ran at this tuner's call, as a JSON-ready dict (the first call-begin's detail=)."""
    cls = type(tuner)
    base = getattr(tuner, "base_fn", None)
    gil, gil_source = _gil()
    out = {
        "v": METADATA_VERSION,
        "kernel": {"module": getattr(base, "__module__", None),
                   "qualname": getattr(base, "__qualname__", getattr(base, "__name__", None))},
        "keys": [str(k) for k in (getattr(tuner, "keys", None) or [])],
        "class": {"module": cls.__module__, "qualname": cls.__qualname__},
        "python": {"implementation": platform.python_implementation(),
                   "version": platform.python_version(),
                   "gil": gil, "gil_source": gil_source,
                   "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                   "switch_interval": sys.getswitchinterval()},
        "triton": _version("triton", "triton"),
        "fla": _version("fla", "flash-linear-attention"),
        "run": _where_defined(cls.run),
    }
    # Where Autotuner.run itself resolves (a subclass such as FLA's calls it through super()).
    for klass in cls.__mro__:
        if klass.__name__ == "Autotuner" and klass.__module__ == "triton.runtime.autotuner":
            if klass is not cls:
                out["autotuner_run"] = _where_defined(klass.run)
            break
    bench = getattr(cls, "_bench", None)
    if bench is not None:
        out["bench"] = _where_defined(bench)
    fields = {}
    for name in ("nargs", "restore_copies", "cache", "best_config"):
        d = _descriptor(cls, name)
        if d is not None:
            fields[name] = d
    if fields:
        out["fields"] = fields
    hooks = {}
    for name in ("pre_hook", "post_hook"):
        h = getattr(tuner, name, None)
        if h is not None:
            hooks[name] = _where_defined(h)
            hooks[name]["user_defined"] = bool(getattr(tuner, "user_defined_" + name, False))
    out["hooks"] = hooks
    prune = {}
    for name in ("early_config_prune", "perf_model"):
        f = getattr(tuner, name, None)
        if f is not None:
            prune[name] = _where_defined(f)
    if prune:
        prune["top_k"] = getattr(tuner, "configs_top_k", None)
        out["prune_configs_by"] = prune
    if hasattr(tuner, "cache_results"):
        out["cache_results"] = bool(tuner.cache_results)
    out["identity"] = identity.identity(tuner)
    return out


def _restore_shapes(tuner, args, kwargs):
    """The shapes of the call's restore_value tensors, in restore_value's order (None: not a
    tensor): a post-hook that copies another call's saved copy into a tensor of another shape
    raises RuntimeError, one of the same shape restores silently."""
    named = dict(zip(tuner.arg_names, args))
    named.update(kwargs)
    out = []
    for name in getattr(tuner, "restore_value", None) or []:
        shape = getattr(named.get(name), "shape", None)
        out.append([int(d) for d in shape] if shape is not None else None)
    return out


def _call_detail(tuner, args, kwargs):
    """The call-begin's detail=: the metadata JSON on the tuner's first call; on every call with
    restore_value, {"restore_shapes": [...]} (added to the metadata on the first)."""
    meta = _metadata_once(tuner)
    try:
        shapes = _restore_shapes(tuner, args, kwargs)
    except Exception:  # never break the recorded program
        shapes = []
    if all(x is None for x in shapes):
        return meta
    if meta is None:
        return json.dumps({"restore_shapes": shapes}, separators=(",", ":"))
    return meta[:-1] + ',"restore_shapes":' + json.dumps(shapes, separators=(",", ":")) + "}"


def _metadata_once(tuner):
    """The metadata JSON for this tuner's first call (None on later calls, whichever thread)."""
    token = object()
    try:
        d = vars(tuner)
    except TypeError:
        return None
    # Keyed by the object's id: a shallow copy of a described tuner carries the original's
    # __dict__, and is described at its own first call all the same.
    mark = "_rerace_meta_%x" % id(tuner)
    if mark in d or d.setdefault(mark, token) is not token:  # atomic
        return identity.changed(tuner)
    try:
        out = json.dumps(metadata(tuner), sort_keys=True, separators=(",", ":"), default=str)
    except Exception as e:  # never break the recorded program
        return json.dumps({"v": METADATA_VERSION, "error": "%s: %s" % (type(e).__name__, e)})
    try:
        identity.remember(tuner)
    except Exception:
        pass
    return out



class _FnProxy:
    """Stands in for Autotuner.fn to see the final launch (not the benchmark launches)."""

    def __init__(self, fn, tuner):
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_tuner", tuner)

    @property
    def fn(self):
        # Triton walks `.fn` until it reaches the JITFunction: hand it the wrapped object.
        return self._fn

    def run(self, *args, **kwargs):
        bench = getattr(_tls, "bench", None)
        if not (bench and bench[0] is self._tuner):
            idx = -1
            for i, c in enumerate(self._tuner.configs):
                kw = c.all_kwargs()
                if all(kwargs.get(k) == v for k, v in kw.items()):
                    idx = i
                    break
            _mark(self._tuner, "launch", config=idx)
        return self._fn.run(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._fn, name)


def _wrap_hooks(tuner):
    """Wraps the tuner's pre- and post-hook (each once) so that every benchmark's hooks are marked."""
    names = ",".join(tuner.restore_value)
    pre, post = tuner.pre_hook, tuner.post_hook

    if not hasattr(pre, "_rerace_probe_wraps"):
        def pre_hook(kwargs, reset_only=False):
            bench = getattr(_tls, "bench", None)
            # The tuner benchmarking, whose hook this is: the one it was made for, or a copy of
            # it (copy.copy keeps the original's hooks), marked under its own name.
            if not reset_only and bench and (bench[0] is tuner or
                                             getattr(bench[0], "pre_hook", None) is pre_hook):
                bench[2][0] += 1
                _mark(bench[0], "pre-hook", config=bench[1], detail=names)
            return pre(kwargs, reset_only=reset_only) if pre is not None else None

        pre_hook._rerace_probe_wraps = pre
        object.__setattr__(tuner, "pre_hook", pre_hook)

    if not hasattr(post, "_rerace_probe_wraps"):
        def post_hook(kwargs, exception):
            bench = getattr(_tls, "bench", None)
            if bench and (bench[0] is tuner or getattr(bench[0], "post_hook", None) is post_hook):
                _mark(bench[0], "post-hook", config=bench[1], detail=names)
            return post(kwargs, exception) if post is not None else None

        post_hook._rerace_probe_wraps = post
        object.__setattr__(tuner, "post_hook", post_hook)


_hooks_lock = threading.Lock()


def _ensure_hooks(tuner):
    """Wraps again hooks that a subclass installed after Triton's __init__ (FLA's
    CachedAutotuner sets its own None-safe hooks in its __init__, replacing the wrappers):
    without this its recordings carry no pre-hook or post-hook marks."""
    if (hasattr(getattr(tuner, "pre_hook", None), "_rerace_probe_wraps")
            and hasattr(getattr(tuner, "post_hook", None), "_rerace_probe_wraps")):
        return
    with _hooks_lock:  # two threads' first calls must not wrap a wrapper
        try:
            _wrap_hooks(tuner)
        except Exception:  # never break the recorded program
            pass


_FIELDS = {"nargs": "nargs", "cache": "cache", "restore_copies": "restore_copies",
           "best_config": "best_config"}


def patch_autotuner(module):
    """Wraps module.Autotuner (idempotent)."""
    A = module.Autotuner
    if getattr(A, "_rerace_patched", False):
        return
    orig_init, orig_run, orig_bench = A.__init__, A.run, A._bench

    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        _wrap_hooks(self)
        object.__setattr__(self, "fn", _FnProxy(self.fn, self))

    def run(self, *args, **kwargs):
        key = _key(self, args, kwargs)
        detail = None
        if _enabled:
            _ensure_hooks(self)
            fn = vars(self).get("fn")
            if isinstance(fn, _FnProxy) and object.__getattribute__(fn, "_tuner") is not self:
                # A copy of a tuner holds the original's proxy: its launches are its own.
                object.__setattr__(self, "fn", _FnProxy(object.__getattribute__(fn, "_fn"), self))
            try:
                detail = _with_reach(_call_detail(self, args, kwargs), _reach(A, run))
            except Exception:  # never break the recorded program
                detail = _call_detail(self, args, kwargs)
        _mark(self, "call-begin", key=key, configs=[str(c) for c in self.configs],
              detail=detail,
              args=list(self.arg_names),
              restore=[self.arg_names.index(n) for n in self.restore_value if n in self.arg_names],
              reset=[self.arg_names.index(n) for n in self.reset_to_zero if n in self.arg_names])
        try:
            ret = orig_run(self, *args, **kwargs)
        except BaseException as e:  # recorded, then raised on unchanged
            _mark(self, "error", key=key, etype=type(e).__name__, emsg=str(e), ewhere=_where(e))
            raise
        _mark(self, "call-end", key=key, config=_index(self, getattr(self, "best_config", None)))
        return ret

    def _bench(self, *args, config, **meta):
        i = _index(self, config)
        _mark(self, "bench-begin", config=i)
        prev = getattr(_tls, "bench", None)
        _tls.bench = (self, i, [0])
        try:
            result = orig_bench(self, *args, config=config, **meta)
            reps = _tls.bench[2][0]
        finally:
            _tls.bench = prev
        timings = result if isinstance(result, (list, tuple)) else [result]
        _mark(self, "bench-end", config=i, timings=timings, reps=reps)
        return result

    run._rerace_probe_wraps = orig_run
    _bench._rerace_probe_wraps = orig_bench
    A.__init__ = __init__
    A.run = run
    A._bench = _bench
    if _fields:
        orig_setattr = A.__setattr__

        def __setattr__(self, name, value):
            if name in _FIELDS:
                _mark(self, "write", field=_FIELDS[name])
            orig_setattr(self, name, value)

        A.__setattr__ = __setattr__
    A._rerace_patched = True


class _Finder(importlib.abc.MetaPathFinder):
    """Patches triton.runtime.autotuner right after it is imported."""

    def find_spec(self, name, path, target=None):
        if name != "triton.runtime.autotuner":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch_autotuner(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def install_import_hook():
    if not _enabled:
        return
    mod = sys.modules.get("triton.runtime.autotuner")
    if mod is not None:
        patch_autotuner(mod)
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _sync_emit(text):
    if not _enabled:
        return
    # NVTX marks go through torch: a thread started before the program imported it (a
    # library's at start-up) is not the step's, and importing torch from here is not ours to do.
    if _emitter is None and "torch" not in sys.modules:
        return
    _thread_mark()
    _emit(text)


def install_sync():
    """Marks the program's own synchronization from now on (rerace_probe/sync.py)."""
    from . import sync

    sync.install(_sync_emit)


def install():
    """Patches now if Triton is already imported, else when it is; marks the program's own
    synchronization (threads, events, queues, futures, barriers: rerace_probe/sync.py)."""
    install_import_hook()
    if _enabled:
        try:
            install_sync()
        except Exception:  # never break the recorded program
            pass
