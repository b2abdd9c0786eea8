"""Tuner objects: built from the recording (or imported), and watched for shared accesses.

``track(tuner, name)`` swaps the tuner's class for a subclass of it that reports each read and
write of the tuner's mutable attributes (the fields Triton's ``Autotuner`` keeps per call, and
any attribute written after the tuner was built) to the run as scheduling points, and wraps
the dicts assigned to them in ``TrackedDict``, whose reads and writes are points too. The
subclass keeps the class's name, module and methods: ``type(t).run`` is still the (possibly
patched) ``Autotuner.run``, ``super()`` still works, the user's properties still apply.

``build(call, ...)`` makes a real ``triton.autotune`` tuner from what the recording says (the
kernel's argument names, configs, key, ``restore_value`` / ``reset_to_zero``); the kernel is a
real ``triton.jit`` function with an empty body (its launch is stubbed, fakes.py).
"""

import ast
import inspect
import linecache
import os
import sys
import types

from . import control

# Triton's per-call state on the shared tuner object (all releases 3.2-3.9), and FLA's.
FIELDS = frozenset([
    "nargs", "cache", "restore_copies", "best_config", "configs_timings", "bench_time",
    "config_cache", "_cache",
])

_subclasses = {}
TRACKED = []  # every tuner track() watches (reset.py puts back their state)


def _access(kind, obj, label):
    run = control.RUN
    if run is not None:
        run.access(kind, obj, label)


_labels = {}  # (id(code), instruction offset, what) -> (code, label): _caller_label's answers


def _caller_label(what):
    """"file:line function: what" of the program code that made the access (the first frame
    outside this file). Cached per call site and `what` (the same access of 8 threads, or of
    a loop, is labelled once; keyed by id(code), the code object kept to hold its id)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    if f is None:
        return what
    code = f.f_code
    key = (id(code), f.f_lasti, what)
    got = _labels.get(key)
    if got is not None and got[0] is code:
        return got[1]
    path = code.co_filename
    cut = path.rfind("site-packages/")
    if cut >= 0:
        path = path[cut + len("site-packages/"):]
    else:
        cut = path.rfind("triton/")
        path = path[cut:] if cut >= 0 else path.rsplit("/", 1)[-1]
    label = "%s:%d %s: %s" % (path, f.f_lineno, code.co_name, what)
    _labels[key] = (code, label)
    return label


class TrackedDict(dict):
    """A dict held by a tuner field: its reads and writes are scheduling points.

    ``{**d}`` and ``dict(d)`` copy it without a point of their own (CPython copies a dict
    atomically); the read of the field that produced ``d`` was the point."""

    __slots__ = ("_rr_obj",)

    def _r(self, what):
        _access(control.R, self._rr_obj, _caller_label("read " + self._rr_obj + what))

    def _w(self, what):
        _access(control.W, self._rr_obj, _caller_label("write " + self._rr_obj + what))

    def __getitem__(self, k):
        self._r("[%r]" % (k,))
        return dict.__getitem__(self, k)

    def __setitem__(self, k, v):
        self._w("[%r]" % (k,))
        dict.__setitem__(self, k, v)

    def __delitem__(self, k):
        self._w("[%r] (del)" % (k,))
        dict.__delitem__(self, k)

    def __contains__(self, k):
        self._r(" (in)")
        return dict.__contains__(self, k)

    def get(self, k, default=None):
        self._r(".get")
        return dict.get(self, k, default)

    def items(self):
        self._r(".items()")
        return dict.items(self)

    def keys(self):
        self._r(".keys()")
        return dict.keys(self)

    def values(self):
        self._r(".values()")
        return dict.values(self)

    def __len__(self):
        self._r(" (len)")
        return dict.__len__(self)

    def setdefault(self, k, default=None):
        self._w(".setdefault")
        return dict.setdefault(self, k, default)

    def pop(self, *a):
        self._w(".pop")
        return dict.pop(self, *a)

    def popitem(self):
        self._w(".popitem")
        return dict.popitem(self)

    def clear(self):
        self._w(".clear()")
        dict.clear(self)

    def update(self, *a, **k):
        self._w(".update")
        dict.update(self, *a, **k)

    def __reduce__(self):
        return (dict, (dict(self),))


def _wrap(value, obj):
    if type(value) is dict:
        d = TrackedDict(value)
        d._rr_obj = obj + "{}"
        return d
    return value


def _tracking_class(base):
    sub = _subclasses.get(base)
    if sub is not None:
        return sub
    get = base.__getattribute__
    put = base.__setattr__

    def __getattribute__(self, name):
        # NB: runs for every attribute of the tuner: _watched inline, without a call.
        if name in object.__getattribute__(self, "_rr_watched"):
            obj = get(self, "_rr_name") + "." + name
            _access(control.R, obj, _caller_label("read self." + name))
        return get(self, name)

    def __setattr__(self, name, value):
        if name.startswith("_rr_"):
            return put(self, name, value)
        obj = get(self, "_rr_name") + "." + name
        if name in get(self, "_rr_code"):
            return put(self, name, value)  # the class's code takes it (not the instance's data)
        if get(self, "_rr_live"):
            _watched(self).add(name)
            _access(control.W, obj, _caller_label("write self." + name))
        put(self, name, _wrap(value, obj))

    def _watched(self):
        return object.__getattribute__(self, "_rr_watched")

    sub = type(base.__name__, (base,), {
        "__getattribute__": __getattribute__,
        "__setattr__": __setattr__,
        "__module__": base.__module__,
        "__qualname__": base.__qualname__,
        "_rr_tracking": True,
    })
    _subclasses[base] = sub
    return sub


# Data descriptors that hold the instance's own data (__slots__, C members): watched as data.
_SLOTS = (types.MemberDescriptorType, types.GetSetDescriptorType)


def _code_attributes(cls):
    """The names a data descriptor of `cls` (a property, say) serves: reading or writing one
    runs its code instead of touching the instance's own data (candidates for _per_thread)."""
    names = set()
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            kind = type(attr)
            if kind not in _SLOTS and (hasattr(kind, "__set__") or hasattr(kind, "__delete__")):
                names.add(name)
            else:
                names.discard(name)
    return frozenset(names)


