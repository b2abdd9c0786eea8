// _rerace_gil: the GIL tracer's hooks in C (issue 50, the hot path).
//
// The real-code engine's GIL tracer (python/rerace_real/gil_tracer.py) runs a Python callback
// for every function entry, C call return and backward jump of a run (sys.monitoring,
// MonitoringTracer, CPython 3.12+) or every call, C call and watched opcode (sys.settrace and
// sys.setprofile, Tracer, CPython 3.11): thousands of events a run, where an empty callback
// costs 0.04 us an event. This module is those callbacks, the same decisions made in C:
//
//   on_start(code, offset)                      PY_START, PY_RESUME
//   on_call(code, offset, callable, arg0)       CALL (disables rerace's own sites)
//   on_jump(code, src, dest)                    JUMP (set per watched code object)
//   on_c_return(code, offset, callable, arg0)   C_RETURN, C_RAISE
//   global_trace / local_trace (frame, event, arg)   sys.settrace's functions
//   profile(frame, event, arg)                  sys.setprofile's
//   c_returned(ts, code, offset, func, line)    logical.py's stand-in C calls
//
// What the rules say is asked of the Python tracer once and kept: per code object (rerace's
// own? watched? a hand-over place at entry? which of its instructions are places, which are
// CALLs?), per C callable (blocking? checks after it, cold and warm?), keyed by what decides the
// answer (a builtin's C function and the object or type it is bound to; a method descriptor and
// the type of its self). The kept objects are held, so no key is ever reused by another object.
// The Python tracer stays the reference: RERACE_GIL_HOOKS=python runs it instead, and
// tests/replay/engine/gil_hooks_test.py asserts the two give the same reports.
//
// Built against the stable ABI of CPython 3.11 (abi3): one module for every CPython from 3.11
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

// A new reference to None. NB not Py_RETURN_NONE: CPython 3.12.0-3.12.1's headers define it as
// `return Py_None` (no reference: None is immortal there) even for an older limited API, and
// this module also runs on 3.11, where None is counted.
PyObject* NewNone() { return Py_NewRef(Py_None); }

// What the rules say of one code object.
struct CodeInfo {
  bool ours = false;       // rerace's own code (source_files.is_ours)
  bool watched = false;    // the tuner's, FLA's or a patch's: JUMP events are read
  bool at_entry = false;   // Rules.at_entry(code)
  bool jumps_on = false;   // JUMP events set on it
  std::vector<int> jump_places;  // sorted offsets of instructions where Rules.at_opcode is True
  std::vector<int> call_offsets;  // sorted offsets of its CALL instructions (the settrace hooks)
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
  PyObject* local_fn;   // the settrace hooks: this object's local_trace, set as frames' f_trace
  PyObject* global_fn;  // and global_trace, installed again on 3.12+ (reinstall)
  PyObject* settrace;   // sys.settrace, when reinstall
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
PyObject* s_pending_call;
PyObject* s_muted;
PyObject* s_f_code;
PyObject* s_f_lasti;
PyObject* s_f_lineno;
PyObject* s_f_trace;
PyObject* s_f_trace_lines;
PyObject* s_f_trace_opcodes;
PyObject* s_opcode;
PyObject* s_call;
PyObject* s_return;
PyObject* s_c_call;
PyObject* s_c_return;
PyObject* s_c_exception;

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
               {&s_get, "__get__"},
               {&s_pending_call, "pending_call"},
               {&s_muted, "muted"},
               {&s_f_code, "f_code"},
               {&s_f_lasti, "f_lasti"},
               {&s_f_lineno, "f_lineno"},
               {&s_f_trace, "f_trace"},
               {&s_f_trace_lines, "f_trace_lines"},
               {&s_f_trace_opcodes, "f_trace_opcodes"},
               {&s_opcode, "opcode"},
               {&s_call, "call"},
               {&s_return, "return"},
               {&s_c_call, "c_call"},
               {&s_c_return, "c_return"},
               {&s_c_exception, "c_exception"}};
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

