// libFuzzer harness over fix descriptions (`--fix`): parsing never crashes, and a fix that
// parses says something: it is "none" itself or changes the model (a description that means
// nothing must be refused, not accepted as none).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "rerace/replay/model/fix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto f = rerace::replay::ParseFix(text);
  if (!f.ok()) {
    if (f.error().exit_code != 64 || f.error().message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  if (!f->ChangesModel() && text != "none") std::abort();
  for (const auto& [region, lock] : f->locks)
    if (lock.empty()) std::abort();  // a lock without a name is no lock
  return 0;
}
