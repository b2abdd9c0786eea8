"""rerace_real: replay a recorded training step through the *real* tuner code.

The C++ ``rerace`` (``--engine python``) starts ``python -m rerace_real`` and drives it over
two pipes. This package runs each recorded host thread that called a tuner as a real Python
thread, through the Triton (and the user's patch) installed where it runs. Only what needs a
GPU is replaced (``fakes.py``): the kernel launch (``JITFunction.run``), ``do_bench`` and the
driver return at once and advance rerace's virtual GPU by the recorded durations; in-parameters
are CPU stand-ins whose ``clone``/``copy_``/``zero_`` keep track of whose data they hold, so
that a wrong or missed restore is seen. Everything else (``Autotuner.run``, ``_bench``, the
hooks, ``prune_configs``, ``check_disk_cache``, a subclass's ``run``, the user's wrappers and
properties) is the installed code, unmodified.

Exactly one of those threads runs at a time. A thread stops at each *scheduling point*
(``control.py``) and the C++ scheduler (``sim::Scheduler`` with the same strategies, schedule
files, DPOR and reports as the C++ models) says which thread goes next. The points are:

* every read or write of a tuner object's mutable attributes and of the dicts they hold
  (``tuners.py``: the tuner's class is swapped for a subclass that reports accesses; dicts
  assigned to its fields become ``TrackedDict``), with the object it touches, for DPOR;
* every operation on ``threading.Lock/RLock/Condition/Event/Semaphore/BoundedSemaphore``
  (``sync.py``: controlled versions, so waits are visible and deadlocks reportable).

In *free-threaded* mode every such access is a point. In *GIL* mode (``gil.py``) a thread can
only lose the interpreter where the CPython version that runs could hand the GIL over (an
eval-breaker check, a call that releases the GIL); an access becomes a point only when such a
place was passed since the thread's previous point, otherwise it is part of the same atomic
step.

Protocol (one line per message, fields separated by tabs) and process layout: ``serve.py``.

The modules: ``serve.py`` the process's main loop; ``engine_setup.py`` what is set up once
(Triton, the fakes, the patches, the tuners); ``child.py`` one replay run in a forked child;
``control.py`` a run's scheduling points and baton; ``gil_tracer.py`` and ``gil.py`` where the
GIL can change hands; ``logical.py`` logical threads as greenlets; ``sync.py``, ``tuners.py``
and ``fakes.py`` as above; ``fake_torch.py`` a torch to import FLA's tuner where there is none;
``reach.py`` which patch replacements a call entered; ``trust.py`` which recorded module names
may be imported; ``source_files.py`` which files are rerace's own; ``watchdog.py`` the stacks
for the C++ watchdog's hang report.
"""

__all__ = ["PROTOCOL"]

PROTOCOL = 1