// Whether a place reached now is a new opportunity: Live, and none pending yet. 1, 0, or -1 on
// error.
int Open(PyObject* ts, bool need_traced) {
  const int live = Live(ts, need_traced);
  if (live <= 0) return live;
  const int opp = Flag(ts, s_opportunity);
  return opp < 0 ? -1 : !opp;
}

// The ints of `seq`, sorted, into `out`; false with an error set.
bool Offsets(PyObject* seq, std::vector<int>* out) {
  PyObject* iter = PyObject_GetIter(seq);
  if (iter == nullptr) return false;
  while (PyObject* item = PyIter_Next(iter)) {
    const long off = PyLong_AsLong(item);
    Py_DECREF(item);
    if (off == -1 && PyErr_Occurred()) break;
    out->push_back(static_cast<int>(off));
  }
  Py_DECREF(iter);
  if (PyErr_Occurred()) return false;
  std::sort(out->begin(), out->end());
  return true;
}

bool Has(const std::vector<int>& sorted, long offset) {
  return std::binary_search(sorted.begin(), sorted.end(), static_cast<int>(offset));
}

// The kept answers for `code`, asked of tracer._code_info(code) -> (ours, watched, at_entry,
// jump_places) the first time; nullptr with an error set on failure.
CodeInfo* InfoOf(Hooks* h, PyObject* code) {
  auto it = h->codes->find(code);
  if (it != h->codes->end()) return &it->second;
  PyObject* r = PyObject_CallMethodObjArgs(h->tracer, s_code_info, code, nullptr);
  if (r == nullptr) return nullptr;
  CodeInfo info;
  PyObject* places = nullptr;
  PyObject* calls = nullptr;
  int ours = 0, watched = 0, entry = 0;
  if (!PyArg_ParseTuple(r, "pppOO", &ours, &watched, &entry, &places, &calls)) {
    Py_DECREF(r);
    return nullptr;
  }
  info.ours = ours != 0;
  info.watched = watched != 0;
  info.at_entry = entry != 0;
  const bool ok = Offsets(places, &info.jump_places) && Offsets(calls, &info.call_offsets);
  Py_DECREF(r);
  if (!ok) return nullptr;
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

// What the rules say of a callable that is neither a builtin nor a method descriptor (a C
// callable of another type): asked each time, nothing kept (no key would name it). Into `out`;
// nullptr with an error set on failure.
const Decision* AskEachTime(Hooks* h, PyObject* func, Decision* out) {
  PyObject* r = PyObject_CallMethodObjArgs(h->tracer, s_decide, func, nullptr);
  if (r == nullptr) return nullptr;
  int blocking = 0, cold = 0, warm = 0;
  const bool ok = PyArg_ParseTuple(r, "ppp", &blocking, &cold, &warm) != 0;
  Py_DECREF(r);
  if (!ok) return nullptr;
  out->blocking = blocking != 0;
  out->after_cold = cold != 0;
  out->after_warm = warm != 0;
  return out;
}

// Tracer.c_returned with the decision made: counts the site, reports a cold site that matters,
// marks the place. 0, or -1 with an error set.
int Returned(Hooks* h, PyObject* ts, PyObject* code, int offset, const Decision& d,
             PyObject* line, PyObject* frame = nullptr) {
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
      // The settrace hooks' line is the frame's, as sys.setprofile's function read it.
      PyObject* ln = frame != nullptr ? PyObject_GetAttr(frame, s_f_lineno) : Py_NewRef(line);
      if (ln == nullptr) {
        Py_DECREF(off);
        return -1;
      }
      PyObject* r =
          PyObject_CallMethodObjArgs(h->tracer, s_cold_site, code, off, ln, nullptr);
      Py_DECREF(ln);
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

// The hooks `self` when called with `want` arguments, else nullptr with a TypeError that names
// the call's `signature`.
Hooks* Called(PyObject* self, Py_ssize_t nargs, Py_ssize_t want, const char* signature) {
  if (nargs != want) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, not %zd", signature, want, nargs);
    return nullptr;
  }
  return reinterpret_cast<Hooks*>(self);
}

PyObject* OnStart(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 2, "on_start(code, offset)");
  if (h == nullptr) return nullptr;
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
  Hooks* h = Called(self, nargs, 4, "on_call(code, offset, callable, arg0)");
  if (h == nullptr) return nullptr;
  CodeInfo* info = InfoOf(h, args[0]);
  if (info == nullptr) return nullptr;
  return Py_NewRef(info->ours ? h->disable : Py_None);
}

