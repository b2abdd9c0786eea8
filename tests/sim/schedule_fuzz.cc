// libFuzzer harness over schedule lines (what `--schedule FILE` reads): parsing never crashes,
// errors are one line, and what parses encodes back to a line that parses to the same schedule.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rerace/sim/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rerace::sim::Schedule;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto s = Schedule::Parse(line, "fuzz");
  if (!s.ok()) {
    if (s.error().message.find('\n') != std::string::npos) std::abort();  // one line, always
    return 0;
  }
  auto again = Schedule::Parse(s->Encode(), "fuzz");
  if (!again.ok() || !(*again == *s)) std::abort();
  if (s->steps() <= 4096) (void)s->Expand();  // Expand is for small schedules (tests, shrink)
  return 0;
}
