// rerace/traces/synth.h: synthetic traces from a scenario, until (and beside) real ones.
//
// A Scenario describes what a recorded step would contain: threads calling autotuned kernels
// with a cold cache, each call's key, configs and in-parameters, the benchmark time of each
// config and the kernels' durations. Synthesize() writes the trace a recorder would have
// written for it, with every thread's tuner transitions (call, each config's benchmark with
// its pre and post hooks per repetition, the final launch) and the kernel launches and their
// GPU timings.
//
// NB: the recorded order in a synthetic trace is a plausible one, not a simulation: threads
// advance in turns of one transition (the "all threads call at once" shape of the H200
// experiment), and no failure is recorded in it. Replaying that order under a tuner model
// shows what real Triton would have done in it.
//
// Deterministic: the same scenario (seed included) gives a byte-identical file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rerace/base/result.h"

namespace rerace::traces {

struct Scenario {
  uint32_t threads = 8;
  uint32_t tuners = 1;               // distinct autotuned kernels
  uint32_t configs = 12;
  uint32_t calls_per_thread = 1;     // tuner calls each thread makes; thread t's call i tunes
                                     // kernel (t + i) mod tuners
  std::vector<std::string> keys = {"4096"};  // key values (key = ['N']); call i uses keys[i % n]
  std::vector<std::string> arg_names = {"x_ptr", "y_ptr", "N"};
  std::vector<std::string> restore_value = {"y_ptr"};
  std::vector<std::string> reset_to_zero = {};
  uint32_t repetitions = 3;          // do_bench repetitions recorded per config
  uint64_t bench_ns = 20'000;        // mean kernel time during benchmarking
  uint64_t kernel_ns = 20'000;       // mean kernel time of the final launch
  uint32_t other_launches = 2;       // untuned kernels each thread launches around its calls
  uint32_t gpus = 1;                 // thread t runs on GPU t % gpus
  uint64_t seed = 1;
  std::string tuner_class = "triton.runtime.autotuner.Autotuner";
  // The probe's metadata (rerace_probe.metadata, version 1) in each tuner's first call-begin
  // detail, as `rerace record --probe triton` writes it: the kernel's module and name, the key
  // names, the tuner class split into module and qualname, the Triton (and FLA) versions and
  // where `run`, Triton's `Autotuner.run`, `_bench` and the hooks are defined. Off: no detail
  // (the shape of recordings made before the probe wrote metadata). With metadata the keys are
  // written as the probe writes them, "(4096,)" (the key arguments' values), so that the
  // real-code engine reads them by their names.
  bool probe_metadata = false;
  std::string kernel_module = "__main__";  // where the kernel is defined: a script's kernel
  std::vector<std::string> key_names = {"N"};  // the autotune key's argument names
  std::string triton_version = "3.6.0";
  // FLA's release (e.g. "0.6.0"): the tuner is FLA's CachedAutotuner (fla_cache_autotune), its
  // class and `run` in fla.ops.utils.cache, its None-safe hooks FLA's; implies probe_metadata
  // and tuner_class "fla.ops.utils.cache.CachedAutotuner". Empty: Triton's Autotuner.
  std::string fla_version;
  // Each thread calls its own shallow copy (copy.copy) of each tuner: distinct tuner objects
  // that share the original's cache dict and whose hooks, closures over the original, write
  // the original's restore_copies; the original makes no call. Implies probe_metadata.
  bool copies = false;
  // The probe's identity records in the metadata (rerace_probe.identity, METADATA_VERSION 2):
  // which cache dict and hooks each tuner holds, and the tuner each hook acts on. Off: the
  // metadata of an older probe (version 1), which says nothing of sharing.
  bool identity = false;
};

// The tuner class FLA's fla_cache_autotune builds, as the probe names it.
inline constexpr const char* kFlaTunerClass = "fla.ops.utils.cache.CachedAutotuner";

// What one scenario may ask for: each parameter has its range, and their product (the events
// written, each held in memory until written) is bounded too, so that what synth writes the
// reader reads within its default limit (4M events of 70 configs took 1.7 GB to write and more
// than the reader's 1024 MiB to read; 1M stays well inside both).
inline constexpr uint64_t kMaxSynthEvents = 1'000'000;
inline constexpr uint64_t kMaxSynthKernelNs = 1'000'000'000'000ull;  // 1000 s

// Checks a scenario; the message names the offending field (exit 64).
Result<void> ValidateScenario(const Scenario& s);
Result<void> Synthesize(const Scenario& s, const std::string& path);
// The command line recorded in the trace's header: every parameter of the scenario, as
// `rerace synth` flags (the output path aside), so that the header says how to make it again.
std::vector<std::string> SynthCommand(const Scenario& s);

}  // namespace rerace::traces
