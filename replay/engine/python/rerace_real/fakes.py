"""What replaces the GPU: the only parts of the real program that rerace stubs.

* ``FakeTensor``: an in-parameter. It carries whose data it holds (``value``: the thread and
  argument it was created for, or the mark of a benchmark launch that overwrote it), and
  ``clone``, ``copy_`` and ``zero_`` move that, so a restore of another thread's saved copy
  (``wrong-restore``) or a benchmark that ran on overwritten data (``missed-restore``) is seen.
* ``launch``: stands for ``JITFunction.run``. It returns at once, advances the virtual clock by
  the recorded duration, checks the in-parameters it is given, and during a benchmark marks the
  ``restore_value`` arguments as overwritten (what a kernel that writes them does). The final
  launch of a call is checked against the config the recording's timings select for the call's
  key (``config-mismatch``).
* ``do_bench``: runs the kernel call (with its real pre- and post-hooks) as many times as the
  recording says (or ``--reps``) and returns the recorded time of that config.
* ``FakeDriver``: ``driver.active`` for Triton (the benchmarker, a target).

Each of these stands for a call that can hand the GIL over (a launch, a synchronisation, a
torch operation), so each marks an opportunity (control.py).
"""

from . import control


class FakeTensor:
    """An in-parameter of a recorded call. Plain value; used by one logical thread at a time."""

    dtype = "torch.float32"

    def __init__(self, owner, name):
        self.owner = owner          # the thread whose call it belongs to
        self.name = name
        self.value = ("data", owner, name)

    def clone(self):
        control.RUN.opportunity()
        t = FakeTensor.__new__(FakeTensor)
        t.owner = self.owner
        t.name = self.name
        t.value = self.value
        return t

    def copy_(self, src):
        control.RUN.opportunity()
        v = getattr(src, "value", None)
        if v is not None and v[0] == "data" and (v[1] != self.owner or v[2] != self.name):
            me = control.current()
            whose = "its own" if me is not None and me.tid == self.owner else \
                "thread %d's" % self.owner
            last = control.RUN.last_write_of("restore_copies")
            # The thread whose pre-hook wrote the copies last is the other one involved.
            writer = getattr(control.RUN, "last_writer", None)
            other, other_step, _ = writer("restore_copies") if writer else (-1, -1, "")
            _silent("wrong-restore",
                    "thread %s restored thread %d's saved copy of %s into %s tensor %s%s" % (
                        me.tid if me else "?", v[1], v[2], whose, self.name, last),
                    other=other, other_step=other_step)
        self.value = v
        return self

    def zero_(self):
        control.RUN.opportunity()
        self.value = ("zero", self.owner, self.name)
        return self

    def data_ptr(self):
        return 0x1000 * (self.owner + 1)

    def __repr__(self):
        return "FakeTensor(%s of thread %d)" % (self.name, self.owner)


def _silent(code, words, where=None, other=-1, other_step=-1):
    ts = control.current()
    if ts is None:
        return
    if code in ts.seen:
        return
    ts.seen.add(code)
    extra = {"other": other, "other_step": other_step} if other >= 0 else {}
    control.RUN.finding(code=code, silent=True, words=words, where=where or _where(), **extra)


def _where():
    import sys
    f = sys._getframe(2)
    while f is not None and control.is_ours(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return ""
    return "%s:%d in %s" % (control.site_path(f.f_code.co_filename), f.f_lineno, f.f_code.co_name)


def _config_index(tuner, kwargs):
    """The index of the tuner's config the launch's `kwargs` ran, or -1. rerace's own
    bookkeeping (control.Unseen): the program does not read `configs` nor call
    ``Config.all_kwargs`` here, so neither is an access, a hand-over place, an execution the
    GIL tracer counts (it would warm the program's own all_kwargs call sites), nor a patch's
    replacement entered."""
    with control.Unseen():
        for i, c in enumerate(getattr(tuner, "configs", [])):
            kw = c.all_kwargs()
            if kw and all(kwargs.get(k) == v for k, v in kw.items()):
                return i
    return -1


def launch(jit_self, *args, **kwargs):
    """JITFunction.run under replay."""
    run = control.RUN
    ts = control.current()
    run.opportunity()
    if ts is None or ts.call is None:
        return None
    call = ts.call
    tuner = call["_tuner"]
    for name in call["_restore"]:
        t = call["_args"].get(name)
        if t is None:
            continue
        v = t.value
        if v[0] == "bench":
            _silent("missed-restore",
                    "thread %d's launch ran on %s as thread %d's benchmark of config %d left it: "
                    "the post-hook did not restore it" % (ts.tid, name, v[1], v[2]))
        elif v[0] == "data" and (v[1] != t.owner or v[2] != t.name):
            _silent("wrong-restore",
                    "thread %d's launch ran on %s holding thread %d's data" % (ts.tid, name, v[1]))
    if ts.bench is not None:
        for name in call["_restore"]:
            t = call["_args"].get(name)
            if t is not None:
                t.value = ("bench", ts.tid, ts.bench[1])
        return None
    # The call's final launch: a config that a recorded benchmark of this call's key selected.
    chosen = _config_index(tuner, kwargs)
    best = call["_best"]
    if best and chosen >= 0 and chosen not in best:
        _silent("config-mismatch",
                "thread %d launched config %d, which no recorded benchmark of its key %s selected "
                "(they selected %s): another key's choice" % (
                    ts.tid, chosen, call["key"], ", ".join(str(b) for b in sorted(best))))
    run.advance(call.get("launch_ns", 0))
    return None


def do_bench(kernel_call, quantiles=None, **_):
    """triton's benchmarker under replay: the real kernel_call, the recorded timing."""
    run = control.RUN
    ts = control.current()
    run.opportunity()
    call = ts.call if ts is not None else None
    tuner = call["_tuner"] if call else None
    config = None
    for cell in (kernel_call.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if type(v).__name__ == "Config":
            config = v
    idx = -1
    if tuner is not None and config is not None:
        for i, c in enumerate(tuner.configs):
            if c is config:
                idx = i
                break
    reps = 1
    ns = 1_000_000 + max(idx, 0)
    if call is not None and 0 <= idx < len(call["bench_ns"]):
        ns = call["bench_ns"][idx]
        recorded = max(call["bench_reps"][idx] if idx < len(call["bench_reps"]) else 1, 1)
        reps = recorded if call["_reps"] == 0 else min(call["_reps"], recorded)
    prev = ts.bench if ts is not None else None
    if ts is not None:
        ts.bench = (tuner, idx)
    try:
        for _ in range(reps):
            kernel_call()
            run.opportunity()
    finally:
        if ts is not None:
            ts.bench = prev
    run.advance(ns * max(reps, 1))
    ms = ns / 1e6
    if quantiles is None:
        return ms
    return [ms for _ in quantiles]


class FakeDriver:
    """driver.active while replaying."""

    def is_active(self):
        return True

    def get_benchmarker(self):
        return do_bench

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        raise RuntimeError("rerace replay: no GPU target (the disk cache needs one)")

    def get_empty_cache_for_benchmark(self):
        return None

    def clear_cache(self, cache):
        return None


def install(triton_module):
    """Puts the fakes in place: the launch, the driver. Returns what was replaced (for the
    test that proves these are the only replaced parts)."""
    import sys
    from triton.runtime import jit as jit_mod
    driver_mod = sys.modules["triton.runtime.driver"]
    jit_mod.JITFunction.run = launch
    driver_mod.driver.set_active(FakeDriver())
    return ["triton.runtime.jit.JITFunction.run", "triton.runtime.driver.driver.active"]