def _per_thread(tuner, name):
    """Whether the data descriptor serving `tuner.name` keeps a value per thread (a patch's
    thread-local ``nargs``): a probe value set through it here, read back through it from
    another thread, must not come back; then the old value is put back. A descriptor that
    refuses the probe, or whose storage is shared (the instance's ``__dict__``, a global, a
    class attribute), is not: its name stays a shared object. Set-up only (no run is live)."""
    import threading
    cls = type(tuner)
    desc = inspect.getattr_static(cls, name)
    missing = object()
    try:
        old = desc.__get__(tuner, cls)
    except Exception:  # noqa: BLE001 - nothing set for this thread yet
        old = missing
    probe = {"rerace per-thread probe": name}
    own = dict(vars(tuner))  # put back after (storage in the instance's __dict__)
    try:
        desc.__set__(tuner, probe)
    except Exception:  # noqa: BLE001 - read-only, or refuses the value: watched as data
        vars(tuner).clear()
        vars(tuner).update(own)
        return False
    seen = []

    def other():
        try:
            seen.append(desc.__get__(tuner, cls))
        except Exception as e:  # noqa: BLE001 - nothing there for that thread: per thread
            seen.append(e)

    t = threading.Thread(target=other, name="rerace-probe")
    t.start()
    t.join()
    try:
        if old is not missing:
            desc.__set__(tuner, old)
        elif hasattr(desc, "__delete__"):
            desc.__delete__(tuner)
    except Exception:  # noqa: BLE001
        pass
    vars(tuner).clear()
    vars(tuner).update(own)
    v = seen[0] if seen else probe
    return not (v is probe or (type(v) in (dict, TrackedDict) and v == probe))


def track(tuner, name):
    """Watches `tuner` from now on; `name` names its shared objects in reports: the fields in
    FIELDS and every attribute written from now on, but those its class serves by code that
    keeps a value per thread (_per_thread: a tls fix's property), which no two threads share;
    what that code touches of the tuner is reported as usual."""
    cls = type(tuner)
    if vars(cls).get("_rr_tracking") and _subclasses.get(cls.__bases__[0]) is cls:
        # A copy of a watched tuner (copy.copy keeps its class): watched as its own class is.
        object.__setattr__(tuner, "__class__", cls.__bases__[0])
    code = frozenset(n for n in _code_attributes(type(tuner)) if _per_thread(tuner, n))
    object.__setattr__(tuner, "_rr_name", name)
    object.__setattr__(tuner, "_rr_code", code)
    object.__setattr__(tuner, "_rr_watched", set(FIELDS - code))
    object.__setattr__(tuner, "_rr_live", False)
    for field in list(vars(tuner)):
        if field in FIELDS:
            object.__setattr__(tuner, field, _wrap(vars(tuner)[field], name + "." + field))
    tuner.__class__ = _tracking_class(type(tuner))
    object.__setattr__(tuner, "_rr_live", True)
    TRACKED.append(tuner)
    return tuner


