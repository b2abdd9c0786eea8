// Trace size and speed: bytes per launch event and per tuner event on a trace of a million
// events (packed on disk, and what the same chunks take unpacked), and write / read
// throughput. Prints a table; `make bench` runs it. Timing uses the wall clock: this is a
// benchmark, never part of a replay.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>

#include "rerace/traces/reader.h"
#include "rerace/traces/writer.h"

using namespace rerace::traces;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Row {
  const char* what;
  uint64_t events;
  uint64_t file_bytes;
  uint64_t unpacked_bytes;
  double write_s;
  double read_s;
  double stream_s;  // TraceStream: chunk by chunk, nothing kept
};

// The same file through TraceStream (every check, one chunk's events at a time).
double Streamed(const std::string& path, uint64_t n) {
  const auto t0 = Clock::now();
  auto s = TraceStream::Open(path);
  uint64_t seen = 0;
  std::vector<Event> events;
  std::vector<TunerEvent> tuners;
  while (s) {
    auto more = s->Next(events, tuners);
    if (!more || !*more) break;
    seen += events.size();
  }
  const auto t1 = Clock::now();
  if (seen != n) std::fprintf(stderr, "streamed read back failed\n");
  return Seconds(t0, t1);
}

// A launch-heavy step: 8 threads, 24 launch shapes, 1-5 us between launches, correlation ids
// rising by 1-3 (other API calls take ids too), chunks of 64k events (the recorder flushes
// every 100 ms; at a million launches a second that is ~100k events).
Row Launches(uint64_t n, const std::string& path) {
  const auto t0 = Clock::now();
  auto w = TraceWriter::Create(path, Header{});
  if (!w) return {};
  TraceWriter& tw = **w;
  uint32_t shapes[24];
  for (uint32_t i = 0; i < 8; ++i) tw.AddThread(1000 + i, "worker");
  for (uint32_t i = 0; i < 24; ++i) {
    LaunchShape sh;
    sh.kernel = tw.String("kernel_" + std::to_string(i % 6));
    sh.stream = 7 + i % 8;
    sh.grid[0] = 128u << (i % 4);
    sh.block[0] = 256;
    shapes[i] = tw.Shape(sh);
  }
  uint64_t cpu = 1'000'000'000, x = 12345;
  uint32_t corr = 1;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    cpu += 1000 + (x >> 33) % 4000;
    corr += 1 + static_cast<uint32_t>((x >> 40) % 3);
    tw.AppendLaunch(static_cast<uint32_t>((x >> 50) % 8), cpu, shapes[(x >> 20) % 24], corr);
    if (tw.pending_events() >= 65536) (void)tw.Flush();
  }
  (void)tw.Finish({});
  const auto t1 = Clock::now();
  auto t = ReadTrace(path);
  const auto t2 = Clock::now();
  if (!t || t->events.size() != n) std::fprintf(stderr, "read back failed\n");
  return {"launch", n, tw.bytes_written(), tw.unpacked_bytes(), Seconds(t0, t1), Seconds(t1, t2),
          Streamed(path, n)};
}

// Tuner transitions as the Triton probe emits them: pre/post hooks and field accesses with a
// key and a config, and a bench-end with timings every 30 events.
Row Tuners(uint64_t n, const std::string& path) {
  const auto t0 = Clock::now();
  auto w = TraceWriter::Create(path, Header{});
  if (!w) return {};
  TraceWriter& tw = **w;
  for (uint32_t i = 0; i < 8; ++i) tw.AddThread(1000 + i, "worker");
  const uint32_t cls = tw.String("triton.runtime.autotuner.Autotuner");
  const uint32_t k = tw.String("l2norm_fwd_kernel");
  uint64_t cpu = 1'000'000'000;
  for (uint64_t i = 0; i < n; ++i) {
    TunerEvent e;
    e.tuner = 0x7f00deadbeef;
    e.tuner_class = cls;
    e.kernel = k;
    e.key = "(4096, 'torch.float32')";
    e.config = static_cast<int32_t>(i / 30 % 12);
    e.kind = i % 30 == 29 ? TunerKind::kBenchEnd : i % 2 ? TunerKind::kPostHook : TunerKind::kPreHook;
    e.detail = "y_ptr";
    if (e.kind == TunerKind::kBenchEnd) {
      e.timings_ms = {0.0213, 0.0209, 0.0221};
      e.repetitions = 14;
    }
    cpu += 3000;
    tw.AppendTuner(static_cast<uint32_t>(i % 8), cpu, std::move(e));
    if (tw.pending_events() >= 65536) (void)tw.Flush();
  }
  (void)tw.Finish({});
  const auto t1 = Clock::now();
  auto t = ReadTrace(path);
  const auto t2 = Clock::now();
  if (!t || t->events.size() != n) std::fprintf(stderr, "read back failed\n");
  return {"tuner", n, tw.bytes_written(), tw.unpacked_bytes(), Seconds(t0, t1), Seconds(t1, t2),
          Streamed(path, n)};
}

// The floor under any reader of this format: Cap'n Proto's packed decoding of every chunk,
// with no validation and nothing kept.
double UnpackOnly(const std::string& path, uint64_t* events) {
  auto bytes = ReadFileBytes(path);
  if (!bytes) return 0;
  auto frames = ListFrames(*bytes, path);
  const auto t0 = Clock::now();
  uint64_t words = 0;
  for (const FrameInfo& f : *frames) {
    kj::ArrayInputStream in(kj::ArrayPtr<const kj::byte>(bytes->data() + f.offset + 12, f.payload_bytes));
    capnp::ReaderOptions o;
    o.traversalLimitInWords = 1ull << 40;
    capnp::PackedMessageReader msg(in, o);
    words += msg.getRoot<capnp::AnyPointer>().targetSize().wordCount;
  }
  const auto t1 = Clock::now();
  *events = words;
  return Seconds(t0, t1);
}

}  // namespace

int main() {
  const std::string dir = "/tmp";
  Row rows[] = {Launches(1'000'000, dir + "/rerace-bench-launch.rrt"),
                Tuners(1'000'000, dir + "/rerace-bench-tuner.rrt")};
  std::printf("| events | count | file bytes | bytes/event packed | bytes/event unpacked | write Mev/s | read Mev/s | read streamed Mev/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const double n = static_cast<double>(r.events);
    std::printf("| %s | %llu | %llu | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.what,
                static_cast<unsigned long long>(r.events),
                static_cast<unsigned long long>(r.file_bytes),
                static_cast<double>(r.file_bytes) / n, static_cast<double>(r.unpacked_bytes) / n,
                n / r.write_s / 1e6, n / r.read_s / 1e6, n / r.stream_s / 1e6);
  }
  uint64_t words = 0;
  const double unpack_s = UnpackOnly(dir + "/rerace-bench-launch.rrt", &words);
  std::printf("\nCap'n Proto packed decoding alone of the launch trace (no validation, nothing "
              "kept): %.1f ms, %.1f M events/s, %.2f GB/s unpacked\n",
              unpack_s * 1e3, 1.0 / unpack_s, static_cast<double>(words) * 8 / unpack_s / 1e9);
  std::remove((dir + "/rerace-bench-launch.rrt").c_str());
  std::remove((dir + "/rerace-bench-tuner.rrt").c_str());
  return 0;
}
