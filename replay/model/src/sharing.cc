// replay/model/src/sharing.cc: what tuner objects share, from the probe's identity records.
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rerace/replay/model/program.h"

namespace rerace::replay {

namespace {

// "0x7f2d12abd8c0" -> the number; 0 when it is not a token.
uint64_t Token(const nlohmann::json& j) {
  if (!j.is_string()) return 0;
  const std::string& s = j.get_ref<const std::string&>();
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str() + 2, &end, 16);
  return end != nullptr && *end == '\0' ? static_cast<uint64_t>(v) : 0;
}

const nlohmann::json* Member(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(name);
  return it == j.end() ? nullptr : &*it;
}

}  // namespace

void ReadSharing(Program& p) {
  p.cache_home.clear();
  p.hooks_home.clear();
  // The tuners in the order of their first call: the first holder of a cache dict is its home.
  std::vector<uint64_t> order;
  std::set<uint64_t> seen;
  for (const TunerCall& c : p.calls)
    if (seen.insert(c.tuner).second) order.push_back(c.tuner);
  bool all = !order.empty();
  std::map<uint64_t, uint64_t> cache_holder;  // cache dict token -> first tuner holding it
  for (uint64_t tuner : order) {
    auto it = p.tuner_meta.find(tuner);
    if (it == p.tuner_meta.end()) {
      all = false;
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    const nlohmann::json* id = Member(j, "identity");
    if (id == nullptr || !id->is_object()) {
      all = false;
      continue;
    }
    if (const nlohmann::json* fields = Member(*id, "fields")) {
      if (const nlohmann::json* cache = Member(*fields, "cache")) {
        if (const uint64_t t = Token(*cache)) {
          auto [home, fresh] = cache_holder.try_emplace(t, tuner);
          if (!fresh) p.cache_home[tuner] = home->second;
        }
      }
    }
    // The hooks that touch restore_copies: the post-hook reads and resets it, the pre-hook
    // fills it; the post-hook's tuner decides (the pre-hook's when there is no post-hook).
    const nlohmann::json* hooks = Member(*id, "hooks");
    uint64_t owner = 0;
    for (const char* name : {"post_hook", "pre_hook"}) {
      const nlohmann::json* h = hooks ? Member(*hooks, name) : nullptr;
      const nlohmann::json* t = h ? Member(*h, "tuner") : nullptr;
      if (t != nullptr && (owner = Token(*t)) != 0) break;
    }
    if (owner != 0 && owner != tuner) p.hooks_home[tuner] = owner;
  }
  p.identity_recorded = all;
}

std::vector<std::string> SharingLines(const Program& p) {
  std::map<uint64_t, std::string> kernel;
  for (const TunerCall& c : p.calls) kernel.try_emplace(c.tuner, c.kernel);
  auto name = [&](uint64_t t) {
    auto it = kernel.find(t);
    return it == kernel.end() ? fmt::format("tuner {:#x} (no recorded call)", t)
                              : fmt::format("Autotuner({}) {:#x}", it->second, t);
  };
  std::vector<std::string> out;
  for (const auto* rel : {&p.cache_home, &p.hooks_home}) {
    std::map<uint64_t, std::vector<uint64_t>> groups;
    for (const auto& [tuner, home] : *rel) groups[home].push_back(tuner);
    for (const auto& [home, members] : groups) {
      if (rel == &p.cache_home)
        out.push_back(fmt::format("{} tuner objects share the cache dict of {}", members.size() + 1,
                                  name(home)));
      else
        out.push_back(fmt::format("the hooks of {} tuner objects write the restore_copies of {}",
                                  members.size() + kernel.count(home), name(home)));
    }
  }
  return out;
}

}  // namespace rerace::replay
