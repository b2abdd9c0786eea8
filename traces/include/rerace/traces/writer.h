// rerace/traces/writer.h: appends events to a trace file, chunk by chunk.
//
// The writer keeps the events of the current chunk in memory and writes them as one framed
// Cap'n Proto message on Flush(); each frame reaches the kernel with write(2) as soon as it is
// made, so a crash of the recording process loses only what was not flushed. Finish() writes
// the footer; a file without one reads as truncated after its last whole chunk.
//
//   auto w = TraceWriter::Create("out.rrt", header);
//   uint32_t t = (*w)->AddThread(gettid(), "MainThread");
//   uint32_t s = (*w)->Shape({.kernel = (*w)->String("l2norm_fwd"), ...});
//   (*w)->AppendLaunch(t, cpu_ns, s, correlation);
//   (*w)->Flush();  ... (*w)->Finish(footer);
//
// Errors are sticky: after a failed write every call is a no-op and Flush/Finish return the
// first error. Thread-compatible: one thread at a time (the recorder's background writer).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/traces/trace.h"

namespace rerace::traces {

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes the preamble and the header frame. A header whose
  // recording_id is 0 gets a random one.
  static Result<std::unique_ptr<TraceWriter>> Create(const std::string& path, Header header);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Interns a string; the id is stable for the file.
  uint32_t String(std::string_view s);
  // Interns a launch shape. REQUIRES: shape.kernel is an id from String().
  uint32_t Shape(const LaunchShape& shape);
  // Declares a new thread; ids are dense from 0.
  uint32_t AddThread(uint64_t os_tid, std::string_view name);
  void RenameThread(uint32_t id, std::string_view name);

  // Appends one event. `e.seq` is assigned by the writer; for kTuner use AppendTuner.
  void Append(const Event& e);
  void AppendLaunch(uint32_t thread, uint64_t cpu_ns, uint32_t shape, uint32_t correlation);
  void AppendActivity(uint32_t thread, uint64_t cpu_ns, uint32_t correlation,
                      uint64_t gpu_start_ns, uint64_t gpu_end_ns);
  void AppendTuner(uint32_t thread, uint64_t cpu_ns, TunerEvent t);

  size_t pending_events() const { return events_.size(); }
  uint64_t events_written() const { return next_seq_ - events_.size(); }
  uint64_t bytes_written() const { return offset_; }
  // What the chunks would take unpacked (standard Cap'n Proto framing): for size benchmarks.
  uint64_t unpacked_bytes() const { return unpacked_bytes_; }

  // Writes the pending events (if any) as one chunk.
  Result<void> Flush();
  // Flushes, then writes the footer (its counts filled in by the writer) and closes the file.
  Result<void> Finish(Footer footer);

 private:
  TraceWriter(int fd, std::string path);
  Result<void> WriteFrame(uint8_t kind, const std::vector<uint8_t>& payload);
  Result<void> WriteAll(const void* data, size_t size);
  void FlushIfDeltaOverflows(uint64_t cpu_ns);

  int fd_;
  std::string path_;
  uint64_t recording_id_ = 0;  // the header's, written in every chunk and the footer
  uint64_t offset_ = 0;
  uint64_t unpacked_bytes_ = 0;
  std::optional<Error> error_;
  bool finished_ = false;

  std::unordered_map<std::string, uint32_t> string_ids_;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t, uint32_t,
                      uint32_t, uint32_t, uint32_t>,
           uint32_t>
      shape_ids_;
  uint32_t thread_count_ = 0;

  // The chunk being built.
  std::vector<std::string> new_strings_;
  std::vector<LaunchShape> new_shapes_;
  std::vector<Thread> new_threads_;
  std::vector<Event> events_;
  std::vector<TunerEvent> tuners_;
  uint64_t base_cpu_ns_ = 0;
  uint64_t next_seq_ = 0;

  Footer counts_;
};

}  // namespace rerace::traces
