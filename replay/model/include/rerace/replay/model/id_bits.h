// replay/model/include/rerace/replay/model/id_bits.h: a set of correlation ids for the streamed passes (private to replay).
//
// A bitmap in pages of 2^16 ids (8 KiB), made when an id first falls in them: CUPTI hands the
// ids out densely, so N launches take about N/8 bytes. A hostile file that spreads its ids
// pays 8 KiB per id in the reader's own set first (traces/src/correlation_set.h), which the reader's
// memory bound stops; these sets hold no more ids than that one.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace rerace::replay::detail {

class IdBits {
 public:
  void Set(uint32_t id) {
    auto& page = pages_[id >> 16];
    if (page.empty()) page.assign(1024, 0);
    page[(id & 0xffff) >> 6] |= uint64_t{1} << (id & 63);
  }
  bool Test(uint32_t id) const {
    if (last_ == nullptr || last_index_ != id >> 16) {
      const auto it = pages_.find(id >> 16);
      if (it == pages_.end()) return false;
      last_index_ = id >> 16;
      last_ = &it->second;
    }
    return ((*last_)[(id & 0xffff) >> 6] >> (id & 63)) & 1;
  }

 private:
  std::unordered_map<uint32_t, std::vector<uint64_t>> pages_;
  mutable uint32_t last_index_ = 0;
  mutable const std::vector<uint64_t>* last_ = nullptr;  // unordered_map nodes do not move
};

}  // namespace rerace::replay::detail