PyObject* OnJump(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 3, "on_jump(code, src, dest)");
  if (h == nullptr) return nullptr;
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) return NewNone();
  int live = Open(ts, true);
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
  return NewNone();
}

PyObject* OnCReturn(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 4, "on_c_return(code, offset, callable, arg0)");
  if (h == nullptr) return nullptr;
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) return NewNone();
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
        const int live = Open(ts, false);
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
  return NewNone();
}

// c_returned(ts, code, offset, func, line): Tracer.c_returned for a callable the caller has
// already bound (logical.py's stand-ins for builtin C calls).
PyObject* CReturned(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 5, "c_returned(ts, code, offset, func, line)");
  if (h == nullptr) return nullptr;
  const long offset = PyLong_AsLong(args[2]);
  if (offset == -1 && PyErr_Occurred()) return nullptr;
  PyObject* func = args[3];
  int kind = KindOf(func);
  const Decision* d = nullptr;
  Decision direct;
  if (kind == 0) {
    d = AskEachTime(h, func, &direct);  // not a builtin (a test's stand-in)
    if (d == nullptr) return nullptr;
  } else {
    d = DecisionOf(h, func, h->missing, kind);
    if (d == nullptr) return nullptr;
  }
  if (Returned(h, args[0], args[1], static_cast<int>(offset), *d, args[4]) != 0) return nullptr;
  return NewNone();
}

// ---- the settrace hooks (gil_tracer.Tracer: CPython 3.11, or RERACE_GIL_TRACER=settrace) ----

bool Is(PyObject* event, PyObject* name) {
  return event == name || (PyUnicode_Check(event) && PyUnicode_Compare(event, name) == 0);
}

int SetFlag(PyObject* obj, PyObject* name, bool v) {
  return PyObject_SetAttr(obj, name, v ? Py_True : Py_False);
}

// The frame's opcode events off until the next point: ts.muted.append(frame).
int Mute(PyObject* ts, PyObject* frame) {
  if (SetFlag(frame, s_f_trace_opcodes, false) != 0) return -1;
  PyObject* muted = PyObject_GetAttr(ts, s_muted);
  if (muted == nullptr) return -1;
  const int r = PyList_Append(muted, frame);
  Py_DECREF(muted);
  return r;
}

// The frame's code object's kept answers (code: a new reference out), or nullptr with an error.
CodeInfo* FrameInfo(Hooks* h, PyObject* frame, PyObject** code) {
  *code = PyObject_GetAttr(frame, s_f_code);
  if (*code == nullptr) return nullptr;
  CodeInfo* info = InfoOf(h, *code);
  if (info == nullptr) Py_CLEAR(*code);
  return info;
}

// The frame's f_lasti (the offset of the instruction it runs), or -1 with an error set.
long FrameOffset(PyObject* frame) {
  PyObject* lasti = PyObject_GetAttr(frame, s_f_lasti);
  if (lasti == nullptr) return -1;
  const long offset = PyLong_AsLong(lasti);
  Py_DECREF(lasti);
  return offset;
}

