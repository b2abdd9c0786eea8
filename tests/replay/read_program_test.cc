// ReadProgram builds the programs BuildProgram builds from ReadTrace, and says what was read.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "rerace/replay/program.h"
#include "rerace/traces/reader.h"
#include "samples.h"

namespace rerace::replay {
namespace {

// Every field of the programs, as text.
std::string Describe(const Program& p) {
  std::string s = p.source + (p.truncated ? " truncated" : "") + " span " +
                  std::to_string(p.recorded_span_ns) + "\n";
  for (const std::string& c : p.tuner_classes) s += "class " + c + "\n";
  for (const auto& [id, m] : p.tuner_meta) s += "meta " + std::to_string(id) + " " + m + "\n";
  for (const TunerCall& c : p.calls) {
    s += "call " + std::to_string(c.tuner) + " " + c.tuner_class + " " + c.kernel + " " + c.key +
         " launch " + std::to_string(c.launch_ns) + " dev " + std::to_string(c.device) + " stream " +
         std::to_string(c.stream) + " configs " + std::to_string(c.configs.size()) + " args " +
         std::to_string(c.arg_names.size()) + " rv " + std::to_string(c.restore_value.size()) +
         " rz " + std::to_string(c.reset_to_zero.size()) + " bench";
    for (size_t i = 0; i < c.bench_ns.size(); ++i)
      s += " " + std::to_string(c.bench_ns[i]) + "x" + std::to_string(c.bench_reps[i]);
    s += "\n";
  }
  for (const ThreadProgram& t : p.threads) {
    s += "thread " + std::to_string(t.thread) + " " + t.name + "\n";
    for (const Op& o : t.ops)
      s += " op " + std::to_string(static_cast<int>(o.kind)) + " " + std::to_string(o.seq) + " " +
           std::to_string(o.call) + " " + std::to_string(o.device) + " " + std::to_string(o.stream) +
           " " + std::to_string(o.duration) + " " + o.kernel + " " + std::to_string(o.lock) + " " +
           o.lock_name + " " + std::to_string(static_cast<int>(o.sync)) + "\n";
    for (const RecordedTransition& r : t.transitions)
      s += " tr " + std::to_string(static_cast<int>(r.kind)) + " " + std::to_string(r.config) + " " +
           std::to_string(r.seq) + " " + std::to_string(static_cast<int>(r.field)) + "\n";
    for (const RecordedFailure& f : t.failures)
      s += " failure " + std::to_string(f.seq) + " " + f.type + " " + f.message + " " + f.where + "\n";
  }
  return s;
}

TEST(ReadProgram, BuildsWhatBuildProgramBuildsFromTheWholeTrace) {
  std::vector<std::string> files;
  for (const char* dir : {"traces/samples", "tests/data"})
    for (const auto& e : std::filesystem::directory_iterator(testing::SamplePath("../../") + dir))
      if (e.path().extension() == ".rrt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 30u);
  size_t built = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto whole = traces::ReadTrace(f);
    Result<Program> expected = whole.ok() ? BuildProgram(*whole, f) : Result<Program>(whole.error());
    traces::Trace read;
    auto streamed = ReadProgram(f, &read);
    ASSERT_EQ(streamed.ok(), expected.ok()) << (expected.ok() ? streamed.error().message : expected.error().message);
    if (!expected.ok()) {
      EXPECT_EQ(streamed.error().exit_code, expected.error().exit_code);
      continue;
    }
    ++built;
    EXPECT_EQ(Describe(*streamed), Describe(*expected));
    EXPECT_EQ(read.event_count, whole->events.size());
    EXPECT_EQ(read.truncated, whole->truncated);
    EXPECT_EQ(read.truncation, whole->truncation);
  }
  EXPECT_GE(built, 13u);
}

}  // namespace
}  // namespace rerace::replay