def rebind(fn, owner, autotuner_cls):
    """`fn` (a tuner's hook) made to act on tuner `owner`: a bound method of a tuner bound to
    `owner`, a function whose closure holds a tuner with that cell holding `owner` (Triton's
    default hooks close over ``self``). None when `fn` refers to no tuner."""
    self_ = getattr(fn, "__self__", None)
    if isinstance(self_, autotuner_cls):
        return types.MethodType(fn.__func__, owner)
    cells = getattr(fn, "__closure__", None)
    if not cells or not isinstance(fn, types.FunctionType):
        return None
    new, hit = [], False
    for cell in cells:
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            new.append(cell)
            continue
        if isinstance(v, autotuner_cls):
            new.append(types.CellType(owner))
            hit = True
        else:
            new.append(cell)
    if not hit:
        return None
    g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, tuple(new))
    g.__kwdefaults__ = fn.__kwdefaults__
    g.__qualname__ = fn.__qualname__
    g.__dict__.update(fn.__dict__)
    return g


# ---- building a tuner from the recording ----

def parse_config(text, config_cls):
    """'BLOCK_N: 1024, num_warps: 4, num_ctas: 1, num_stages: 3, maxnreg: None' -> Config."""
    params = set(inspect.signature(config_cls.__init__).parameters) - {"self", "kwargs"}
    kwargs, extra = {}, {}
    for part in text.split(", "):
        name, sep, value = part.partition(": ")
        if not sep:
            raise ValueError("config %r: %r is not 'name: value'" % (text, part))
        try:
            v = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            v = value
        (extra if name in params else kwargs)[name] = v
    extra = {k: v for k, v in extra.items() if k in params}
    return config_cls(kwargs, **extra)


def kernel_function(name, arg_names):
    """A Python function `name(*arg_names)` with an empty body whose source inspect can read
    (triton.jit parses it)."""
    if not name.isidentifier():
        name = "kernel"
    args = [a if a.isidentifier() else "arg%d" % i for i, a in enumerate(arg_names)]
    src = "def %s(%s):\n    pass\n" % (name, ", ".join(args))
    filename = "<rerace recorded kernel %s>" % name
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


KEY_ARG = "rerace_recorded_key"


