// replay/model/src/sync_order.cc: rerace:sync marks -> an order between recorded tuner calls.
#include "sync_order.h"

#include <algorithm>
#include <cstdlib>

namespace rerace::replay::detail {

namespace {

constexpr std::string_view kPrefix = "rerace:sync ";

// The primitives rerace_probe/sync.py marks, and how a release pairs with its acquire.
enum class Pairing { kLast, kSeq, kUnknown };

Pairing PairingOf(std::string_view what) {
  if (what == "Queue" || what == "Barrier") return Pairing::kSeq;
  if (what == "Event" || what == "Thread.start" || what == "Thread.end" || what == "Future" ||
      what == "Executor.submit")
    return Pairing::kLast;
  return Pairing::kUnknown;
}

// "0x7f3a12" or decimal -> the number (0 when it is neither).
uint64_t Number(std::string_view v) {
  const std::string s(v);
  char* end = nullptr;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const unsigned long long n = std::strtoull(s.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
  return end != nullptr && *end == '\0' && !s.empty() ? static_cast<uint64_t>(n) : 0;
}

}  // namespace

bool SyncOrder::IsMark(std::string_view text) { return text.substr(0, kPrefix.size()) == kPrefix; }

void SyncOrder::Merge(std::vector<uint32_t>& into, const std::vector<uint32_t>& from) {
  for (uint32_t c : from)
    if (std::find(into.begin(), into.end(), c) == into.end()) into.push_back(c);
}

std::vector<uint32_t> SyncOrder::Carried(uint32_t t) const {
  std::vector<uint32_t> out = pending_[t];
  if (last_call_[t] >= 0) Merge(out, {static_cast<uint32_t>(last_call_[t])});
  return out;
}

void SyncOrder::Mark(uint32_t t, std::string_view text, bool in_call) {
  if (t >= last_call_.size() || !IsMark(text)) return;
  recorded_ = true;
  std::string_view kind, what, obj, seq;
  text.remove_prefix(kPrefix.size());
  while (!text.empty()) {
    const size_t sp = text.find(' ');
    const std::string_view field = text.substr(0, sp);
    text = sp == std::string_view::npos ? std::string_view() : text.substr(sp + 1);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view k = field.substr(0, eq), v = field.substr(eq + 1);
    if (k == "kind") kind = v;
    else if (k == "what") what = v;
    else if (k == "obj") obj = v;
    else if (k == "seq") seq = v;
  }
  if (kind == "overflow") {
    overflowed_ = true;
    return;
  }
  if (in_call) return;
  const Pairing pairing = PairingOf(what);
  if (pairing == Pairing::kUnknown || (kind != "release" && kind != "acquire")) {
    ++unknown_;
    return;
  }
  const std::string w(what);
  const uint64_t o = Number(obj), n = Number(seq);
  if (kind == "release") {
    if (pairing == Pairing::kLast) last_[{w, o}] = Carried(t);
    else Merge(by_seq_[{w, o, n}], Carried(t));
    return;
  }
  const std::vector<uint32_t>* from = nullptr;
  if (pairing == Pairing::kLast) {
    auto it = last_.find({w, o});
    if (it != last_.end()) from = &it->second;
  } else {
    auto it = by_seq_.find({w, o, n});
    if (it != by_seq_.end()) from = &it->second;
  }
  if (from == nullptr || from->empty()) return;
  std::vector<uint32_t> add;
  for (uint32_t c : *from)
    if (last_call_[t] < 0 || c != static_cast<uint32_t>(last_call_[t])) add.push_back(c);
  if (add.empty()) return;
  Merge(pending_[t], add);
  ++orders_[w];
}

std::vector<uint32_t> SyncOrder::CallBegins(uint32_t t, uint32_t call) {
  if (t >= last_call_.size()) return {};
  std::vector<uint32_t> out = std::move(pending_[t]);
  pending_[t].clear();
  std::sort(out.begin(), out.end());
  last_call_[t] = call;
  return out;
}

}  // namespace rerace::replay::detail
