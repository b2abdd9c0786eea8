// replay/model/src/models/registry.cc: the table of tuner models and how one is chosen.
#include "rerace/replay/model/registry.h"

#include <nlohmann/json.hpp>

#include "rerace/replay/model/result.h"

namespace rerace::replay::detail {

// Each model's file defines its accessor.
const TunerModel& Triton32();
const TunerModel& Triton34();
const TunerModel& Triton36();
const TunerModel& Triton38();
const TunerModel& Triton39();
const TunerModel& Fla();
const TunerModel& Native();

namespace {

bool IsTriton(const std::string& cls) { return cls.rfind("triton.", 0) == 0; }
bool IsFla(const std::string& cls) {
  return cls.find("CachedAutotuner") != std::string::npos || cls.rfind("fla.", 0) == 0;
}
bool IsNative(const std::string& cls) { return cls.rfind("rerace.kernels.", 0) == 0; }

struct Entry {
  const char* name;                          // --model NAME, and the reports' "model NAME"
  const TunerModel& (*model)();
  bool (*stands_for)(const std::string& cls);  // the recorded tuner classes it models
  // Triton's Autotuner: the recorded Triton versions (a prefix) it is chosen for; "" for the
  // default (3.6, and recordings that do not say). Null: chosen by its class alone.
  const char* triton;
};

// Order matters for `auto`: class-chosen rows first, in order; then the version rows.
constexpr Entry kModels[] = {
    {.name = "triton", .model = Triton36, .stands_for = IsTriton, .triton = ""},
    {.name = "triton-3.2", .model = Triton32, .stands_for = IsTriton, .triton = "3.2."},
    {.name = "triton-3.4", .model = Triton34, .stands_for = IsTriton, .triton = "3.4."},
    {.name = "triton-3.8", .model = Triton38, .stands_for = IsTriton, .triton = "3.8."},
    {.name = "triton-3.9", .model = Triton39, .stands_for = IsTriton, .triton = "3.9."},
    {.name = "fla", .model = Fla, .stands_for = IsFla, .triton = nullptr},
    {.name = "native", .model = Native, .stands_for = IsNative, .triton = nullptr},
};

}  // namespace

const TunerModel* FindModel(const std::string& name) {
  for (const Entry& e : kModels)
    if (name == e.name) return &e.model();
  return nullptr;
}

std::string RecordedTriton(const Program& p) {
  for (const auto& [tuner, text] : p.tuner_meta) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("triton") && j["triton"].is_string())
      return j["triton"].get<std::string>();
  }
  return {};
}

std::string AutoModel(const Program& p) {
  for (const std::string& c : p.tuner_classes)
    for (const Entry& e : kModels)
      if (e.triton == nullptr && e.stands_for(c)) return e.name;
  const std::string version = RecordedTriton(p);
  const char* chosen = "triton";
  for (const Entry& e : kModels)
    if (e.triton != nullptr && e.triton[0] != '\0' && version.rfind(e.triton, 0) == 0)
      chosen = e.name;
  return chosen;
}

}  // namespace rerace::replay::detail

namespace rerace::replay {

std::string RecordedTritonVersion(const Program& p) { return detail::RecordedTriton(p); }

const std::vector<std::string>& ModelNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const detail::Entry& e : detail::kModels) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

std::optional<std::string> UnknownTunerClass(const Program& p) {
  for (const std::string& c : p.tuner_classes) {
    bool known = false;
    for (const detail::Entry& e : detail::kModels) known |= e.stands_for(c);
    if (!known) return c;
  }
  return std::nullopt;
}

}  // namespace rerace::replay
