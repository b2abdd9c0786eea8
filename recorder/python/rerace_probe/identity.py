"""Which objects a tuner holds, by identity (the probe's metadata version 2).

A shallow ``copy.copy`` of a tuner keeps the original's cache dict, configs and hooks, and
those hooks are closures over the original: every copy's hooks write the original's
``restore_copies``. ``identity(tuner)`` says what a tuner holds, so that a replay shares
between tuners what the program shared; ``changed(tuner)`` says it again on a later call when
one of them was reassigned."""

import functools
import json


def unwrap(fn):
    """The function the probe's own wrapper stands for (a patch applied before the probe)."""
    seen = 0
    while getattr(fn, "_rerace_probe_wraps", None) is not None and seen < 8:
        fn = fn._rerace_probe_wraps
        seen += 1
    return fn


def _token(obj):
    return "{:#x}".format(id(obj))


def _autotuner_base(tuner):
    for klass in type(tuner).__mro__:
        if klass.__name__ == "Autotuner" and klass.__module__ == "triton.runtime.autotuner":
            return klass
    return type(tuner)


def _bound_tuner(fn, base):
    """The tuner a hook acts on: its ``__self__`` (a bound method), a tuner its closure holds
    (Triton's default hooks close over ``self``), or one a ``functools.partial`` carries;
    through the probe's own wrappers. None when it refers to none."""
    for _ in range(8):
        if fn is None:
            return None
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, base):
            return owner
        if isinstance(fn, functools.partial):
            for v in fn.args:
                if isinstance(v, base):
                    return v
        for cell in getattr(getattr(fn, "__func__", fn), "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(v, base):
                return v
        inner = getattr(fn, "_rerace_probe_wraps", None)
        if inner is None:
            inner = getattr(fn, "func", None)  # functools.partial
        fn = inner
    return None


#: The tuner's fields whose objects two tuners can share: the per-key cache, the configs, and
#: the dicts FLA's CachedAutotuner keeps.
SHARED_FIELDS = ("cache", "configs", "config_cache", "_cache", "restore_copies", "nargs")


def identity(tuner):
    """Which objects this tuner holds, by identity (``id()`` in hex, as tuners are named), so
    that a replay can share between tuners what the program shared: ``self``; ``fields``, the
    mutable objects (dicts, lists) of SHARED_FIELDS it holds; ``hooks``, for the pre- and
    post-hook and ``prune_configs_by``'s functions, the function object and the tuner it acts
    on (a shallow ``copy.copy`` of a tuner keeps the original's hooks, whose closures write the
    original's ``restore_copies``)."""
    base = _autotuner_base(tuner)
    d = vars(tuner)
    fields = {}
    for name in SHARED_FIELDS:
        v = d.get(name)
        if isinstance(v, (dict, list)):
            fields[name] = _token(v)
    hooks = {}
    for name in ("pre_hook", "post_hook", "early_config_prune", "perf_model"):
        fn = d.get(name)
        if fn is None:
            continue
        owner = _bound_tuner(fn, base)
        hooks[name] = {"obj": _token(unwrap(fn)),
                       "tuner": None if owner is None else _token(owner)}
    return {"self": _token(tuner), "fields": fields, "hooks": hooks}


def _signature(tuner):
    d = vars(tuner)
    return tuple(id(d.get(n)) for n in SHARED_FIELDS[:4]) + (
        id(unwrap(d.get("pre_hook"))), id(unwrap(d.get("post_hook"))))


def changed(tuner):
    """On a later call: {"identity": ...} when a shared field or hook was reassigned since the
    tuner was last described (a cache dict handed over, hooks rebound), else None."""
    try:
        d = vars(tuner)
        key = "_rerace_ident_%x" % id(tuner)
        sig = _signature(tuner)
        if d.get(key, sig) == sig:
            return None
        d[key] = sig
        return json.dumps({"identity": identity(tuner)}, sort_keys=True, separators=(",", ":"))
    except Exception:  # never break the recorded program
        return None


def remember(tuner):
    """Keeps what the tuner holds now, for changed() at its later calls."""
    vars(tuner)["_rerace_ident_%x" % id(tuner)] = _signature(tuner)
