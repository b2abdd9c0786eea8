// _rerace_gil: the GIL tracer's sys.monitoring hooks in C (issue 50, the hot path).
//
// The real-code engine's GIL tracer (python/rerace_real/gil_tracer.py, MonitoringTracer) runs a
// Python callback for every function entry, C call return and backward jump of a run: about
// 3,100 events and 3.4 ms of a 10.6 ms run on the brief's recording, where an empty callback
// costs 0.04 us an event. This module is those callbacks, the same decisions made in C:
//
//   on_start(code, offset)             PY_START, PY_RESUME
//   on_call(code, offset, callable, arg0)       CALL (disables rerace's own sites)
//   on_jump(code, src, dest)           JUMP (set per watched code object)
//   on_c_return(code, offset, callable, arg0)   C_RETURN, C_RAISE
//   c_returned(ts, code, offset, func, line)    logical.py's stand-in C calls
//
// What the rules say is asked of the Python tracer once and kept: per code object (rerace's
// own? watched? a hand-over place at entry? the offsets of its jumps that are places), per C
// callable (blocking? checks after it, cold and warm?), keyed by what decides the answer (a
// builtin's C function and the object or type it is bound to; a method descriptor and the type
// of its self). The kept objects are held, so no key is ever reused by another object. The
// Python tracer stays the reference: RERACE_GIL_TRACER=python runs it instead, and
// tests/replay/engine/gil_hooks_test.py asserts the two give the same reports.
//
// Built against the stable ABI of CPython 3.12 (abi3): one module for every CPython from 3.12
// with a GIL. Threads: called by the thread that runs the event, holding the GIL (every logical
// thread of a run's child; one at a time, as the engine runs them).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// What the rules say of one code object.
struct CodeInfo {
  bool ours = false;       // rerace's own code (source_files.is_ours)
  bool watched = false;    // the tuner's, FLA's or a patch's: JUMP events are read
  bool at_entry = false;   // Rules.at_entry(code)
  bool jumps_on = false;   // JUMP events set on it
  std::vector<int> jump_places;  // sorted offsets of jumps where Rules.at_opcode is True (warm)
};

// What the rules say of one C callable.
struct Decision {
  bool blocking = false;
  bool after_cold = false;  // Rules.after_c_call(func, False)
  bool after_warm = false;  // Rules.after_c_call(func, True)
};

struct PairHash {
  size_t operator()(const std::pair<const void*, const void*>& p) const noexcept {
    return std::hash<const void*>()(p.first) * 31u ^ std::hash<const void*>()(p.second);
  }
};
struct SiteHash {
  size_t operator()(const std::pair<const void*, int>& p) const noexcept {
    return std::hash<const void*>()(p.first) * 131u ^ static_cast<size_t>(p.second);
  }
};

struct Hooks {
  PyObject_HEAD
  PyObject* tracer;     // the MonitoringTracer these hooks stand for (rules, reach, questions)
  PyObject* local;      // control._local
  PyObject* control;    // the control module (RUN)
  PyObject* missing;    // sys.monitoring.MISSING
  PyObject* disable;    // sys.monitoring.DISABLE
  PyObject* held;       // a list: every object a key below points at, kept alive
  long warmup;
  std::unordered_map<const void*, CodeInfo>* codes;
  std::unordered_map<std::pair<const void*, const void*>, Decision, PairHash>* decisions;
  std::unordered_map<std::pair<const void*, int>, long, SiteHash>* counts;
};

// Interned attribute names.
PyObject* s_ts;
PyObject* s_traced;
PyObject* s_quiet;
PyObject* s_opportunity;
PyObject* s_reach;
PyObject* s_RUN;
PyObject* s_code_info;
PyObject* s_decide;
PyObject* s_cold_site;
PyObject* s_wanted;
PyObject* s_on_start;
PyObject* s_get;

bool Intern() {
  struct {
    PyObject** slot;
    const char* name;
  } names[] = {{&s_ts, "ts"},
               {&s_traced, "traced"},
               {&s_quiet, "quiet"},
               {&s_opportunity, "opportunity"},
               {&s_reach, "reach"},
               {&s_RUN, "RUN"},
               {&s_code_info, "_code_info"},
               {&s_decide, "_decide"},
               {&s_cold_site, "_cold_site"},
               {&s_wanted, "wanted"},
               {&s_on_start, "on_start_c"},
               {&s_get, "__get__"}};
  for (auto& n : names) {
    *n.slot = PyUnicode_InternFromString(n.name);
    if (*n.slot == nullptr) return false;
  }
  return true;
}