def tuner_class(recorded, meta, autotuner_cls, folders, watch=None):
    """The tuner class the recording names (`recorded`, "module.Qualname"; the probe's metadata
    splits it), imported when its module is installed here (trust.check), as (class, "") when
    it subclasses `autotuner_cls`, else (None, why not). `watch(path)` is called with the
    module's file (or its package's) before it is imported, so that its locks are rerace's."""
    import importlib
    from . import trust
    c = (meta or {}).get("class") or {}
    if c.get("module") and c.get("qualname") and "%s.%s" % (c["module"], c["qualname"]) == recorded:
        splits = [(c["module"], c["qualname"])]
    else:
        parts = recorded.split(".")
        splits = [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]
    why = "%r is not a module and a class name" % recorded
    for mod, qualname in splits:
        if mod == "__main__" or "<locals>" in qualname:
            return None, "module %s: defined in a script or a function, not importable" % mod
        if not all(p.isidentifier() for p in qualname.split(".")):
            return None, "%r is not a qualified name" % qualname
        path, why = trust.check(mod, folders)
        if why:
            why = "module %s: %s" % (mod, why)
            continue
        if watch is not None:
            watch(path)
        try:
            try:
                obj = importlib.import_module(mod)
            except ModuleNotFoundError as e:
                # A dependency this Python lacks: torch (CI's have none; the fake stands in),
                # or one a parent package's __init__ needs (FLA's import every kernel, and
                # those need einops too): the module alone, its parents bare. When the module
                # itself needs it, that import fails again and says so.
                if "." not in mod or not e.name or mod == e.name or mod.startswith(e.name + "."):
                    raise
                obj = import_alone(mod, path, missing=e.name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except Exception as e:  # noqa: BLE001 - any failure is the one line the user reads
            return None, "module %s: %s: %s" % (mod, type(e).__name__, e)
        if not (isinstance(obj, type) and issubclass(obj, autotuner_cls)):
            return None, "%s.%s is not a subclass of Triton's Autotuner" % (mod, qualname)
        return obj, ""
    return None, why


FAKE_TORCH = []  # the modules import_alone loaded with the fake torch (engine_setup.py says so)
ALONE = []       # the others import_alone loaded, each with the module their packages lack


def import_alone(mod, path, missing="torch"):
    """Module `mod` (in package `path`, trust-checked) imported without running its parent
    packages' ``__init__`` (FLA's import every kernel, and those need torch and einops), with the
    minimal fake torch (fake_torch.py) standing in while it imports, when this Python has none:
    each parent package is a bare module whose ``__path__`` is its folder. `missing`: the module
    whose absence made the package's own import fail (said in the engine's first lines)."""
    import importlib.machinery
    import importlib.util
    import sys
    import types
    parts = mod.split(".")
    top = os.path.realpath(os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path)
    file = os.path.realpath(os.path.join(top, *parts[1:]) + ".py")
    if not file.startswith(top + os.sep) or not os.path.isfile(file):
        raise ImportError("%s is not a file of package %s" % (mod, parts[0]))
    for i in range(1, len(parts)):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [os.path.join(top, *parts[1:i])]
            # A spec, so that finding another of its modules later (trust.check) works.
            pkg.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            pkg.__spec__.submodule_search_locations = pkg.__path__
            pkg.__rerace_bare__ = True
            sys.modules[name] = pkg
    no_torch = importlib.util.find_spec("torch") is None and "torch" not in sys.modules
    # The fake torch only where torch is what is missing: the package's (missing == "torch"),
    # or, after another dependency of the package, the module's own.
    fake = no_torch and missing == "torch"
    while True:
        if fake:
            from . import fake_torch
            sys.modules["torch"] = fake_torch
        try:
            spec = importlib.util.spec_from_file_location(mod, file)
            m = importlib.util.module_from_spec(spec)
            sys.modules[mod] = m
            spec.loader.exec_module(m)
            break
        except ModuleNotFoundError as e:
            sys.modules.pop(mod, None)
            if fake or not no_torch or e.name != "torch":
                raise
            fake = True
        finally:
            if fake:
                sys.modules.pop("torch", None)
    if fake:
        FAKE_TORCH.append(mod)
    if missing != "torch":
        ALONE.append([mod, missing])
    return m


def build(call, triton, keys=None, cls=None):
    """A triton.autotune tuner for recorded call `call` (a dict from the program).

    `keys`: the names of the key's arguments, when the probe recorded them. Without them the
    kernel gets one more argument, `rerace_recorded_key` (its first), that carries the recorded
    key and is the tuner's key. Either way calls with equal recorded keys hit the same cache
    entry, as they did. Returns the tuner and the names of the arguments a call passes."""
    configs = [parse_config(c, triton.Config) for c in call["configs"]]
    config_names = set()
    for c in configs:
        config_names |= set(c.kwargs)
    arg_names = list(call["arg_names"])
    positional = [a for a in arg_names if a not in config_names]
    # (The key first,) then the arguments a call passes, then the configs' meta-parameters.
    lead = [] if keys else [KEY_ARG]
    fn = kernel_function(call["kernel"], lead + positional +
                         [a for a in arg_names if a in config_names])
    jit = triton.jit(fn)
    names = lambda idx: [arg_names[i] for i in idx if i < len(arg_names)]
    params = inspect.signature(triton.autotune).parameters
    kw = {"configs": configs, "key": list(keys) if keys else [KEY_ARG]}
    if "restore_value" in params:
        kw["restore_value"] = names(call["restore_value"]) or None
    if "reset_to_zero" in params:
        kw["reset_to_zero"] = names(call["reset_to_zero"]) or None
    if cls is None:
        tuner = triton.autotune(**kw)(jit)
    else:
        # The recorded subclass, made by triton.autotune with the arguments Triton's own
        # decorator passes: it looks `Autotuner` up in its module when it builds the tuner.
        from triton.runtime import autotuner as module
        stock = module.Autotuner
        module.Autotuner = cls
        try:
            tuner = triton.autotune(**kw)(jit)
        finally:
            module.Autotuner = stock
    return tuner, positional


def key_values(keys, arg_names, recorded_key):
    """{name: value} of the key's arguments, from the recorded key's text
    ("(1024, 'torch.float32', ...)": the key arguments' values, then the tensors' dtypes), or
    None when it cannot be read."""
    try:
        parsed = ast.literal_eval(recorded_key)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(parsed, tuple):
        return None
    names = [k for k in keys if k in arg_names]
    if len(parsed) < len(names):
        return None
    return dict(zip(names, parsed))


def imported_kernel(meta, autotuner_cls, folders):
    """The kernel's real tuner object, when the recording names a module installed here
    (trust.check: in site-packages or the user's PYTHONPATH, never the current directory or the
    standard library), else None and why not."""
    import importlib
    from . import trust
    k = (meta or {}).get("kernel") or {}
    mod, qualname = k.get("module"), k.get("qualname") or ""
    if not mod or mod == "__main__" or "<locals>" in qualname or not qualname:
        return None, "defined in a script or a function, not importable"
    if not isinstance(qualname, str) or not all(p.isidentifier() for p in qualname.split(".")):
        return None, "%r is not a qualified name" % (qualname,)
    _, why = trust.check(mod, folders)
    if why:
        return None, "module %s: %s" % (mod, why)
    try:
        obj = importlib.import_module(mod)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001 - any failure means: build it from the recording
        return None, "%s.%s: %s: %s" % (mod, qualname, type(e).__name__, e)
    # The probe names the kernel function; the module holds the tuner wrapping it.
    if not isinstance(obj, autotuner_cls):
        return None, "%s.%s is a %s, not a tuner" % (mod, qualname, type(obj).__name__)
    return obj, ""
