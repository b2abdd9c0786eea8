// traces/src/correlation_set.h: the set of launch correlation ids a reader has seen, as a paged
// bitmap whose memory the reader charges to its bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace rerace::traces::detail {

// The correlation ids of the launches seen so far, as a bitmap in pages of 2^16 ids (8 KiB)
// made when an id first falls in them: CUPTI hands the ids out densely in increasing order, so
// a trace of N launches takes about N/8 bytes (a sorted vector took 4 N, a hash set 40 N) and
// a lookup is usually the last page's.
// `Insert` says how many bytes it built, for the reader's memory bound: a hostile file that
// spreads its ids one per page pays 8 KiB per id and is stopped by that bound.
class CorrelationSet {
 public:
  static constexpr uint32_t kPageBits = 16;
  static constexpr size_t kPageWords = (size_t{1} << kPageBits) / 64;
  static constexpr uint64_t kPageCost = kPageWords * sizeof(uint64_t) + 64;  // and its map node
  // Returns false when `id` is already in; `built` receives the bytes this call allocated.
  bool Insert(uint32_t id, uint64_t& built) {
    built = 0;
    uint64_t* page = Page(id >> kPageBits);
    if (page == nullptr) {
      auto fresh = std::make_unique<uint64_t[]>(kPageWords);  // zeroed
      page = fresh.get();
      pages_.emplace(id >> kPageBits, std::move(fresh));
      last_index_ = id >> kPageBits;
      last_ = page;
      built = kPageCost;
    }
    uint64_t& word = page[(id & ((1u << kPageBits) - 1)) >> 6];
    const uint64_t bit = uint64_t{1} << (id & 63);
    if (word & bit) return false;
    word |= bit;
    return true;
  }
  bool Contains(uint32_t id) {
    const uint64_t* page = Page(id >> kPageBits);
    return page != nullptr && ((page[(id & ((1u << kPageBits) - 1)) >> 6] >> (id & 63)) & 1);
  }

 private:
  uint64_t* Page(uint32_t index) {
    if (last_ != nullptr && index == last_index_) return last_;
    const auto it = pages_.find(index);
    if (it == pages_.end()) return nullptr;
    last_index_ = index;
    last_ = it->second.get();
    return last_;
  }
  std::unordered_map<uint32_t, std::unique_ptr<uint64_t[]>> pages_;
  uint32_t last_index_ = 0;
  uint64_t* last_ = nullptr;
};

}  // namespace rerace::traces::detail
