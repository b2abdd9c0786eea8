// rerace/recorder/recorder.h: what the CUPTI callbacks hand their events to.
//
// The model. The recorded program's threads call into CUPTI callbacks (launches, syncs, NVTX
// marks). Each of those threads owns a ThreadBuffer: a single-producer, single-consumer byte
// ring, preallocated when the thread first records, that the callback appends a small record
// to without allocating, locking or throwing. A background writer thread drains every buffer
// at least every `flush_period` (within 2 ms when a ring is over an eighth full), merges
// the records by CPU time, resolves kernel names and
// correlation ids, and appends a chunk to the trace (traces/writer.h), which reaches the file
// with one write(2). A full buffer drops the record and counts it; the footer says so.
//
// Kernel activity records (GPU start and end) arrive on CUPTI's own thread through
// AddActivity, and are matched to their launch by correlation id when written.
//
//   Recorder& r = Recorder::Start(options);         // once, at injection
//   r.Launch(...), r.Nvtx(...)                      // from any user thread (callbacks)
//   r.Stop(footer_extras);                          // at exit: final drain, footer
//
// Threads: Start/Stop from one thread; the record methods from any thread (each thread its
// own buffer); AddActivity from any thread (a mutex: never a user thread's path).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::traces {
class TraceWriter;
}

namespace rerace::recorder {

// One record in a ThreadBuffer: a fixed header, then `text_len` bytes of text.
struct RawRecord {
  enum Kind : uint8_t { kLaunch = 1, kSync, kMemOp, kNvtx, kThreadName };
  uint8_t kind = 0;
  uint8_t sub = 0;           // SyncKind / MemKind / NvtxKind
  uint16_t text_len = 0;     // kernel name (first launch of a function by this thread), NVTX text
  uint32_t correlation = 0;
  uint64_t cpu_ns = 0;
  uint64_t function = 0;     // kLaunch: CUfunction identity
  uint64_t stream = 0;
  uint64_t handle = 0;       // event handle, bytes (memop), range id (nvtx)
  uint32_t device = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t shared_bytes = 0;
};

// Single-producer single-consumer byte ring. The producer is the owning user thread, the
// consumer the writer thread. Push never blocks or allocates: it returns false when full.
class ThreadBuffer {
 public:
  explicit ThreadBuffer(size_t capacity_bytes, uint64_t os_tid);
  bool Push(const RawRecord& r, const char* text, size_t text_len);
  // Consumer side: calls f(record, text_view) for each record, oldest first.
  template <typename F>
  void Drain(F&& f);
  uint64_t os_tid() const { return os_tid_; }
  // Set (relaxed) by Push when the ring is over an eighth full; the writer drains early.
  void SetPressureFlag(std::atomic<bool>* flag) { pressure_ = flag; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  // Per-thread cache of functions whose name this thread already sent (fixed size).
  bool NameSent(uint64_t function);
  void MarkNameSent(uint64_t function);

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_;
  uint64_t os_tid_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool>* pressure_ = nullptr;
  static constexpr size_t kNameSlots = 1024;
  uint64_t names_[kNameSlots] = {};
  static constexpr uint32_t kWrapMarker = 0xFFFFFFFFu;
  static constexpr size_t kPrefix = 8;
};

template <typename F>
void ThreadBuffer::Drain(F&& f) {
  uint64_t t = tail_.load(std::memory_order_relaxed);
  const uint64_t h = head_.load(std::memory_order_acquire);
  while (t < h) {
    const size_t off = t % capacity_;
    uint32_t len = 0;
    std::memcpy(&len, data_.get() + off, sizeof len);
    if (len == kWrapMarker) {
      t += capacity_ - off;
      continue;
    }
    RawRecord r;
    std::memcpy(&r, data_.get() + off + kPrefix, sizeof r);
    const char* text = reinterpret_cast<const char*>(data_.get() + off + kPrefix + sizeof r);
    f(r, std::string_view(text, r.text_len));
    t += len;
  }
  tail_.store(t, std::memory_order_release);
}

struct RecorderOptions {
  std::string path;                  // the trace file
  traces::Header header;
  size_t buffer_bytes = 4u << 20;    // per recording thread
  uint32_t flush_period_ms = 50;     // the writer drains at least this often (must be <= 100)
};

class Recorder {
 public:
  static Result<std::unique_ptr<Recorder>> Create(RecorderOptions options);
  ~Recorder();

  // ---- from user threads (callbacks): no allocation after the thread's first record ----
  void Launch(uint64_t cpu_ns, uint32_t correlation, uint64_t function, const char* name,
              uint32_t device, uint64_t stream, const uint32_t grid[3], const uint32_t block[3],
              uint32_t shared_bytes);
  void Sync(uint64_t cpu_ns, traces::SyncKind kind, uint32_t device, uint64_t stream,
            uint64_t event);
  void MemOp(uint64_t cpu_ns, traces::MemKind kind, uint32_t device, uint64_t stream,
             uint64_t bytes, uint32_t correlation);
  void Nvtx(uint64_t cpu_ns, traces::NvtxKind kind, const char* text, uint64_t range_id);
  void ThreadName(uint64_t cpu_ns, const char* name);

  // ---- from CUPTI's buffer-completed thread ----
  void AddActivity(uint32_t correlation, uint64_t gpu_start_ns, uint64_t gpu_end_ns);
  void AddDropped(uint64_t records);
  // A problem a callback could not report otherwise (counted in the footer).
  void CountProblem() { problems_.fetch_add(1, std::memory_order_relaxed); }

  // Stops the writer thread, drains everything, writes the footer and closes the file.
  Result<void> Stop(std::vector<traces::ClockPair> end_clock_pairs, bool complete = true);
  // Drains now (tests); normally the writer thread does this.
  Result<void> FlushNow();

  uint64_t events_written() const;
  const std::string& path() const { return options_.path; }

  // The calling thread's buffer (created on first use). Public for tests.
  ThreadBuffer* BufferForThisThread();

 private:
  explicit Recorder(RecorderOptions options);
  void WriterLoop();
  Result<void> DrainAll();

  RecorderOptions options_;
  std::unique_ptr<traces::TraceWriter> writer_;
  std::mutex buffers_mu_;                              // registration, and draining
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;  // guarded by buffers_mu_
  std::vector<uint32_t> thread_ids_;                    // trace thread id per buffer
  std::mutex activity_mu_;
  std::vector<traces::Event> activity_;                 // guarded by activity_mu_
  std::vector<traces::Event> pending_activity_;         // writer only: launch not yet seen
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> problems_{0};
  std::atomic<bool> pressure_{false};  // a ring is over an eighth full: drain now
  bool PressureAndClear() { return pressure_.exchange(false, std::memory_order_relaxed); }
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::thread thread_;
  std::mutex write_mu_;  // one drain at a time
  // Writer-side tables (under write_mu_).
  std::vector<std::pair<uint64_t, uint32_t>> function_names_;  // function → string id (sorted)
  std::vector<std::pair<uint32_t, uint32_t>> launch_thread_;   // correlation → trace thread
  bool stopped_ = false;
  struct DrainItem {
    uint64_t cpu_ns;
    size_t buffer;
    uint64_t order;
    RawRecord r;
    std::string text;
  };
  std::vector<DrainItem> drain_items_;  // under write_mu_
  uint64_t generation_ = 0;  // unique per recorder in this process
};

// The process-wide recorder the CUPTI callbacks use (null until injection starts it).
Recorder* Global();
void SetGlobal(Recorder* r);

uint64_t MonotonicNs();
uint64_t OsThreadId();

}  // namespace rerace::recorder
