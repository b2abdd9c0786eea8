#include "fixtures.h"

#include <capnp/message.h>
#include <capnp/serialize-packed.h>
#include <kj/io.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "rerace/traces/format.h"
#include "rerace/traces/writer.h"
#include "trace.capnp.h"

namespace rerace::traces::testing {

namespace {

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string TempPath(const char* tag) {
  return "/tmp/rerace-fixture-" + std::to_string(getpid()) + "-" + tag + ".rrt";
}

// The recording id of the fixture written with `tag`: fixed, so that the fixtures are the same
// bytes each time, and different per tag.
uint64_t FixtureId(const char* tag) {
  uint64_t id = 0x5eed0000u;
  for (const char* c = tag; *c != '\0'; ++c) id = id * 31 + static_cast<uint8_t>(*c);
  return id;
}

// Writes a trace through the real writer; `body` adds what it wants.
template <typename F>
std::vector<uint8_t> Write(const char* tag, F&& body, bool finish = true) {
  const std::string path = TempPath(tag);
  Header h;
  h.recorder_version = "fixture";
  h.host = "test";
  h.pid = 42;
  h.gpus = {{0, "GPU zero", "GPU-0", 1u << 30}};
  h.clock_pairs = {{0, 100, 200}};
  h.recording_id = FixtureId(tag);
  auto w = TraceWriter::Create(path, h);
  if (!w) return {};
  body(**w);
  if (finish) (void)(*w)->Finish({});
  else (void)(*w)->Flush();
  w->reset();
  auto bytes = Slurp(path);
  std::remove(path.c_str());
  return bytes;
}

void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Appends a frame of `kind` around `payload`.
void AppendFrame(std::vector<uint8_t>& file, uint8_t kind, const std::vector<uint8_t>& payload) {
  uint8_t h[kFrameHeaderBytes] = {};
  PutLe32(h, static_cast<uint32_t>(payload.size()));
  h[4] = kind;
  PutLe32(h + 8, Crc32c(payload.data(), payload.size()));
  file.insert(file.end(), h, h + sizeof h);
  file.insert(file.end(), payload.begin(), payload.end());
}

std::vector<uint8_t> PackWords(const std::vector<capnp::word>& words) {
  kj::VectorOutputStream out;
  kj::ArrayPtr<const capnp::word> seg(words.data(), words.size());
  kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segs(&seg, 1);
  capnp::writePackedMessage(out, segs);
  auto a = out.getArray();
  return std::vector<uint8_t>(a.begin(), a.end());
}

capnp::word Word(uint64_t v) {
  capnp::word w;
  std::memcpy(&w, &v, sizeof v);
  return w;
}

// The bytes up to (not including) the first chunk frame: preamble and header frame.
std::vector<uint8_t> HeaderOnly() {
  auto full = Write("hdr", [](TraceWriter&) {}, false);
  return full;
}

void OneThreadOneLaunch(TraceWriter& w) {
  const uint32_t t = w.AddThread(7, "main");
  LaunchShape sh;
  sh.kernel = w.String("k");
  const uint32_t s = w.Shape(sh);
  w.AppendLaunch(t, 1000, s, 1);
  w.AppendActivity(t, 1100, 1, 5000, 6000);
}

}  // namespace

std::vector<uint8_t> SmallTrace() {
  return Write("small", [](TraceWriter& w) {
    const uint32_t t0 = w.AddThread(100, "MainThread");
    const uint32_t t1 = w.AddThread(101, "worker");
    LaunchShape sh;
    sh.kernel = w.String("l2norm_fwd_kernel");
    sh.stream = 3;
    sh.grid[0] = 128;
    sh.block[0] = 256;
    sh.shared_bytes = 1024;
    const uint32_t s = w.Shape(sh);
    w.AppendLaunch(t0, 1000, s, 10);
    w.AppendActivity(t0, 1010, 10, 50000, 51000);
    Event sync;
    sync.kind = EventKind::kSync;
    sync.thread = t1;
    sync.cpu_ns = 1200;
    sync.sync = SyncKind::kStreamWaitEvent;
    sync.stream = 3;
    sync.handle = 77;
    w.Append(sync);
    (void)w.Flush();
    Event mem;
    mem.kind = EventKind::kMemOp;
    mem.thread = t1;
    mem.cpu_ns = 1300;
    mem.mem = MemKind::kDtoH;
    mem.bytes = 4096;
    mem.correlation = 11;
    w.Append(mem);
    TunerEvent te;
    te.tuner = 0xabc;
    te.tuner_class = w.String("triton.runtime.autotuner.Autotuner");
    te.kernel = w.String("l2norm_fwd_kernel");
    te.kind = TunerKind::kCallBegin;
    te.key = "(4096,)";
    te.configs = {"BLOCK_N: 64", "BLOCK_N: 128"};
    te.arg_names = {"x_ptr", "y_ptr", "N"};
    te.restore_value = {1};
    w.AppendTuner(t1, 1400, te);
    TunerEvent be = te;
    be.kind = TunerKind::kBenchEnd;
    be.configs.clear();
    be.arg_names.clear();
    be.restore_value.clear();
    be.config = 1;
    be.timings_ms = {0.02, 0.019, 0.021};
    be.repetitions = 100;
    w.AppendTuner(t1, 1450, be);
    TunerEvent err = be;
    err.kind = TunerKind::kError;
    err.error_type = "KeyError";
    err.error_message = "'y_ptr'";
    err.error_where = "triton/runtime/autotuner.py:74 _post_hook";
    w.AppendTuner(t1, 1460, err);
    Event lock;
    lock.kind = EventKind::kLock;
    lock.thread = t0;
    lock.cpu_ns = 1500;
    lock.lock = LockKind::kRelease;
    lock.handle = 0x55;
    lock.text = w.String("autotune_lock");
    w.Append(lock);
    Event nvtx;
    nvtx.kind = EventKind::kNvtx;
    nvtx.thread = t0;
    nvtx.cpu_ns = 1600;
    nvtx.nvtx = NvtxKind::kRangePush;
    nvtx.text = w.String("forward");
    nvtx.handle = 9;
    w.Append(nvtx);
    w.RenameThread(t1, "ThreadPoolExecutor-0_1");
  });
}

std::vector<Fixture> MakeFixtures() {
  std::vector<Fixture> out;
  const std::vector<uint8_t> good = Write("good", OneThreadOneLaunch);

  {
    auto b = good;
    b[0] = 'X';
    out.push_back({"bad-magic.rrt", b, "byte 0: bad magic"});
  }
  {
    auto b = good;
    PutLe32(b.data() + 8, kFormatVersion + 1);
    out.push_back({"newer-version.rrt", b,
                   "trace format version 3; this rerace reads versions 1 to 2 (upgrade rerace"});
  }
  {
    // The header of one recording with the chunks and footer of another (issue 27).
    const std::vector<uint8_t> a = Write("splice-a", OneThreadOneLaunch);
    const std::vector<uint8_t> b = Write("splice-b", OneThreadOneLaunch);
    auto header_end = [](const std::vector<uint8_t>& f) {
      return kPreambleBytes + kFrameHeaderBytes +
             (f[16] | f[17] << 8 | f[18] << 16 | static_cast<uint32_t>(f[19]) << 24);
    };
    std::vector<uint8_t> spliced(a.begin(), a.begin() + static_cast<long>(header_end(a)));
    spliced.insert(spliced.end(), b.begin() + static_cast<long>(header_end(b)), b.end());
    out.push_back({"spliced.rrt", spliced, "the frames come from two recordings (a splice?)"});
  }
  {
    auto b = good;
    PutLe32(b.data() + 8, 0);
    out.push_back({"older-version.rrt", b, "trace format version 0; this rerace reads versions 1 to 2"});
  }
  out.push_back({"dangling-thread.rrt", Write("dangling", [](TraceWriter& w) {
                   w.AddThread(1, "only");
                   LaunchShape sh;
                   sh.kernel = w.String("k");
                   w.AppendLaunch(5, 10, w.Shape(sh), 1);
                 }),
                 "event 0 names thread 5; expected a declared thread (< 1)"});
  out.push_back({"dangling-string.rrt", Write("dstring", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   Event n;
                   n.kind = EventKind::kNvtx;
                   n.thread = t;
                   n.text = 99;
                   w.Append(n);
                 }),
                 "event 0's NVTX message names string 99"});
  out.push_back({"activity-without-launch.rrt", Write("orphan", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   w.AppendActivity(t, 10, 4242, 1, 2);
                 }),
                 "kernel activity for correlation id 4242, which no earlier launch has"});
  out.push_back({"duplicate-correlation.rrt", Write("dupcorr", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   LaunchShape sh;
                   sh.kernel = w.String("k");
                   const uint32_t s = w.Shape(sh);
                   w.AppendLaunch(t, 10, s, 3);
                   w.AppendLaunch(t, 20, s, 3);
                 }),
                 "correlation id 3 is used by an earlier launch"});
  out.push_back({"zero-grid.rrt", Write("zerogrid", [](TraceWriter& w) {
                   w.AddThread(1, "only");
                   LaunchShape sh;
                   sh.kernel = w.String("k");
                   sh.grid[1] = 0;
                   w.Shape(sh);
                 }),
                 "launch shape 0 has a zero grid or block dimension"});
  out.push_back({"bad-restore-index.rrt", Write("rv", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   TunerEvent te;
                   te.tuner_class = w.String("c");
                   te.kernel = w.String("k");
                   te.arg_names = {"x"};
                   te.restore_value = {3};
                   w.AppendTuner(t, 1, te);
                 }),
                 "restore_value index 3 is out of range of 1 arguments"});
  {
    auto b = good;
    b[b.size() - 20] ^= 0x40;  // inside the footer payload
    out.push_back({"crc-mismatch.rrt", b, "CRC-32C mismatch"});
  }
  {
    auto b = good;
    b.push_back(0);
    b.push_back(1);
    out.push_back({"data-after-footer.rrt", b, "2 bytes after the footer; expected the end of file"});
  }
  {
    auto b = HeaderOnly();
    b.resize(b.size() - 3);
    out.push_back({"cut-in-header.rrt", b, "the file ends inside its header frame"});
  }
  {
    // A footer that miscounts the events.
    auto b = HeaderOnly();
    auto body = Write("fc", OneThreadOneLaunch, false);
    b = body;
    capnp::MallocMessageBuilder msg;
    auto f = msg.initRoot<schema::Footer>();
    f.setEventCount(7);
    f.setComplete(true);
    kj::VectorOutputStream os;
    capnp::writePackedMessage(os, msg);
    auto a = os.getArray();
    AppendFrame(b, 3, std::vector<uint8_t>(a.begin(), a.end()));
    out.push_back({"footer-miscount.rrt", b, "footer counts 7 events; the chunks hold 2"});
  }
  {
    // Oversized list: a Chunk whose events pointer claims 2^29-1 words of elements in a
    // two-word message.
    std::vector<capnp::word> words;
    // root: struct pointer, offset 0, data 2 words, 7 pointers
    words.push_back(Word(0x0007000200000000ull));
    words.push_back(Word(0));  // firstSeq
    words.push_back(Word(0));  // baseCpuNs
    for (int i = 0; i < 7; ++i) {
      // pointer 3 (events): list pointer, composite (7), huge word count.
      words.push_back(Word(i == 3 ? ((0x1FFFFFFFull << 35) | (7ull << 32) | 1) : 0));
    }
    auto b = HeaderOnly();
    AppendFrame(b, 2, PackWords(words));
    out.push_back({"oversized-list.rrt", b, "Cap'n Proto could not read it"});
  }
  {
    // Aliased pointers: 3000 strings that all point at one 16000-byte text. Reading them would
    // touch 3000 x 2000 words from a frame of 43 KB; the reader's memory bound refuses (and
    // Cap'n Proto's traversal limit would, a little later).
    const uint32_t n = 3000;
    const uint32_t text_words = 2000;
    std::vector<capnp::word> words;
    words.push_back(Word(0x0007000200000000ull));  // root struct: 2 data, 7 pointers
    words.push_back(Word(0));
    words.push_back(Word(0));
    // pointer 0 (strings): list of pointers (size 6) with n elements, right after the root.
    // Its offset counts words from the end of the pointer itself.
    words.push_back(Word((static_cast<uint64_t>(n) << 35) | (6ull << 32) | ((6ull << 2) | 1)));
    for (int i = 1; i < 7; ++i) words.push_back(Word(0));
    const size_t list_at = words.size();
    const size_t text_at = list_at + n;
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t off = static_cast<int64_t>(text_at) - static_cast<int64_t>(list_at + i + 1);
      const uint64_t bytes = text_words * 8;
      words.push_back(Word((bytes << 35) | (2ull << 32) | (static_cast<uint64_t>(off) << 2 & 0xFFFFFFFCull) | 1));
    }
    for (uint32_t i = 0; i < text_words; ++i) words.push_back(Word(i + 1 == text_words ? 0x0061616161616161ull : 0x6161616161616161ull));
    auto b = HeaderOnly();
    AppendFrame(b, 2, PackWords(words));
    out.push_back({"aliased-pointers.rrt", b, "would build more than"});
  }
  {
    // Amplification: a chunk whose strings list is 200,000 null pointers (an eighth of a byte
    // each once packed) and one text of 2,000 incompressible bytes that raises Cap'n Proto's
    // traversal limit enough to let them through. Before the reader counted what it builds,
    // the 5 KB frame became 200,000 std::strings (6.4 MB).
    const uint32_t n = 200'000;
    const uint32_t text_bytes = 2000;
    std::vector<capnp::word> words;
    words.push_back(Word(0x0007000200000000ull));  // root struct: 2 data, 7 pointers
    words.push_back(Word(0));
    words.push_back(Word(0));
    words.push_back(Word((static_cast<uint64_t>(n + 1) << 35) | (6ull << 32) | ((6ull << 2) | 1)));
    for (int i = 1; i < 7; ++i) words.push_back(Word(0));
    for (uint32_t i = 0; i < n; ++i) words.push_back(Word(0));
    // The last element points just past the list, at the text.
    words.push_back(Word((static_cast<uint64_t>(text_bytes) << 35) | (2ull << 32) | 1));
    uint64_t x = 0x243F6A8885A308D3ull;
    std::vector<uint8_t> text(text_bytes);
    for (uint32_t i = 0; i + 1 < text_bytes; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      text[i] = static_cast<uint8_t>(1 + (x >> 56) % 255);
    }
    for (uint32_t i = 0; i < text_bytes; i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, text.data() + i, 8);
      words.push_back(Word(w));
    }
    auto b = HeaderOnly();
    AppendFrame(b, 2, PackWords(words));
    out.push_back({"null-strings.rrt", b, "would build more than"});
  }
  {
    // A packed run that claims more words than its segment holds: Cap'n Proto logs this through
    // KJ (a stack dump on stderr) before it throws; the reader folds it into its one line.
    const std::vector<uint8_t> payload = {0x10, 0x01,  // segment table: 1 segment of 1 word
                                          0xFF, 1, 2, 3, 4, 5, 6, 7, 8,  // a full word...
                                          0x02,  // ...then 2 raw words, past the segment's end
                                          1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8};
    auto b = HeaderOnly();
    AppendFrame(b, 2, payload);
    out.push_back({"packed-overrun.rrt", b, "did not end cleanly"});
  }
  {
    // Cap'n Proto's own log: frames 0-3 of a real recording (traces/samples/), one byte of
    // frame 3 flipped (xor 0x57) and its CRC recomputed. KJ logs "Packed input did not end
    // cleanly" with a stack dump on stderr while it unwinds; the reader must keep stderr to
    // its one line.
    auto b = Slurp(std::string(RERACE_SOURCE_DIR) + "/traces/samples/torch-two-threads-h200.rrt");
    constexpr size_t kFrame3 = 1596, kFrame4 = 10067, kFlip = 3623;
    if (b.size() > kFrame4) {
      b.resize(kFrame4);
      b[kFlip] ^= 0x57;
      const uint32_t len = static_cast<uint32_t>(kFrame4 - kFrame3 - kFrameHeaderBytes);
      PutLe32(b.data() + kFrame3 + 8, Crc32c(b.data() + kFrame3 + kFrameHeaderBytes, len));
    }
    out.push_back({"kj-log.rrt", b, "did not end cleanly on a segment boundary"});
  }
  {
    // Amplification spread over chunks: 600 chunks of 1,900 null strings each, every one within
    // its chunk's bound, together 36 MB of strings from a 25 KB file; the trace's bound refuses.
    auto b = HeaderOnly();
    const uint32_t n = 1900;
    std::vector<capnp::word> words;
    words.push_back(Word(0x0007000300000000ull));  // 3 data words: firstSeq, baseCpuNs, recordingId
    words.push_back(Word(0));
    words.push_back(Word(0));
    words.push_back(Word(FixtureId("hdr")));
    words.push_back(Word((static_cast<uint64_t>(n) << 35) | (6ull << 32) | ((6ull << 2) | 1)));
    for (int i = 1; i < 7; ++i) words.push_back(Word(0));
    for (uint32_t i = 0; i < n; ++i) words.push_back(Word(0));
    const auto payload = PackWords(words);
    for (int c = 0; c < 600; ++c) AppendFrame(b, 2, payload);
    out.push_back({"null-strings-many-chunks.rrt", b, "per byte of file"});
  }
  out.push_back({"nan-timing.rrt", Write("nan", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   TunerEvent te;
                   te.tuner_class = w.String("c");
                   te.kernel = w.String("k");
                   te.kind = TunerKind::kBenchEnd;
                   te.timings_ms = {0.02, std::nan(""), 0.03};
                   w.AppendTuner(t, 1, te);
                 }),
                 "benchmark timing nan ms; expected a finite number"});
  out.push_back({"endless-kernel.rrt", Write("endless", [](TraceWriter& w) {
                   const uint32_t t = w.AddThread(1, "only");
                   LaunchShape sh;
                   sh.kernel = w.String("k");
                   w.AppendLaunch(t, 10, w.Shape(sh), 1);
                   w.AppendActivity(t, 20, 1, 1000, ~0ull);
                 }),
                 "expected at most 3600000000000 ns (an hour)"});
  {
    auto b = HeaderOnly();
    AppendFrame(b, 9, {0, 0});
    out.push_back({"unknown-frame.rrt", b, "unknown frame kind 9"});
  }
  {
    auto b = HeaderOnly();
    std::vector<uint8_t> h(kFrameHeaderBytes, 0);
    PutLe32(h.data(), 0xF0000000u);
    h[4] = 2;
    b.insert(b.end(), h.begin(), h.end());
    out.push_back({"huge-frame.rrt", b, "payload of 4026531840 bytes; expected at most"});
  }
  return out;
}

}  // namespace rerace::traces::testing