// The logical thread's ThreadState (new reference), or nullptr with no error set (none).
PyObject* CurrentTs(Hooks* h) {
  PyObject* ts = PyObject_GetAttr(h->local, s_ts);
  if (ts == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  if (ts == Py_None) {
    Py_DECREF(ts);
    return nullptr;
  }
  return ts;
}

// The truth of ts.<name>: 1, 0, or -1 with an error set.
int Flag(PyObject* ts, PyObject* name) {
  PyObject* v = PyObject_GetAttr(ts, name);
  if (v == nullptr) return -1;
  const int r = PyObject_IsTrue(v);
  Py_DECREF(v);
  return r;
}

// traced and not quiet: 1; else 0; -1 on error. `opportunity` too when asked.
int Live(PyObject* ts, bool need_traced) {
  if (need_traced) {
    const int traced = Flag(ts, s_traced);
    if (traced <= 0) return traced;
  }
  const int quiet = Flag(ts, s_quiet);
  if (quiet < 0) return -1;
  return quiet ? 0 : 1;
}

int SetOpportunity(PyObject* ts) { return PyObject_SetAttr(ts, s_opportunity, Py_True); }

// The kept answers for `code`, asked of tracer._code_info(code) -> (ours, watched, at_entry,
// jump_places) the first time; nullptr with an error set on failure.
CodeInfo* InfoOf(Hooks* h, PyObject* code) {
  auto it = h->codes->find(code);
  if (it != h->codes->end()) return &it->second;
  PyObject* r = PyObject_CallMethodObjArgs(h->tracer, s_code_info, code, nullptr);
  if (r == nullptr) return nullptr;
  CodeInfo info;
  PyObject* places = nullptr;
  int ours = 0, watched = 0, entry = 0;
  if (!PyArg_ParseTuple(r, "pppO", &ours, &watched, &entry, &places)) {
    Py_DECREF(r);
    return nullptr;
  }
  info.ours = ours != 0;
  info.watched = watched != 0;
  info.at_entry = entry != 0;
  PyObject* iter = PyObject_GetIter(places);
  if (iter == nullptr) {
    Py_DECREF(r);
    return nullptr;
  }
  while (PyObject* item = PyIter_Next(iter)) {
    const long off = PyLong_AsLong(item);
    Py_DECREF(item);
    if (off == -1 && PyErr_Occurred()) break;
    info.jump_places.push_back(static_cast<int>(off));
  }
  Py_DECREF(iter);
  Py_DECREF(r);
  if (PyErr_Occurred()) return nullptr;
  std::sort(info.jump_places.begin(), info.jump_places.end());
  if (PyList_Append(h->held, code) != 0) return nullptr;
  return &h->codes->emplace(code, std::move(info)).first->second;
}

// The callable as the rules see it and what they say of it; nullptr with an error set on failure.
// `kind`: 1 a builtin function or method, 2 a method descriptor (`self` its self or MISSING).
const Decision* DecisionOf(Hooks* h, PyObject* callable, PyObject* self_arg, int kind) {
  const void* a;
  PyObject* b;  // what the answer depends on besides `a`, held
  if (kind == 1) {
    a = reinterpret_cast<const void*>(PyCFunction_GetFunction(callable));
    PyObject* self = PyCFunction_GetSelf(callable);  // borrowed; NULL for a static builtin
    if (self == nullptr || PyModule_Check(self) || PyType_Check(self))
      b = self;
    else
      b = reinterpret_cast<PyObject*>(Py_TYPE(self));
    // The module-level function's module name, the method's name: both decided by the
    // PyMethodDef (one per C function) and `b`.
  } else {
    a = callable;
    b = self_arg == h->missing ? nullptr : reinterpret_cast<PyObject*>(Py_TYPE(self_arg));
  }
  auto key = std::make_pair(a, static_cast<const void*>(b));
  auto it = h->decisions->find(key);
  if (it != h->decisions->end()) return &it->second;
  PyObject* func;
  if (kind == 2 && self_arg != h->missing) {
    PyObject* tp = reinterpret_cast<PyObject*>(Py_TYPE(self_arg));
    func = PyObject_CallMethodObjArgs(callable, s_get, self_arg, tp, nullptr);
    if (func == nullptr) return nullptr;
  } else {
    func = Py_NewRef(callable);
  }
  PyObject* r = PyObject_CallMethodObjArgs(h->tracer, s_decide, func, nullptr);
  Py_DECREF(func);
  if (r == nullptr) return nullptr;
  int blocking = 0, cold = 0, warm = 0;
  const bool ok = PyArg_ParseTuple(r, "ppp", &blocking, &cold, &warm) != 0;
  Py_DECREF(r);
  if (!ok) return nullptr;
  // Held: the callable (a descriptor; a builtin's function pointer lives as long as its module,
  // kept by the callable) and `b`.
  if (PyList_Append(h->held, callable) != 0) return nullptr;
  if (b != nullptr && PyList_Append(h->held, b) != 0) return nullptr;
  Decision d;
  d.blocking = blocking != 0;
  d.after_cold = cold != 0;
  d.after_warm = warm != 0;
  return &h->decisions->emplace(key, d).first->second;
}

// Tracer.c_returned with the decision made: counts the site, reports a cold site that matters,
// marks the place. 0, or -1 with an error set.
int Returned(Hooks* h, PyObject* ts, PyObject* code, int offset, const Decision& d,
             PyObject* line) {
  if (InfoOf(h, code) == nullptr) return -1;  // holds the code object: its address names it
  const long n = ++(*h->counts)[std::make_pair(static_cast<const void*>(code), offset)];
  const int quiet = Flag(ts, s_quiet);
  if (quiet != 0) return quiet < 0 ? -1 : 0;
  if (n <= h->warmup + 1 && d.after_cold != d.after_warm) {
    PyObject* run = PyObject_GetAttr(h->control, s_RUN);
    if (run == nullptr) return -1;
    const bool has_run = run != Py_None;
    Py_DECREF(run);
    if (has_run) {
      PyObject* off = PyLong_FromLong(offset);
      if (off == nullptr) return -1;
      PyObject* r =
          PyObject_CallMethodObjArgs(h->tracer, s_cold_site, code, off, line, nullptr);
      Py_DECREF(off);
      if (r == nullptr) return -1;
      Py_DECREF(r);
    }
  }
  const int opp = Flag(ts, s_opportunity);
  if (opp != 0) return opp < 0 ? -1 : 0;
  if (d.blocking || (n > h->warmup ? d.after_warm : d.after_cold)) return SetOpportunity(ts);
  return 0;
}

int KindOf(PyObject* callable) {
  if (Py_IS_TYPE(callable, &PyCFunction_Type)) return 1;
  if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) return 2;
  return 0;
}

