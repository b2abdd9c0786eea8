// traces/src/frames.cc: the trace file's layout as the parser reads it: the preamble (magic,
// format version), each frame's header and CRC-32C, and where a file cut short ends.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "parser.h"

namespace rerace::traces::detail {

const uint8_t* Parser::Fetch(uint64_t at, size_t n, std::vector<uint8_t>& buf) {
  if (fd_ < 0) return bytes_.data() + at;
  buf.resize(n);
  size_t have = 0;
  while (have < n) {
    const ssize_t got = ::pread(fd_, buf.data() + have, n - have, static_cast<off_t>(at + have));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw Bad{fmt::format("byte {}: read failed: {}", at + have, std::strerror(errno))};
    if (got == 0) return nullptr;
    have += static_cast<size_t>(got);
  }
  return buf.data();
}

FrameStatus Parser::NextFrame(Frame& f) {
  if (pos_ == size_) return FrameStatus::kEnd;
  const uint64_t at = pos_;
  if (size_ - pos_ < kFrameHeaderBytes) {
    return Cut(at, size_ - pos_, kFrameHeaderBytes);
  }
  const uint8_t* h = Fetch(pos_, kFrameHeaderBytes, head_buf_);
  if (h == nullptr) return Cut(at, 0, kFrameHeaderBytes);
  const uint32_t len = GetLe32(h);
  if (h[5] != 0 || h[6] != 0 || h[7] != 0) {
    throw Bad{fmt::format("frame {} at byte {}: reserved header bytes are not zero; not a "
                          "frame boundary (corrupt file?)",
                          frame_index_, at)};
  }
  if (len > kMaxFrameBytes) {
    throw Bad{fmt::format("frame {} at byte {}: payload of {} bytes; expected at most {} "
                          "(corrupt or hostile file)",
                          frame_index_, at, len, kMaxFrameBytes)};
  }
  if (size_ - pos_ - kFrameHeaderBytes < len) {
    return Cut(at, size_ - pos_, kFrameHeaderBytes + len);
  }
  f.offset = at;
  f.kind = h[4];
  const uint32_t crc = GetLe32(h + 8);
  const uint8_t* payload = Fetch(pos_ + kFrameHeaderBytes, len, frame_buf_);
  if (payload == nullptr) return Cut(at, kFrameHeaderBytes, kFrameHeaderBytes + len);
  f.payload = std::span<const uint8_t>(payload, len);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // Under the fuzzer a checksum would stop nearly every mutation at the door.
  const bool crc_ok = true;
  (void)crc;
#else
  const bool crc_ok = Crc32c(f.payload.data(), f.payload.size()) == crc;
#endif
  if (!crc_ok) {
    throw Bad{fmt::format("frame {} at byte {}: CRC-32C mismatch over {} payload bytes; the "
                          "frame is corrupt",
                          frame_index_, at, len)};
  }
  pos_ += kFrameHeaderBytes + len;
  ++frame_index_;
  return FrameStatus::kOk;
}

FrameStatus Parser::Cut(uint64_t at, uint64_t have, uint64_t need) {
  cut_offset_ = at;
  cut_have_ = have;
  cut_need_ = need;
  return FrameStatus::kCut;
}

void Parser::Preamble() {
  const uint8_t* pre = size_ < kMagic.size() ? nullptr : Fetch(0, std::min<uint64_t>(size_, kPreambleBytes), head_buf_);
  if (pre == nullptr || std::memcmp(pre, kMagic.data(), kMagic.size()) != 0) {
    throw Bad{"byte 0: bad magic; expected \"RRTRACE\\n\" (not a rerace trace)"};
  }
  if (size_ < kPreambleBytes) {
    throw Bad{fmt::format("byte {}: the file ends inside its preamble; expected {} bytes",
                          size_, kPreambleBytes)};
  }
  const uint32_t version = GetLe32(pre + 8);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    throw Bad{fmt::format("byte 8: trace format version {}; this rerace reads versions {} to {} "
                          "({} rerace to read it)",
                          version, kOldestFormatVersion, kFormatVersion,
                          version > kFormatVersion ? "upgrade" : "use an older")};
  }
  version_ = version;
  if (GetLe32(pre + 12) != 0) throw Bad{"byte 12: reserved preamble word is not 0"};
  pos_ = kPreambleBytes;
}

}  // namespace rerace::traces::detail
