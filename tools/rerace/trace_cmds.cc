// tools/rerace/trace_cmds.cc: `rerace show` (what is in a trace) and `rerace synth` (write a
// synthetic one).
#include <fmt/format.h>

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "commands.h"
#include "flags.h"
#include "rerace/base/result.h"
#include "rerace/base/wrap.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/traces/reader.h"
#include "rerace/traces/synth.h"
#include "rerace/traces/trace.h"

namespace rerace::tools {

using namespace rerace::traces;

namespace {
std::string Names(const std::vector<std::string>& args, const std::vector<uint32_t>& idx) {
  std::vector<std::string> out;
  for (uint32_t i : idx) out.push_back(i < args.size() ? args[i] : fmt::format("#{}", i));
  return out.empty() ? "(none)" : fmt::format("{}", fmt::join(out, ", "));
}
}  // namespace

// What `show` prints, gathered chunk by chunk as a TraceStream hands the events out (the
// events are never all in memory); the same text as from the whole trace.
class Summary {
 public:
  void Add(const Trace& t, const std::vector<Event>& events, const std::vector<TunerEvent>& tuner_events) {
    if (per_.size() < t.threads.size()) per_.resize(t.threads.size());
    for (const Event& e : events) {
      PerThread& p = per_[e.thread];
      switch (e.kind) {
        case EventKind::kLaunch: ++p.shapes[e.shape]; break;
        case EventKind::kActivity: (e.gpu_start_ns != 0 ? timed_ : untimed_)++; break;
        case EventKind::kSync: ++p.syncs; break;
        case EventKind::kMemOp: ++p.memops; break;
        case EventKind::kLock: ++p.locks; break;
        case EventKind::kNvtx: ++p.nvtx; break;
        case EventKind::kTuner: {
          const TunerEvent& te = tuner_events[e.tuner];
          TunerInfo& ti = tuners_[te.tuner];
          ti.cls = t.Str(te.tuner_class);
          ti.kernel = t.Str(te.kernel);
          if (te.kind == TunerKind::kCallBegin) {
            ++ti.calls;
            ++p.tuner_calls;
            for (auto& r : replay::ReachOfDetail(te.detail)) ti.reach.push_back(std::move(r));
            ++p.calls[{ti.kernel, te.key}];
            ti.keys.insert(te.key);
            if (!ti.described) {
              ti.described = true;
              ti.configs = te.configs;
              ti.arg_names = te.arg_names;
              ti.restore_value = te.restore_value;
              ti.reset_to_zero = te.reset_to_zero;
              ReadVersions(te.detail, ti);
            }
          }
          if (te.kind == TunerKind::kBenchEnd) ++ti.benches;
          if (te.kind == TunerKind::kError)
            failures_.push_back({e.thread, fmt::format("event {}: {}: {} at {}", e.seq, te.error_type,
                                                       te.error_message, te.error_where)});
          break;
        }
      }
    }
  }