// ---- the hooks ----

PyObject* OnStart(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "on_start(code, offset)");
    return nullptr;
  }
  PyObject* code = args[0];
  CodeInfo* info = InfoOf(h, code);
  if (info == nullptr) return nullptr;
  PyObject* reach = PyObject_GetAttr(h->tracer, s_reach);
  if (reach == nullptr) return nullptr;
  PyObject* result = Py_None;
  PyObject* ts = nullptr;
  if (info->ours) {
    if (reach == Py_None) {
      Py_DECREF(reach);
      return Py_NewRef(h->disable);
    }
    PyObject* w = PyObject_CallMethodObjArgs(reach, s_wanted, code, nullptr);
    if (w == nullptr) goto fail;
    {
      const int wanted = PyObject_IsTrue(w);
      Py_DECREF(w);
      if (wanted < 0) goto fail;
      if (!wanted) {
        Py_DECREF(reach);
        return Py_NewRef(h->disable);
      }
    }
    ts = CurrentTs(h);
    if (ts != nullptr) {
      const int traced = Flag(ts, s_traced);
      if (traced < 0) goto fail;
      if (traced) {
        PyObject* r = PyObject_CallMethodObjArgs(reach, s_on_start, code, nullptr);
        if (r == nullptr) goto fail;
        Py_DECREF(r);
      }
    }
    goto done;
  }
  ts = CurrentTs(h);
  if (ts == nullptr) goto done;
  {
    const int traced = Flag(ts, s_traced);
    if (traced < 0) goto fail;
    if (!traced) goto done;
  }
  if (reach != Py_None) {
    PyObject* r = PyObject_CallMethodObjArgs(reach, s_on_start, code, nullptr);
    if (r == nullptr) goto fail;
    Py_DECREF(r);
  }
  {
    const int quiet = Flag(ts, s_quiet);
    if (quiet < 0) goto fail;
    if (quiet) goto done;
  }
  if (info->at_entry && SetOpportunity(ts) != 0) goto fail;
  if (!info->jumps_on && info->watched) {
    // tracer._jumps_on(code): sys.monitoring.set_local_events(tool, code, JUMP), once.
    PyObject* r = PyObject_CallMethod(h->tracer, "_jumps_on", "O", code);
    if (r == nullptr) goto fail;
    Py_DECREF(r);
    info->jumps_on = true;
  }
