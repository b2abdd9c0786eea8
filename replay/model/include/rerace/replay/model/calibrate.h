// replay/model/include/rerace/replay/model/calibrate.h: the virtual GPU and CPU's calibration by the recording (private to
// replay; see virtual_gpu.h and docs/MODEL.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "rerace/replay/model/program.h"

namespace rerace::replay::detail {

// Devices on which the recording shows GPU work of two streams running at once.
std::set<uint32_t> OverlappingDevices(const traces::Trace& trace);

// GPU work of one device, for Program::overlapping_devices.
struct GpuInterval {
  uint64_t start, end, stream;
};
// The devices whose intervals include two of different streams that overlap: the one sweep,
// used by OverlappingDevices over a whole trace and by a streamed build over the intervals it
// keeps (program_builder.h).
std::set<uint32_t> OverlapsOf(std::map<uint32_t, std::vector<GpuInterval>> by_device);

// Per call and config, the recorded benchmark's (wall, GPU work) (0: not benchmarked); per
// call, its CPU time outside benchmarks (UINT64_MAX: the call did not end). Fills the calls'
// trial and call CPU times and the program's GIL.
// `benches`: every recorded benchmark's interval (call, config, begin, end), to take, for trials
// that synchronize the whole device (TunerCall::trial_device_sync, a fixed repetition count),
// each one's own time out of a wall shared with other threads' trials.
// Python trials that run for a time budget, `running` at once (itself included, >= 1): each
// takes 1 + contention x log2(running) times its time alone (Program::trial_contention_ppm).
inline double TrialContentionFactor(uint32_t ppm, double running) {
  return running <= 1 ? 1.0 : 1.0 + static_cast<double>(ppm) / 1e6 * std::log2(running);
}
// The contention when the recording has no time-budgeted trials of one kernel and config both
// alone and with others: measured on the H200 (CPython 3.12, Triton 3.6, the brief's l2norm
// kernel, 12 configs, cold; tools/scripts/h200-cost-check.sh --variant 3, docs/MODEL.md): a thread's
// benchmarks took 1917 ms alone (lock-run), 2137-2230 ms with one other thread tuning at once,
// 2517-2681 ms (median 2672) with seven others: 2672 / 1917 = 1.39 = 1 + 0.13 x log2(8); the
// figure predicts 1.13 for two threads, where 1.11-1.16 was recorded.
inline constexpr double kTrialContentionH200 = 0.13;

struct BenchInterval {
  size_t call = 0, config = 0;
  Nanos begin = 0, end = 0;
};
void Calibrate(Program& p, std::vector<std::vector<std::pair<Nanos, Nanos>>> bench_seen,
               const std::vector<Nanos>& call_cpu, const std::vector<BenchInterval>& benches);

// The program a fix's cost is priced on: a worker whose recording ended in a failure (it threw in
// a tuner call and stopped) is given, after that call, what the worker that completed the most
// tuner calls without a failure did after its call of the same rank, when their calls until
// then are of the same kernels (the step is assumed the same on every worker, as in a
// data-parallel step). A fix that lets the failed workers go on then has their work to price.
// `completed`: how many workers were given it (0: `p` is returned as it is).
Program CompleteFailedWorkers(const Program& p, uint32_t* completed);

}  // namespace rerace::replay::detail