  // `mangled`: kernel names as recorded; `full_names`: as the source spells them (Demangle);
  // otherwise short (ShortKernelName), as Nsight Systems shows them.
  // `all`: every tuner, not only those called (an FLA import makes ~200 that never are).
  std::string Text(const Trace& t, const std::string& path, bool mangled, bool full_names, bool all) const {
    auto kernel_name = [mangled, full_names](const std::string& raw) {
      return mangled ? raw : full_names ? replay::Demangle(raw) : replay::ShortKernelName(raw);
    };
    std::string out;
    const Header& h = t.header;
    out += fmt::format("trace {}\n", path);
    out += fmt::format("  format v{}, recorder {}, host {}, pid {}{}\n", h.format_version,
                       h.recorder_version, h.host, h.pid,
                       h.rank >= 0 ? fmt::format(", rank {}", h.rank) : "");
    if (!h.command_line.empty()) out += fmt::format("  command: {}\n", fmt::join(h.command_line, " "));
    for (const Gpu& g : h.gpus)
      out += fmt::format("  GPU {}: {} ({}), {:.1f} GiB\n", g.index, g.name, g.uuid,
                         static_cast<double>(g.memory_bytes) / (1u << 30));
    out += fmt::format("  {} events in {} chunks, {} threads, {} strings, {} launch shapes\n",
                       t.event_count, t.chunks, t.threads.size(), t.strings.size(), t.shapes.size());
    out += "threads:\n";
    for (size_t i = 0; i < t.threads.size(); ++i) {
      static const PerThread kNone;
      const PerThread& p = i < per_.size() ? per_[i] : kNone;
      std::map<std::pair<uint32_t, std::string>, uint64_t> launches;  // (device, kernel)
      uint64_t n = 0;
      for (const auto& [shape, c] : p.shapes) {
        const LaunchShape& sh = t.shapes[shape];
        launches[{sh.device, kernel_name(t.Str(sh.kernel))}] += c;
        n += c;
      }
      out += fmt::format("  {} {} (tid {}): {} launches, {} syncs, {} memops, {} tuner calls, {} "
                         "locks, {} nvtx\n",
                         i, t.threads[i].name, t.threads[i].os_tid, n, p.syncs, p.memops,
                         p.tuner_calls, p.locks, p.nvtx);
      for (const auto& [k, c] : launches)
        out += fmt::format("      device {}  {:>8}  {}\n", k.first, c, k.second);
      for (const auto& [k, c] : p.calls)
        out += fmt::format("      tuner     {:>8}  {} key {}\n", c, k.first, k.second);
    }
    out += fmt::format("kernel timings: {} timed, {} without timing\n", timed_, untimed_);
    if (!tuners_.empty()) out += "tuners:\n";
    size_t uncalled = 0;
    for (const auto& [id, ti] : tuners_) {
      if (!all && ti.calls == 0 && ti.benches == 0) {
        ++uncalled;
        continue;
      }
      out += fmt::format("  {:#x} {} ({}): {} calls, {} config benchmarks, keys: {}\n", id, ti.kernel,
                         ti.cls, ti.calls, ti.benches, fmt::join(ti.keys, ", "));
      // FLA's version, as the probe's metadata of its first call recorded it (where that did
      // not: the module of FLA's that the tuner came from).
      if (!ti.fla.empty())
        out += fmt::format("      FLA {}{}\n", ti.fla, ti.triton.empty() ? "" : ", Triton " + ti.triton);
      else if (ti.described && ti.cls.rfind("fla.", 0) == 0)
        out += fmt::format("      FLA: {}, its version not recorded\n", ti.cls.substr(0, ti.cls.rfind('.')));
      // What the probe saw on the GPU: a patch of run on the path of each call, or not.
      for (const std::string& line : replay::ReachLines(ti.reach))
        out += fmt::format("      patch reach: {}\n", line);
      if (!ti.described) continue;
      out += fmt::format("      in-parameters: {}\n", ti.arg_names.empty() ? "(none recorded)"
                                                        : fmt::format("{}", fmt::join(ti.arg_names, ", ")));
      out += fmt::format("      restore_value: {}; reset_to_zero: {}\n",
                         Names(ti.arg_names, ti.restore_value), Names(ti.arg_names, ti.reset_to_zero));
      out += fmt::format("      configs ({}):\n", ti.configs.size());
      for (size_t c = 0; c < ti.configs.size(); ++c)
        out += fmt::format("        {:>3}  {}\n", c, ti.configs[c]);
    }
    if (uncalled > 0)
      out += fmt::format("  and {} other tuner{} with no call recorded (created, never called; --all lists them)\n",
                         uncalled, uncalled == 1 ? "" : "s");
    out += fmt::format("failures recorded: {}\n", failures_.size());
    for (const auto& [thread, f] : failures_)
      out += fmt::format("  thread {} ({}), {}\n", thread, t.threads[thread].name, f);
    if (t.has_footer)
      out += fmt::format("CUPTI records dropped: {}, recorder problems: {}\n", t.footer.cupti_dropped,
                         t.footer.problems);
    out += t.truncated ? fmt::format("TRUNCATED: {}\n", t.truncation) : "complete: yes\n";
    return WrapReport(out);  // lines at most 160 columns (rerace/base/wrap.h)
  }