done:
  Py_XDECREF(ts);
  Py_DECREF(reach);
  return Py_NewRef(result);
fail:
  Py_XDECREF(ts);
  Py_DECREF(reach);
  return nullptr;
}

PyObject* OnCall(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "on_call(code, offset, callable, arg0)");
    return nullptr;
  }
  CodeInfo* info = InfoOf(h, args[0]);
  if (info == nullptr) return nullptr;
  return Py_NewRef(info->ours ? h->disable : Py_None);
}

PyObject* OnJump(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "on_jump(code, src, dest)");
    return nullptr;
  }
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) Py_RETURN_NONE;
  int live = Live(ts, true);
  if (live > 0) {
    const int opp = Flag(ts, s_opportunity);
    live = opp < 0 ? -1 : !opp;
  }
  if (live > 0) {
    const long src = PyLong_AsLong(args[1]);
    CodeInfo* info = src == -1 && PyErr_Occurred() ? nullptr : InfoOf(h, args[0]);
    if (info == nullptr) {
      live = -1;
    } else if (std::binary_search(info->jump_places.begin(), info->jump_places.end(),
                                  static_cast<int>(src))) {
      live = SetOpportunity(ts) == 0 ? 0 : -1;
    }
  }
  Py_DECREF(ts);
  if (live < 0) return nullptr;
  Py_RETURN_NONE;
}

PyObject* OnCReturn(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "on_c_return(code, offset, callable, arg0)");
    return nullptr;
  }
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) Py_RETURN_NONE;
  int rc = 0;
  const int traced = Flag(ts, s_traced);
  CodeInfo* info = nullptr;
  if (traced <= 0) {
    rc = traced;
  } else if ((info = InfoOf(h, args[0])) == nullptr) {
    rc = -1;
  } else if (!info->ours) {
    PyObject* callable = args[2];
    const int kind = KindOf(callable);
    if (kind == 0) {
      // A class or another C callable: no count; in watched code a place.
      if (info->watched) {
        int live = Live(ts, false);
        if (live > 0) {
          const int opp = Flag(ts, s_opportunity);
          live = opp < 0 ? -1 : !opp;
        }
        rc = live < 0 ? -1 : live > 0 ? SetOpportunity(ts) : 0;
      }
    } else {
      const long offset = PyLong_AsLong(args[1]);
      const Decision* d =
          offset == -1 && PyErr_Occurred() ? nullptr : DecisionOf(h, callable, args[3], kind);
      rc = d == nullptr ? -1
                        : Returned(h, ts, args[0], static_cast<int>(offset), *d, Py_None);
    }
  }
  Py_DECREF(ts);
  if (rc < 0) return nullptr;
  Py_RETURN_NONE;
}

// c_returned(ts, code, offset, func, line): Tracer.c_returned for a callable the caller has
// already bound (logical.py's stand-ins for builtin C calls).
PyObject* CReturned(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "c_returned(ts, code, offset, func, line)");
    return nullptr;
  }
  const long offset = PyLong_AsLong(args[2]);
  if (offset == -1 && PyErr_Occurred()) return nullptr;
  PyObject* func = args[3];
  int kind = KindOf(func);
  const Decision* d = nullptr;
  Decision direct;
  if (kind == 0) {
    // Not a builtin (a test's stand-in): asked each time, nothing kept.
    PyObject* r = PyObject_CallMethodObjArgs(h->tracer, s_decide, func, nullptr);
    if (r == nullptr) return nullptr;
    int blocking = 0, cold = 0, warm = 0;
    const bool ok = PyArg_ParseTuple(r, "ppp", &blocking, &cold, &warm) != 0;
    Py_DECREF(r);
    if (!ok) return nullptr;
    direct.blocking = blocking != 0;
    direct.after_cold = cold != 0;
    direct.after_warm = warm != 0;
    d = &direct;
  } else {
    d = DecisionOf(h, func, h->missing, kind);
    if (d == nullptr) return nullptr;
  }
  if (Returned(h, args[0], args[1], static_cast<int>(offset), *d, args[4]) != 0) return nullptr;
  Py_RETURN_NONE;
}

// count(code, offset): the executions of a C-call site so far (the tests).
PyObject* Count(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "count(code, offset)");
    return nullptr;
  }
  const long offset = PyLong_AsLong(args[1]);
  if (offset == -1 && PyErr_Occurred()) return nullptr;
  auto it = h->counts->find(std::make_pair(static_cast<const void*>(args[0]), static_cast<int>(offset)));
  return PyLong_FromLong(it == h->counts->end() ? 0 : it->second);
}

