// The recorder's side of "no dropped records at a million launches per second": user threads
// push launch records into their rings (as the CUPTI callback does) at a paced total rate while
// the background writer drains, merges and writes chunks; prints the rate reached and the
// records dropped. And an unpaced row: how fast the rings and writer go flat out. The GPU side
// (how fast a program can launch at all) is measured on the H200 (docs/PERFORMANCE.md).
// Timing uses the wall clock: a benchmark, never part of a replay.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rerace/recorder/recorder.h"
#include "rerace/traces/reader.h"

using namespace rerace;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
  int threads;
  double target;  // launches/s in total, 0: flat out
  uint64_t launches;
  double seconds;
  uint64_t written;
  uint64_t dropped;
};

Row Run(int threads, double target_per_s, double seconds) {
  const std::string path = "/tmp/rerace-recorder-bench-" + std::to_string(getpid()) + ".rrt";
  recorder::RecorderOptions o;
  o.path = path;
  o.header.host = "bench";
  auto rec = recorder::Recorder::Create(o);
  if (!rec.ok()) {
    std::fprintf(stderr, "recorder_bench: %s\n", rec.error().message.c_str());
    std::exit(1);
  }
  recorder::Recorder& r = **rec;
  std::atomic<uint32_t> correlation{1};
  std::atomic<uint64_t> total{0};
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint32_t grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
      const double per_thread = target_per_s / threads;
      uint64_t n = 0;
      for (;;) {
        const auto now = Clock::now();
        if (now >= end) break;
        if (per_thread > 0) {
          // Paced: sleep until the target rate allows the next 16 (a launching thread waits
          // for the driver, it does not spin).
          const double due = std::chrono::duration<double>(now - start).count() * per_thread;
          if (static_cast<double>(n) >= due) {
            std::this_thread::sleep_until(
                start + std::chrono::duration<double>(static_cast<double>(n + 16) / per_thread));
            continue;
          }
        }
        for (int k = 0; k < 16; ++k, ++n)
          r.Launch(recorder::MonotonicNs(), correlation.fetch_add(1, std::memory_order_relaxed),
                   0x1000 + static_cast<uint64_t>(k % 4), "kernel_a", 0, static_cast<uint64_t>(t + 1),
                   grid, block, 0);
      }
      total += n;
    });
  }
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (!r.Stop({}).ok()) std::exit(1);
  auto trace = traces::ReadTrace(path);
  std::remove(path.c_str());
  Row row{threads, target_per_s, total.load(), secs, 0, 0};
  if (trace.ok()) {
    // A full ring drops the record and counts it as a problem (the footer says incomplete).
    row.written = trace->footer.launch_count;
    row.dropped = row.launches - row.written;
  }
  return row;
}

}  // namespace

int main() {
  std::vector<Row> rows;
  for (int threads : {1, 8, 16}) rows.push_back(Run(threads, 1e6, 2.0));
  rows.push_back(Run(8, 2e6, 2.0));
  for (int threads : {1, 8}) rows.push_back(Run(threads, 0, 1.0));
  std::printf("%-8s %-12s %-12s %-14s %-12s %s\n", "threads", "target/s", "launches", "reached/s",
              "written", "dropped");
  for (const Row& r : rows)
    std::printf("%-8d %-12s %-12llu %-14.0f %-12llu %llu\n", r.threads,
                r.target > 0 ? std::to_string(static_cast<long long>(r.target)).c_str() : "flat out",
                static_cast<unsigned long long>(r.launches), static_cast<double>(r.launches) / r.seconds,
                static_cast<unsigned long long>(r.written), static_cast<unsigned long long>(r.dropped));
  return 0;
}