 private:
  // Per thread: launches per shape, tuner calls.
  struct PerThread {
    std::map<uint32_t, uint64_t> shapes;
    std::map<std::pair<std::string, std::string>, uint64_t> calls;  // (tuned kernel, key)
    uint64_t syncs = 0, memops = 0, tuner_calls = 0, locks = 0, nvtx = 0;
  };
  struct TunerInfo {
    std::string cls, kernel;
    uint64_t calls = 0, benches = 0;
    std::set<std::string> keys;
    bool described = false;  // from its first call: what the probe recorded of the decorator
    std::vector<std::string> configs, arg_names;
    std::vector<uint32_t> restore_value, reset_to_zero;
    std::vector<replay::TunerCall::Reach> reach;  // each call's, as the probe recorded it
    std::string fla, triton;  // versions in the probe's metadata ("" when not recorded)
  };
  // The probe's metadata is the first call's detail (docs/RECORDER.md): {"fla": "0.6.0" or null,
  // "triton": "3.6.0", ...}.
  static void ReadVersions(const std::string& detail, TunerInfo& ti) {
    if (detail.empty() || detail.front() != '{') return;
    const nlohmann::json j = nlohmann::json::parse(detail, nullptr, false);
    if (!j.is_object()) return;
    if (j.contains("fla") && j["fla"].is_string()) ti.fla = j["fla"].get<std::string>();
    if (j.contains("triton") && j["triton"].is_string()) ti.triton = j["triton"].get<std::string>();
  }
  std::vector<PerThread> per_;
  uint64_t timed_ = 0, untimed_ = 0;
  std::map<uint64_t, TunerInfo> tuners_;
  std::vector<std::pair<uint32_t, std::string>> failures_;
};

namespace {

struct ShowArgs {
  std::string path;
  bool frames = false;
  bool mangled = false;
  bool full_names = false;
  bool all = false;
  int64_t raw_frame = -1;
};

int RunShow(const ShowArgs& a) {
  if (a.frames || a.raw_frame >= 0) {
    auto bytes = ReadFileBytes(a.path);
    if (!bytes) return ReportError(bytes.error());
    auto frames = ListFrames(*bytes, a.path);
    if (!frames) return ReportError(frames.error());
    if (a.raw_frame >= 0) {
      if (static_cast<size_t>(a.raw_frame) >= frames->size())
        return ReportError({fmt::format("{}: no frame {} (the file has {})", a.path, a.raw_frame,
                                        frames->size()),
                            kExitUsage});
      const FrameInfo& f = (*frames)[static_cast<size_t>(a.raw_frame)];
      fwrite(bytes->data() + f.offset + 12, 1, f.payload_bytes, stdout);
      return kExitOk;
    }
    for (size_t i = 0; i < frames->size(); ++i) {
      const FrameInfo& f = (*frames)[i];
      std::printf("frame %zu  kind %u (%s)  offset %llu  payload %u bytes\n", i, f.kind,
                  f.kind == 1 ? "Header" : f.kind == 2 ? "Chunk" : f.kind == 3 ? "Footer" : "?",
                  static_cast<unsigned long long>(f.offset), f.payload_bytes);
    }
    return kExitOk;
  }
  auto stream = TraceStream::Open(a.path);
  if (!stream) return ReportError(stream.error());
  Summary summary;
  std::vector<Event> events;
  std::vector<TunerEvent> tuners;
  for (;;) {
    auto more = stream->Next(events, tuners);
    if (!more) return ReportError(more.error());
    if (!*more) break;
    summary.Add(stream->trace(), events, tuners);
  }
  const Trace& t = stream->trace();
  if (t.truncated)  // first, as in every command that reads a trace (the summary ends with it too)
    std::printf("warning: TRUNCATED trace %s: %s\n", a.path.c_str(), t.truncation.c_str());
  std::fputs(summary.Text(t, a.path, a.mangled, a.full_names, a.all).c_str(), stdout);
  return kExitOk;
}

struct SynthArgs {
  Scenario s;
  std::string out;
};

int RunSynth(SynthArgs a) {
  // --fla names FLA's tuner class unless --tuner-class named another (refused below).
  if (!a.s.fla_version.empty() && a.s.tuner_class == Scenario{}.tuner_class)
    a.s.tuner_class = kFlaTunerClass;
  if (auto v = ValidateScenario(a.s); !v) return ReportError(v.error());
  const uint64_t calls = uint64_t{a.s.threads} * a.s.calls_per_thread;
  if (calls < a.s.tuners)
    return ReportError({fmt::format("synth: --tuners {} but only {} tuner call(s) ({} thread(s) x "
                                    "--calls {}): some tuners would never be called; raise "
                                    "--calls or --threads",
                                    a.s.tuners, calls, a.s.threads, a.s.calls_per_thread),
                        kExitUsage});
  if (auto r = Synthesize(a.s, a.out); !r) return ReportError(r.error());
  struct stat st {};
  if (stat(a.out.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {  // a device or FIFO: not read back
    std::printf("wrote %s\n", a.out.c_str());
    return kExitOk;
  }
  auto t = ReadTrace(a.out);
  if (!t) return ReportError(t.error());
  std::printf("wrote %s: %zu events, %zu threads, %u tuner(s) x %u configs, seed %llu\n",
              a.out.c_str(), t->events.size(), t->threads.size(), a.s.tuners, a.s.configs,
              static_cast<unsigned long long>(a.s.seed));
  return kExitOk;
}

}  // namespace

void RegisterTraceCommands(CLI::App& app, CommandTable& table) {
  auto show = std::make_shared<ShowArgs>();
  CLI::App* sh = app.add_subcommand(
      "show", "Summarize a trace: machine and GPUs, threads, launches per thread and device "
              "(kernel names short, as Nsight Systems shows them), each thread's tuner calls (kernel, key), each tuner "
              "called with its in-parameters, restore_value, reset_to_zero, configs and FLA's version "
              "(the tuners never called counted in one line), failures recorded, dropped records, truncation");
  sh->add_option("trace", show->path, "Trace file")->required();
  sh->add_flag("--frames", show->frames, "List the file's frames (offsets, kinds, sizes)");
  sh->add_flag("--all", show->all,
               "List every tuner, those never called too (by default one line counts them: FLA's "
               "import creates one per autotuned kernel)");
  auto* full = sh->add_flag("--full-names", show->full_names,
                            "Kernel names in full, as the source spells them (demangled, with "
                            "namespaces, template arguments and parameters), not short");
  sh->add_flag("--mangled", show->mangled,
               "Kernel names as recorded (C++ kernels mangled), not demangled")
      ->excludes(full);
  sh->add_option("--raw-frame", show->raw_frame,
                 "Write frame N's payload (packed Cap'n Proto) to stdout, for "
                 "'capnp decode --packed traces/schema/trace.capnp Chunk'")
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  table.Add(sh, [show] { return RunShow(*show); });

  auto synth = std::make_shared<SynthArgs>();
  Scenario& s = synth->s;
  CLI::App* sy = app.add_subcommand(
      "synth", "Write a synthetic trace from a scenario. The default scenario has the shape of "
               "the H200 experiment: 8 threads, one autotuned kernel with 12 configs, key N, "
               "restore_value=['y_ptr'], cold cache, all threads calling at once");
  sy->add_option("-o,--output", synth->out, "Trace file to write")->required();
  sy->add_option("--threads", s.threads, "Host threads")->default_val(s.threads)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--tuners", s.tuners, "Autotuned kernels")->default_val(s.tuners)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--configs", s.configs, "Configs per tuner")->default_val(s.configs)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--calls", s.calls_per_thread, "Tuner calls per thread")
      ->default_val(s.calls_per_thread)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--keys", s.keys, "Key values; call i of thread t uses key (t+i) mod n")
      ->default_str("4096");
  sy->add_option("--args", s.arg_names, "The kernel's positional argument names")
      ->default_str("x_ptr y_ptr N");
  sy->add_option("--restore-value", s.restore_value, "restore_value argument names")
      ->default_str("y_ptr");
  sy->add_option("--reset-to-zero", s.reset_to_zero, "reset_to_zero argument names");
  sy->add_option("--reps", s.repetitions, "do_bench repetitions recorded per config")
      ->default_val(s.repetitions)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--bench-ns", s.bench_ns, "Mean kernel time while benchmarking (ns)")
      ->default_val(s.bench_ns)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  sy->add_option("--kernel-ns", s.kernel_ns, "Mean kernel time of the final launch (ns)")
      ->default_val(s.kernel_ns)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  sy->add_option("--other-launches", s.other_launches, "Untuned launches per thread")
      ->default_val(s.other_launches)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--gpus", s.gpus, "GPUs (thread t uses GPU t mod gpus)")->default_val(s.gpus)
      ->check(flags::Count(0, std::numeric_limits<uint32_t>::max()));
  sy->add_option("--seed", s.seed, "Seed of the synthetic durations")->default_val(s.seed)
      ->check(flags::Count(0, std::numeric_limits<uint64_t>::max()));
  sy->add_option("--tuner-class", s.tuner_class, "Tuner class recorded")
      ->default_val(s.tuner_class);
  sy->add_flag("--probe-metadata", s.probe_metadata,
               "Write the probe's metadata in each tuner's first call (kernel module and name, key "
               "names, tuner class, Triton and FLA versions, where run, _bench and the hooks are "
               "defined), as 'rerace record --probe triton' does; keys as the probe writes them, "
               "'(4096,)'");
  sy->add_flag("--copies", s.copies,
               "Each thread calls its own shallow copy (copy.copy) of each tuner: tuner objects "
               "that share the original's cache dict and whose hooks write the original's "
               "restore_copies (implies --probe-metadata)");
  sy->add_flag("--identity", s.identity,
               "Write the probe's identity records (metadata version 2): which cache dict and "
               "hooks each tuner holds, and the tuner each hook acts on (implies "
               "--probe-metadata)");
  sy->add_option("--kernel-module", s.kernel_module,
                 "The kernel's module in the probe's metadata ('__main__': a script's kernel, "
                 "which the python engine builds from the recording)")
      ->default_val(s.kernel_module);
  sy->add_option("--key-names", s.key_names, "The autotune key's argument names (probe metadata)")
      ->default_str("N");
  sy->add_option("--triton-version", s.triton_version, "Triton version in the probe's metadata")
      ->default_val(s.triton_version);
  sy->add_option("--fla", s.fla_version,
                 "FLA's release (0.5.2, 0.6.0): the tuner is FLA's CachedAutotuner "
                 "(fla_cache_autotune; tuner class fla.ops.utils.cache.CachedAutotuner, its run and "
                 "hooks FLA's in the probe's metadata, which --fla implies)");
  table.Add(sy, [synth] { return RunSynth(*synth); });
}

}  // namespace rerace::tools
