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
``restore_copies`` and ``best_config``. FLA's ``CachedAutotuner`` subclasses ``Autotuner``
and is covered by the same wrappers (its class name is recorded).

Marks use the recorder's grammar (recorder/include/rerace/recorder/grammar.h) and travel as
NVTX marks (``torch.cuda.nvtx.mark``). ``Lock`` is a ``threading.Lock`` whose acquisitions and
releases are recorded, so a fix written in Python is checked as it was implemented.
"""

import importlib.abc
import importlib.util
import os
import sys
import threading
import traceback

__all__ = ["Lock", "install", "install_import_hook", "set_emitter", "patch_autotuner", "encode"]

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
    pre, post = tuner.pre_hook, tuner.post_hook
    names = ",".join(tuner.restore_value)

    def pre_hook(kwargs, reset_only=False):
        bench = getattr(_tls, "bench", None)
        if not reset_only and bench and bench[0] is tuner:
            bench[2][0] += 1
            _mark(tuner, "pre-hook", config=bench[1], detail=names)
        return pre(kwargs, reset_only=reset_only)

    def post_hook(kwargs, exception):
        bench = getattr(_tls, "bench", None)
        if bench and bench[0] is tuner:
            _mark(tuner, "post-hook", config=bench[1], detail=names)
        return post(kwargs, exception)

    object.__setattr__(tuner, "pre_hook", pre_hook)
    object.__setattr__(tuner, "post_hook", post_hook)


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
        _mark(self, "call-begin", key=key, configs=[str(c) for c in self.configs],
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


def install():
    """Patches now if Triton is already imported, else when it is."""
    install_import_hook()