// global_trace(frame, event, arg): Tracer.global_trace.
PyObject* GlobalTrace(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 3, "global_trace(frame, event, arg)");
  if (h == nullptr) return nullptr;
  PyObject* frame = args[0];
  PyObject* code = nullptr;
  CodeInfo* info = FrameInfo(h, frame, &code);
  if (info == nullptr) return nullptr;
  Py_DECREF(code);  // held by the kept answers
  if (info->ours) return NewNone();
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) return NewNone();
  PyObject* result = nullptr;
  int opp = 0;
  const int quiet = Flag(ts, s_quiet);
  if (quiet < 0) goto done;
  if (quiet) {
    result = Py_NewRef(Py_None);
    goto done;
  }
  if (PyObject_SetAttr(ts, s_pending_call, Py_None) != 0) goto done;
  if (info->at_entry && SetOpportunity(ts) != 0) goto done;
  if (!info->watched) {
    result = Py_NewRef(Py_None);
    goto done;
  }
  if (PyObject_SetAttr(frame, s_f_trace, h->local_fn) != 0) goto done;
  if (SetFlag(frame, s_f_trace_lines, false) != 0) goto done;
  opp = Flag(ts, s_opportunity);
  if (opp < 0) goto done;
  // Nothing in this step can matter once it passed a place: look again at the next point.
  if (opp ? Mute(ts, frame) != 0 : SetFlag(frame, s_f_trace_opcodes, true) != 0) goto done;
  if (h->settrace != nullptr) {
    PyObject* r = PyObject_CallFunctionObjArgs(h->settrace, h->global_fn, nullptr);
    if (r == nullptr) goto done;
    Py_DECREF(r);
  }
  result = Py_NewRef(h->local_fn);
done:
  Py_DECREF(ts);
  return result;
}

// local_trace(frame, event, arg): Tracer.local_trace (opcode events of watched frames).
PyObject* LocalTrace(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 3, "local_trace(frame, event, arg)");
  if (h == nullptr) return nullptr;
  if (!Is(args[1], s_opcode)) return Py_NewRef(h->local_fn);
  PyObject* frame = args[0];
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) return Py_NewRef(h->local_fn);
  int rc = 0;
  int opp = 0;
  const int quiet = Flag(ts, s_quiet);
  if (quiet != 0) {
    rc = quiet < 0 ? -1 : 0;
    goto done;
  }
  opp = Flag(ts, s_opportunity);
  if (opp < 0) {
    rc = -1;
    goto done;
  }
  if (!opp) {
    PyObject* pending = PyObject_GetAttr(ts, s_pending_call);
    if (pending == nullptr) {
      rc = -1;
      goto done;
    }
    const bool after_call = pending == frame;
    Py_DECREF(pending);
    if (after_call) {
      // The CALL before this instruction called something no event reported (a class).
      rc = PyObject_SetAttr(ts, s_pending_call, Py_None) != 0 || SetOpportunity(ts) != 0 ? -1 : 0;
      opp = 1;
    } else {
      PyObject* code = nullptr;
      CodeInfo* info = FrameInfo(h, frame, &code);
      if (info == nullptr) {
        rc = -1;
        goto done;
      }
      Py_DECREF(code);
      const long offset = FrameOffset(frame);
      if (offset == -1 && PyErr_Occurred()) {
        rc = -1;
        goto done;
      }
      if (Has(info->call_offsets, offset)) {
        rc = PyObject_SetAttr(ts, s_pending_call, frame);
      } else if (Has(info->jump_places, offset)) {
        rc = SetOpportunity(ts);
        opp = 1;
      }
    }
  }
  if (rc == 0 && opp) rc = Mute(ts, frame);
done:
  Py_DECREF(ts);
  if (rc < 0) return nullptr;
  return Py_NewRef(h->local_fn);
}

