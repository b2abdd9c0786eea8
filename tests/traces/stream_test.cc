// TraceStream: the events chunk by chunk, with every check ReadTrace makes (issue 19).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace rerace::traces
