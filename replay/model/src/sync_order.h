// replay/model/src/sync_order.h: the program's own synchronization, recorded as `rerace:sync`
// marks (recorder/python/rerace_probe/sync.py), turned into an order between tuner calls.
//
// A release (Event.set, Thread.start, Queue.put, ...) carries the calls its thread ended before
// it, and those its thread had to follow and has not passed to a call of its own yet; the
// acquire that follows it (Event.wait returned, the started thread's first step, the get of
// that item, ...) hands them to its thread, whose next call must begin after each of them
// ends (Program::call_after). Chains through threads that make no call carry their order on.
// Marks made inside a tuner call (a patch's own events) are not the recording's order: the
// replay re-executes the patch.
//
// Owned by one ProgramBuilder; one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace rerace::replay::detail {

class SyncOrder {
 public:
  explicit SyncOrder(size_t threads) : last_call_(threads, -1), pending_(threads) {}

  // Whether `text` is a synchronization mark (a free NVTX mark with the prefix).
  static bool IsMark(std::string_view text);
  // A mark of thread `t`, in trace order; `in_call`: t is inside a tuner call.
  void Mark(uint32_t t, std::string_view text, bool in_call);
  // Thread t begins call `call`: the calls it must follow (sorted, each once); passed on.
  std::vector<uint32_t> CallBegins(uint32_t t, uint32_t call);

  bool recorded() const { return recorded_; }
  bool overflowed() const { return overflowed_; }
  // Per primitive ("Event", "Thread.start", ...): acquires that handed a call order on.
  const std::map<std::string, uint32_t>& orders() const { return orders_; }
  uint64_t unknown() const { return unknown_; }

 private:
  std::vector<uint32_t> Carried(uint32_t t) const;
  static void Merge(std::vector<uint32_t>& into, const std::vector<uint32_t>& from);

  std::vector<int64_t> last_call_;               // per thread: its latest call, or -1
  std::vector<std::vector<uint32_t>> pending_;   // per thread: calls its next call follows
  // "last" primitives: (what, object) -> what its latest release carried.
  std::map<std::pair<std::string, uint64_t>, std::vector<uint32_t>> last_;
  // "seq" primitives (a queue's k-th item, a barrier's generation): every release's carry.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::vector<uint32_t>> by_seq_;
  std::map<std::string, uint32_t> orders_;
  bool recorded_ = false;
  bool overflowed_ = false;
  uint64_t unknown_ = 0;
};

}  // namespace rerace::replay::detail
