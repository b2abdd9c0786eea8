// replay/report/src/checked.cc: patch labels and file tags (see rerace/replay/report/checked.h).
#include "rerace/replay/report/checked.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace rerace::replay {

namespace {

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Block(std::array<uint32_t, 8>& h, const unsigned char* p) {
  std::array<uint32_t, 64> w{};
  for (size_t i = 0; i < 16; ++i)
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) | (uint32_t{p[4 * i + 2]} << 8) |
           uint32_t{p[4 * i + 3]};
  for (size_t i = 16; i < 64; ++i) {
    const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (size_t i = 0; i < 64; ++i) {
    const uint32_t t1 = k + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
    const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  const std::array<uint32_t, 8> add = {a, b, c, d, e, f, g, k};
  for (size_t i = 0; i < 8; ++i) h[i] += add[i];
}

bool FileChar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '.' || ch == '_' || ch == '-';
}

std::string FileSafe(const std::string& s) {
  std::string out;
  for (char ch : s) out += FileChar(ch) ? ch : '_';
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  for (; n >= 64; p += 64, n -= 64) Block(h, p);
  // The tail, a 1 bit, zeros, and the length in bits (big-endian) fill one or two blocks.
  std::array<unsigned char, 128> tail{};
  std::copy(p, p + n, tail.begin());
  tail[n] = 0x80;
  const size_t blocks = n + 9 > 64 ? 2 : 1;
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (size_t i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) Block(h, tail.data() + 64 * b);
  std::string out;
  for (uint32_t v : h) out += fmt::format("{:08x}", v);
  return out;
}

std::string PatchId::Words() const { return fmt::format("{} (sha256 {})", name, Short()); }

std::string PatchId::FileTag() const {
  const size_t dot = name.rfind('.');
  return FileSafe(dot == std::string::npos || dot == 0 ? name : name.substr(0, dot)) + "-" + Short();
}

PatchId IdentifyPatch(const std::string& path) {
  PatchId id;
  id.path = path;
  const size_t slash = path.rfind('/');
  id.name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::ifstream in(path, std::ios::binary);
  if (!in) return id;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.bad()) id.sha256 = Sha256Hex(bytes.str());
  return id;
}

std::vector<PatchId> IdentifyPatches(const std::vector<std::string>& paths) {
  std::vector<PatchId> out;
  for (const std::string& p : paths) out.push_back(IdentifyPatch(p));
  return out;
}

namespace {

std::string Checked(const std::string& fix, const std::vector<PatchId>& patches, bool quote,
                    bool hashes) {
  const std::string q = quote ? "'" : "";
  std::string out = fix == "none" && !patches.empty() ? "" : "fix " + q + fix + q;
  for (const PatchId& p : patches)
    out += (out.empty() ? "" : " + ") + ("patch " + (hashes ? p.Words() : p.name));
  return out;
}

}  // namespace

std::string CheckedWords(const std::string& fix, const std::vector<PatchId>& patches, bool quote) {
  return Checked(fix, patches, quote, true);
}

std::string CheckedNames(const std::string& fix, const std::vector<PatchId>& patches, bool quote) {
  return Checked(fix, patches, quote, false);
}

std::string CheckedFileTag(const std::string& fix, const std::vector<PatchId>& patches) {
  std::string out;
  if (fix != "none" || patches.empty()) {
    out = FileSafe(fix);
    if (out != fix || out.empty()) out += "-" + Sha256Hex(fix).substr(0, 8);
  }
  for (const PatchId& p : patches) out += (out.empty() ? "" : "_") + p.FileTag();
  return out;
}

}  // namespace rerace::replay