PyMethodDef kMethods[] = {
    {"on_start", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OnStart)), METH_FASTCALL,
     "PY_START / PY_RESUME"},
    {"on_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OnCall)), METH_FASTCALL, "CALL"},
    {"on_jump", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OnJump)), METH_FASTCALL, "JUMP"},
    {"on_c_return", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OnCReturn)), METH_FASTCALL,
     "C_RETURN / C_RAISE"},
    {"c_returned", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(CReturned)), METH_FASTCALL,
     "Tracer.c_returned"},
    {"count", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Count)), METH_FASTCALL,
     "executions of a C-call site"},
    {nullptr, nullptr, 0, nullptr}};

void Replace(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  *slot = value;
  Py_XDECREF(old);
}

// Hooks(tracer, local, control, missing, disable, warmup)
int HooksInit(PyObject* self, PyObject* args, PyObject* kwargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  PyObject *tracer, *local, *control, *missing, *disable;
  long warmup;
  if (kwargs != nullptr && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "Hooks takes positional arguments only");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OOOOOl", &tracer, &local, &control, &missing, &disable, &warmup))
    return -1;
  Replace(&h->tracer, Py_NewRef(tracer));
  Replace(&h->local, Py_NewRef(local));
  Replace(&h->control, Py_NewRef(control));
  Replace(&h->missing, Py_NewRef(missing));
  Replace(&h->disable, Py_NewRef(disable));
  Replace(&h->held, PyList_New(0));
  if (h->held == nullptr) return -1;
  h->warmup = warmup;
  delete h->codes;
  delete h->decisions;
  delete h->counts;
  h->codes = new std::unordered_map<const void*, CodeInfo>();
  h->decisions = new std::unordered_map<std::pair<const void*, const void*>, Decision, PairHash>();
  h->counts = new std::unordered_map<std::pair<const void*, int>, long, SiteHash>();
  return 0;
}

void HooksDealloc(PyObject* self) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  PyTypeObject* tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(h->tracer);
  Py_CLEAR(h->local);
  Py_CLEAR(h->control);
  Py_CLEAR(h->missing);
  Py_CLEAR(h->disable);
  Py_CLEAR(h->held);
  delete h->codes;
  delete h->decisions;
  delete h->counts;
  h->codes = nullptr;
  h->decisions = nullptr;
  h->counts = nullptr;
  freefunc free = reinterpret_cast<freefunc>(PyType_GetSlot(tp, Py_tp_free));
  free(self);
  Py_DECREF(tp);
}

int HooksTraverse(PyObject* self, visitproc visit, void* arg) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  Py_VISIT(h->tracer);
  Py_VISIT(h->local);
  Py_VISIT(h->control);
  Py_VISIT(h->missing);
  Py_VISIT(h->disable);
  Py_VISIT(h->held);
  Py_VISIT(reinterpret_cast<PyObject*>(Py_TYPE(self)));
  return 0;
}

int HooksClear(PyObject* self) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  Py_CLEAR(h->tracer);
  Py_CLEAR(h->local);
  Py_CLEAR(h->control);
  Py_CLEAR(h->missing);
  Py_CLEAR(h->disable);
  Py_CLEAR(h->held);
  return 0;
}

PyType_Slot kHooksSlots[] = {
    {Py_tp_doc, const_cast<char*>("The GIL tracer's sys.monitoring callbacks (gil_tracer.py)")},
    {Py_tp_init, reinterpret_cast<void*>(HooksInit)},
    {Py_tp_dealloc, reinterpret_cast<void*>(HooksDealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(HooksTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(HooksClear)},
    {Py_tp_methods, kMethods},
    {0, nullptr}};

PyType_Spec kHooksSpec = {"_rerace_gil.Hooks", sizeof(Hooks), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, kHooksSlots};

int ModuleExec(PyObject* m) {
  if (!Intern()) return -1;
  PyObject* tp = PyType_FromSpec(&kHooksSpec);
  if (tp == nullptr) return -1;
  const int r = PyModule_AddObjectRef(m, "Hooks", tp);
  Py_DECREF(tp);
  return r;
}

PyModuleDef_Slot kModuleSlots[] = {{Py_mod_exec, reinterpret_cast<void*>(ModuleExec)},
                                   {0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_rerace_gil",
                       "The GIL tracer's sys.monitoring hooks in C (replay/engine/cext).", 0,
                       nullptr, kModuleSlots, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__rerace_gil() { return PyModuleDef_Init(&kModule); }
