// libFuzzer harness over the trace reader: no input may crash, hang or exhaust memory.
// Built by `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); seed corpus in
// tests/fuzz/reader/.
#include <cstddef>
#include <cstdint>
#include <span>

#include "rerace/traces/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = rerace::traces::ParseTrace(std::span<const uint8_t>(data, size), "fuzz");
  if (t.ok()) {
    // Touch what consumers index, so a reference the reader failed to check shows up here.
    for (const auto& e : t->events) {
      if (e.kind == rerace::traces::EventKind::kLaunch) (void)t->Str(t->shapes.at(e.shape).kernel).size();
      (void)t->threads.at(e.thread);
      if (e.kind == rerace::traces::EventKind::kTuner) (void)t->tuner_events.at(e.tuner);
    }
  }
  return 0;
}