// profile(frame, event, arg): Tracer.profile (C calls of every frame).
PyObject* Profile(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 3, "profile(frame, event, arg)");
  if (h == nullptr) return nullptr;
  PyObject* event = args[1];
  if (Is(event, s_call) || Is(event, s_return)) return NewNone();
  PyObject* ts = CurrentTs(h);
  if (ts == nullptr) return NewNone();
  int rc = Flag(ts, s_traced);
  if (rc > 0) {
    if (Is(event, s_c_call)) {
      rc = PyObject_SetAttr(ts, s_pending_call, Py_None);
    } else if (Is(event, s_c_return) || Is(event, s_c_exception)) {
      PyObject* frame = args[0];
      PyObject* code = nullptr;
      CodeInfo* info = FrameInfo(h, frame, &code);
      rc = info == nullptr ? -1 : 0;
      if (info != nullptr && !info->ours) {
        const long offset = FrameOffset(frame);
        PyObject* func = args[2];
        if (offset == -1 && PyErr_Occurred()) {
          rc = -1;
        } else {
          const int kind = KindOf(func);
          Decision direct;
          const Decision* d = kind != 0 ? DecisionOf(h, func, h->missing, kind)
                                        : AskEachTime(h, func, &direct);
          rc = d == nullptr ? -1
                            : Returned(h, ts, code, static_cast<int>(offset), *d, Py_None, frame);
        }
      }
      Py_XDECREF(code);
    } else {
      rc = 0;
    }
  }
  Py_DECREF(ts);
  if (rc < 0) return nullptr;
  return NewNone();
}

// count(code, offset): the executions of a C-call site so far (the tests).
PyObject* Count(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Hooks* h = Called(self, nargs, 2, "count(code, offset)");
  if (h == nullptr) return nullptr;
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
    {"global_trace", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(GlobalTrace)), METH_FASTCALL,
     "sys.settrace's function"},
    {"local_trace", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(LocalTrace)), METH_FASTCALL,
     "a watched frame's f_trace"},
    {"profile", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Profile)), METH_FASTCALL,
     "sys.setprofile's function"},
    {"count", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Count)), METH_FASTCALL,
     "executions of a C-call site"},
    {nullptr, nullptr, 0, nullptr}};

void Replace(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  *slot = value;
  Py_XDECREF(old);
}

// Hooks(tracer, local, control, missing, disable, warmup, settrace): `settrace` is sys.settrace
// where the settrace hooks must install their global function again after setting a frame's
// f_trace (3.12+), else None.
int HooksInit(PyObject* self, PyObject* args, PyObject* kwargs) {
  Hooks* h = reinterpret_cast<Hooks*>(self);
  PyObject *tracer, *local, *control, *missing, *disable, *settrace;
  long warmup;
  if (kwargs != nullptr && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "Hooks takes positional arguments only");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OOOOOlO", &tracer, &local, &control, &missing, &disable, &warmup,
                        &settrace))
    return -1;
  Replace(&h->settrace, settrace == Py_None ? nullptr : Py_NewRef(settrace));
  Replace(&h->local_fn, PyObject_GetAttrString(self, "local_trace"));
  Replace(&h->global_fn, PyObject_GetAttrString(self, "global_trace"));
  if (h->local_fn == nullptr || h->global_fn == nullptr) return -1;
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
  Py_CLEAR(h->local_fn);
  Py_CLEAR(h->global_fn);
  Py_CLEAR(h->settrace);
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
  Py_VISIT(h->local_fn);
  Py_VISIT(h->global_fn);
  Py_VISIT(h->settrace);
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
  Py_CLEAR(h->local_fn);
  Py_CLEAR(h->global_fn);
  Py_CLEAR(h->settrace);
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

// What gil_tracer.py expects of this module (its _HOOKS_PROTOCOL): Hooks' arguments, methods and
// what they ask of the tracer. Raised with any change to them, so that a _rerace_gil of another
// build (one left on a user's PYTHONPATH, an older wheel's) is not taken for this one.
constexpr long kProtocol = 1;

int ModuleExec(PyObject* m) {
  if (!Intern()) return -1;
  if (PyModule_AddIntConstant(m, "PROTOCOL", kProtocol) != 0) return -1;
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
