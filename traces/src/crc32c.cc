// traces/src/crc32c.cc: CRC-32C (Castagnoli), table-driven, as in RFC 3720.
#include <array>

#include "rerace/traces/format.h"

namespace rerace::traces {
namespace {
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();


uint32_t Software(const uint8_t* p, size_t size, uint32_t crc) {
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// The SSE4.2 crc32 instruction computes the same CRC-32C, eight bytes at a time.
__attribute__((target("sse4.2"))) uint32_t Hardware(const uint8_t* p, size_t size, uint32_t crc) {
  uint64_t c = crc;
  while (size >= 8) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    size -= 8;
  }
  return Software(p, size, static_cast<uint32_t>(c));
}
#endif
}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  if (hw) return ~Hardware(p, size, ~crc);
#endif
  return ~Software(p, size, ~crc);
}

}  // namespace rerace::traces
