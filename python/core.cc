// rerace._core: the C++ libraries seen from Python. Today: reading a trace in-process through
// rerace::traces (Trace in rerace/__init__.py wraps what read_trace returns). replay, fuzz and
// check run the installed `rerace` binary with --json (rerace/_run.py) until their policy and
// reports live in the replay library.
//
// Errors: read_trace raises rerace.Error(message, exit_code) with the reader's one-line message
// and the exit code the command line would give (65 bad trace, 66 cannot open).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>
#include <utility>

#include "rerace/traces/reader.h"
#include "rerace/traces/trace.h"

namespace nb = nanobind;
using rerace::traces::Event;
using rerace::traces::EventKind;
using rerace::traces::Trace;
using rerace::traces::TunerKind;

namespace {

// A reader error on its way to Python as rerace.Error.
struct ReadError {
  std::string message;
  int exit_code;
};

nb::dict Header(const Trace& t) {
  nb::dict h;
  h["format_version"] = t.header.format_version;
  h["recorder_version"] = t.header.recorder_version;
  h["host"] = t.header.host;
  h["pid"] = t.header.pid;
  h["rank"] = t.header.rank;
  nb::list argv;
  for (const auto& a : t.header.command_line) argv.append(a);
  h["command_line"] = argv;
  nb::list gpus;
  for (const auto& g : t.header.gpus) {
    nb::dict d;
    d["index"] = g.index;
    d["name"] = g.name;
    d["uuid"] = g.uuid;
    d["memory_bytes"] = g.memory_bytes;
    gpus.append(d);
  }
  h["gpus"] = gpus;
  nb::list classes;
  for (const auto& c : t.header.tuner_classes) classes.append(c);
  h["tuner_classes"] = classes;
  return h;
}

nb::list Grid(const uint32_t (&g)[3]) {
  nb::list l;
  for (uint32_t v : g) l.append(v);
  return l;
}

// The whole trace as plain Python data: header, threads, tuner calls (each CallBegin: thread,
// kernel, key, configs), launches (thread, kernel, device, stream, grid, block), the footer's
// counts and whether the file was cut.
nb::dict ReadTraceDict(const std::string& path) {
  auto read = rerace::traces::ReadTrace(path);
  if (!read) throw ReadError{read.error().message, read.error().exit_code};
  const Trace& t = *read;
  nb::dict out;
  out["path"] = path;
  out["header"] = Header(t);
  nb::list threads;
  for (const auto& th : t.threads) {
    nb::dict d;
    d["id"] = th.id;
    d["os_tid"] = th.os_tid;
    d["name"] = th.name;
    threads.append(d);
  }
  out["threads"] = threads;
  nb::list calls, launches;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kTuner && e.tuner < t.tuner_events.size()) {
      const auto& te = t.tuner_events[e.tuner];
      if (te.kind != TunerKind::kCallBegin) continue;
      nb::dict d;
      d["thread"] = e.thread;
      d["seq"] = e.seq;
      d["tuner"] = te.tuner;
      d["tuner_class"] = t.Str(te.tuner_class);
      d["kernel"] = t.Str(te.kernel);
      d["key"] = te.key;
      nb::list configs;
      for (const auto& c : te.configs) configs.append(c);
      d["configs"] = configs;
      calls.append(d);
    } else if (e.kind == EventKind::kLaunch && e.shape < t.shapes.size()) {
      const auto& s = t.shapes[e.shape];
      nb::dict d;
      d["thread"] = e.thread;
      d["seq"] = e.seq;
      d["kernel"] = t.Str(s.kernel);
      d["device"] = s.device;
      d["stream"] = s.stream;
      d["grid"] = Grid(s.grid);
      d["block"] = Grid(s.block);
      d["correlation"] = e.correlation;
      launches.append(d);
    }
  }
  out["tuner_calls"] = calls;
  out["launches"] = launches;
  out["event_count"] = t.event_count;
  out["truncated"] = t.truncated;
  out["truncation"] = t.truncation;
  out["complete"] = t.has_footer && t.footer.complete;
  return out;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "rerace's C++ core, in-process: read_trace(path) -> dict (rerace.Trace wraps it)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ReadError& e) {
      nb::object err = nb::module_::import_("rerace._errors").attr("Error")(e.message, e.exit_code);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
  m.def("read_trace", &ReadTraceDict, nb::arg("path"),
        "Reads and validates the trace at `path` (rerace::traces::ReadTrace); raises rerace.Error.");
}
