// rerace/sim/schedule.h: the record of every choice a run made, and its file form.
//
// A `Schedule` is the sequence of thread ids the scheduler ran, one per step. It is kept
// run-length encoded (a thread usually runs several steps in a row under replay-friendly
// strategies), written as one compact versioned line:
//
//   rs1:0*3.1*2.0.2*5      thread 0 three steps, thread 1 two, thread 0 one, thread 2 five
//
// and as a file of `# key: value` comment lines followed by that line. A saved schedule
// replays without the seed that produced it (see `ScheduleReplay` in strategy.h).
//
// NB: the format version is the `rs1` prefix (kScheduleFormat). It must be bumped on any
// change to the encoding; a reader meeting another version says which it found and which it
// reads.
//
// A Schedule is a plain value; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rerace/base/result.h"

namespace rerace::sim {

using ThreadId = uint32_t;
inline constexpr ThreadId kNoThread = UINT32_MAX;
inline constexpr std::string_view kScheduleFormat = "rs1";
// Schedule::Load reads only regular files up to this size (a run-length line of millions of
// steps is a few megabytes).
inline constexpr uint64_t kMaxScheduleFileBytes = 64u << 20;

class Schedule {
 public:
  struct Run {
    ThreadId thread;
    uint64_t count;
    bool operator==(const Run&) const = default;
  };

  // Appends one step run by `thread`. Allocates only when a new run does not fit.
  void Append(ThreadId thread) {
    if (!runs_.empty() && runs_.back().thread == thread) {
      ++runs_.back().count;
    } else {
      runs_.push_back({thread, 1});
    }
    ++steps_;
  }
  void Reserve(size_t runs) { runs_.reserve(runs); }

  uint64_t steps() const { return steps_; }
  const std::vector<Run>& runs() const { return runs_; }
  bool empty() const { return steps_ == 0; }
  // Number of context switches (thread changes between consecutive steps).
  uint64_t switches() const { return runs_.empty() ? 0 : runs_.size() - 1; }

  // The step-by-step thread ids (for tests and small schedules).
  std::vector<ThreadId> Expand() const;

  // The compact line, e.g. "rs1:0*3.1*2".
  std::string Encode() const;
  // Parses a line made by Encode(). `where` names the source in error messages.
  static Result<Schedule> Parse(std::string_view line, std::string_view where = "schedule");

  // Writes `# key: value` lines, then the encoded line.
  Result<void> Save(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& meta) const;
  // Reads a file written by Save(); comment and blank lines are skipped.
  static Result<Schedule> Load(const std::string& path);

  bool operator==(const Schedule& other) const { return runs_ == other.runs_; }

 private:
  std::vector<Run> runs_;
  uint64_t steps_ = 0;
};

// Walks a schedule step by step without expanding it.
class ScheduleCursor {
 public:
  explicit ScheduleCursor(const Schedule& s) : s_(&s) {}
  bool Done() const { return run_ >= s_->runs().size(); }
  // REQUIRES: !Done().
  ThreadId Peek() const { return s_->runs()[run_].thread; }
  // How many picks from here are Peek()'s thread, one after another; 0 when Done().
  uint64_t SameAhead() const {
    if (Done()) return 0;
    const auto& runs = s_->runs();
    uint64_t k = runs[run_].count - in_run_;
    for (size_t r = run_ + 1; r < runs.size() && runs[r].thread == runs[run_].thread; ++r)
      k += runs[r].count;
    return k;
  }
  void Advance() {
    if (++in_run_ >= s_->runs()[run_].count) {
      ++run_;
      in_run_ = 0;
    }
  }

 private:
  const Schedule* s_;
  size_t run_ = 0;
  uint64_t in_run_ = 0;
};

}  // namespace rerace::sim
