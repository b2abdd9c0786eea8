// TraceStream: the events chunk by chunk, with every check ReadTrace makes (issue 19); and
// ForEachChunk, the loop over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "rerace/traces/reader.h"

namespace rerace::traces {
namespace {

std::string Source(const std::string& rel) {
  const char* src = std::getenv("RERACE_SOURCE");
  return std::string(src ? src : ".") + "/" + rel;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(Source(dir)))
    if (e.path().extension() == ".rrt") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Streamed {
  std::vector<Event> events;
  std::vector<TunerEvent> tuners;  // in event order
  uint64_t chunks_seen = 0;
  size_t largest_chunk = 0;
};

Result<Streamed> StreamAll(const std::string& path, const ReadLimits& limits, Trace* meta) {
  auto s = TraceStream::Open(path, limits);
  if (!s) return s.error();
  Streamed out;
  std::vector<Event> ev;
  std::vector<TunerEvent> tu;
  for (;;) {
    auto more = s->Next(ev, tu);
    if (!more) return more.error();
    if (!*more) break;
    ++out.chunks_seen;
    out.largest_chunk = std::max(out.largest_chunk, ev.size());
    for (Event e : ev) {
      if (e.kind == EventKind::kTuner) {
        out.tuners.push_back(tu.at(e.tuner));
        e.tuner = static_cast<uint32_t>(out.tuners.size() - 1);
      }
      out.events.push_back(e);
    }
  }
  *meta = s->trace();
  return out;
}

// Every sample and every fixture: the same events, transitions and metadata as the whole
// read, or the same one-line error.
TEST(TraceStream, GivesWhatReadTraceGivesForEverySampleAndFixture) {
  std::vector<std::string> files = Files("traces/samples");
  const std::vector<std::string> fixtures = Files("tests/data");
  files.insert(files.end(), fixtures.begin(), fixtures.end());
  ASSERT_GE(files.size(), 30u);
  size_t errors = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto whole = ReadTrace(f);
    Trace meta;
    auto streamed = StreamAll(f, ReadLimits{}, &meta);
    ASSERT_EQ(whole.ok(), streamed.ok()) << (whole.ok() ? streamed.error().message : whole.error().message);
    if (!whole.ok()) {
      ++errors;
      EXPECT_EQ(streamed.error().message, whole.error().message);
      EXPECT_EQ(streamed.error().exit_code, whole.error().exit_code);
      continue;
    }
    EXPECT_TRUE(streamed->events == whole->events);
    EXPECT_TRUE(streamed->tuners == whole->tuner_events);
    EXPECT_EQ(meta.event_count, whole->events.size());
    EXPECT_EQ(whole->event_count, whole->events.size());
    EXPECT_TRUE(meta.events.empty());
    EXPECT_EQ(meta.header, whole->header);
    EXPECT_EQ(meta.strings, whole->strings);
    EXPECT_EQ(meta.shapes, whole->shapes);
    EXPECT_EQ(meta.threads, whole->threads);
    EXPECT_EQ(meta.footer, whole->footer);
    EXPECT_EQ(meta.has_footer, whole->has_footer);
    EXPECT_EQ(meta.truncated, whole->truncated);
    EXPECT_EQ(meta.truncation, whole->truncation);
    EXPECT_EQ(meta.chunks, whole->chunks);
    EXPECT_EQ(streamed->chunks_seen, whole->chunks);
  }
  EXPECT_GE(errors, 17u);  // the corrupt fixtures
}

// The memory bound counts what is held at once: the metadata and one chunk, not the trace.
TEST(TraceStream, HoldsOneChunkUnderTheMemoryLimit) {
  const std::string f = Source("traces/samples/native-call-local-h200.rrt");
  auto whole = ReadTrace(f);
  ASSERT_TRUE(whole.ok());
  ASSERT_GT(whole->chunks, 1u);
  // A limit the whole trace exceeds and the stream stays under.
  ReadLimits limits;
  limits.max_memory_bytes = whole->built_bytes / 2;
  auto refused = ReadTrace(f, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("the limit"), std::string::npos) << refused.error().message;
  Trace meta;
  auto streamed = StreamAll(f, limits, &meta);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_EQ(streamed->events.size(), whole->events.size());
  EXPECT_LE(meta.built_bytes, limits.max_memory_bytes);
  // A limit below one chunk's events stops the stream too, with the same message.
  limits.max_memory_bytes = streamed->largest_chunk * sizeof(Event) / 4;
  auto stopped = StreamAll(f, limits, &meta);
  ASSERT_FALSE(stopped.ok());
  EXPECT_NE(stopped.error().message.find("the limit; set RERACE_MAX_TRACE_MB"), std::string::npos)
      << stopped.error().message;
  EXPECT_EQ(stopped.error().exit_code, kExitDataError);
}

TEST(TraceStream, MissingFileIs66AndNotATraceIs65) {
  auto missing = TraceStream::Open("/nonexistent/x.rrt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().exit_code, kExitNoInput);
  auto dir = TraceStream::Open(Source("traces"));
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().exit_code, kExitNoInput);
  auto text = TraceStream::Open(Source("README.md"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().exit_code, kExitDataError);
}

std::string WriteFile(const std::string& name, std::span<const uint8_t> bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// What ForEachChunk handed its visitor: each chunk's sequence numbers, and the tuner
// transitions in event order.
struct Visits {
  std::vector<std::vector<uint64_t>> seqs;
  std::vector<TunerEvent> tuners;
  std::vector<uint64_t> chunks_read;  // so_far.chunks at each visit
};

Result<Trace> Visit(const std::string& path, Visits* v) {
  return ForEachChunk(path, [v](const Trace& so_far, const std::vector<Event>& events,
                                const std::vector<TunerEvent>& tuners) -> Result<void> {
    v->seqs.emplace_back();
    for (const Event& e : events) {
      v->seqs.back().push_back(e.seq);
      if (e.kind == EventKind::kTuner) v->tuners.push_back(tuners.at(e.tuner));
    }
    v->chunks_read.push_back(so_far.chunks);
    return {};
  });
}

// The small trace (two chunks: 3 events, then 6): each chunk once, in file order, and what the
// stream read once it ended.
TEST(ForEachChunk, VisitsEveryChunkInOrder) {
  const auto bytes = testing::SmallTrace();
  const std::string path = WriteFile("for-each-chunk.rrt", bytes);
  auto whole = ReadTrace(path);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  Visits v;
  auto read = Visit(path, &v);
  ASSERT_TRUE(read.ok()) << read.error().message;
  const std::vector<std::vector<uint64_t>> expect_seqs = {{0, 1, 2}, {3, 4, 5, 6, 7, 8}};
  EXPECT_EQ(v.seqs, expect_seqs);
  EXPECT_EQ(v.chunks_read, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(v.tuners == whole->tuner_events);
  EXPECT_FALSE(v.tuners.empty());
  EXPECT_TRUE(read->events.empty());
  EXPECT_EQ(read->chunks, 2u);
  EXPECT_EQ(read->event_count, 9u);
  EXPECT_EQ(read->threads, whole->threads);
  EXPECT_EQ(read->footer, whole->footer);
  EXPECT_FALSE(read->truncated);
  std::remove(path.c_str());
}

// A file cut inside its second chunk reads the first and says it is truncated, as ReadTrace
// does; one cut inside its header, a missing file and every corrupt fixture give the error the
// hand-written loop over TraceStream gives (StreamAll), which is ReadTrace's: message and code.
TEST(ForEachChunk, CutOrCorruptFileGivesTheStreamsError) {
  const auto bytes = testing::SmallTrace();
  auto frames = ListFrames(bytes, "small");
  ASSERT_TRUE(frames.ok());
  ASSERT_EQ(frames->size(), 4u);  // header, 2 chunks, footer
  const std::span<const uint8_t> all(bytes);
  const std::string in_chunk2 = WriteFile("cut-in-chunk2.rrt", all.first((*frames)[2].offset + 5));
  auto whole = ReadTrace(in_chunk2);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  Visits v;
  auto read = Visit(in_chunk2, &v);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(v.seqs, (std::vector<std::vector<uint64_t>>{{0, 1, 2}}));
  EXPECT_TRUE(read->truncated);
  EXPECT_EQ(read->truncation, whole->truncation);
  EXPECT_NE(read->truncation.find("truncated after 3 events"), std::string::npos) << read->truncation;
  std::remove(in_chunk2.c_str());

  std::vector<std::string> bad = Files("tests/data");
  bad.push_back(WriteFile("cut-in-header.rrt", all.first((*frames)[1].offset - 1)));
  bad.push_back("/nonexistent/x.rrt");
  size_t errors = 0;
  for (const std::string& f : bad) {
    SCOPED_TRACE(f);
    auto expected = ReadTrace(f);
    if (expected.ok()) continue;
    ++errors;
    Trace meta;
    auto looped = StreamAll(f, ReadLimits{}, &meta);
    ASSERT_FALSE(looped.ok());
    Visits seen;
    auto got = Visit(f, &seen);
    ASSERT_FALSE(got.ok()) << "read without error";
    EXPECT_EQ(got.error().message, looped.error().message);
    EXPECT_EQ(got.error().exit_code, looped.error().exit_code);
    EXPECT_EQ(got.error().message, expected.error().message);
    EXPECT_EQ(got.error().exit_code, expected.error().exit_code);
  }
  EXPECT_GE(errors, 19u);  // the corrupt fixtures, the cut header, the missing file
  std::remove(bad[bad.size() - 2].c_str());
}

// The visitor's error ends the read: no chunk after it is visited, and it is what returns.
TEST(ForEachChunk, VisitorsErrorStopsTheRead) {
  const std::string path = WriteFile("visitor-error.rrt", testing::SmallTrace());
  int visits = 0;
  auto read = ForEachChunk(path, [&](const Trace&, const std::vector<Event>&,
                                     const std::vector<TunerEvent>&) -> Result<void> {
    ++visits;
    return Error{"stop here", kExitInternal};
  });
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message, "stop here");
  EXPECT_EQ(read.error().exit_code, kExitInternal);
  EXPECT_EQ(visits, 1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rerace::traces
