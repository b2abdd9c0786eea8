#include "rerace/sim/schedule.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace rerace::sim {
namespace {

Schedule Of(std::initializer_list<ThreadId> steps) {
  Schedule s;
  for (ThreadId t : steps) s.Append(t);
  return s;
}

TEST(Schedule, EncodesRunLength) {
  EXPECT_EQ(Of({0, 0, 0, 1, 1, 0, 2}).Encode(), "rs1:0*3.1*2.0.2");
  EXPECT_EQ(Of({}).Encode(), "rs1:");
  EXPECT_EQ(Of({0, 1, 0}).switches(), 2u);
}

TEST(Schedule, RoundTripsThroughItsLine) {
  const Schedule s = Of({3, 3, 1, 0, 0, 0, 0, 2, 1, 1});
  auto back = Schedule::Parse(s.Encode());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->steps(), 10u);
  EXPECT_EQ(back->Expand(), (std::vector<ThreadId>{3, 3, 1, 0, 0, 0, 0, 2, 1, 1}));
}

TEST(Schedule, TheLongestScheduleEncodesToALineThatParses) {
  auto s = Schedule::Parse("rs1:9*1099511627775.9", "test");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->steps(), uint64_t{1} << 40);
  ASSERT_EQ(s->runs().size(), 1u);
  auto again = Schedule::Parse(s->Encode(), "test");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, *s);
}

TEST(Schedule, ParseMergesAdjacentRunsOfOneThread) {
  auto s = Schedule::Parse("rs1:1*2.1.0");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->runs().size(), 2u);
  EXPECT_EQ(s->steps(), 4u);
}

struct BadLine {
  const char* line;
  const char* expected;  // a fragment of the error message
};

TEST(Schedule, ParseRejectsBadLines) {
  const BadLine cases[] = {
      {"0*3.1", "not a rerace schedule"},
      {"rs9:0*3", "schedule format 'rs9' is not supported: this rerace reads 'rs1'"},
      {"rs1:x", "byte 4: expected a thread id"},
      {"rs1:0*0", "expected a positive repeat count"},
      {"rs1:0*", "expected a positive repeat count"},
      {"rs1:0,1", "expected '.' between steps, found ','"},
      {"rs1:0.", "the schedule ends with '.'"},
      {"rs1:99999999999", "expected a thread id"},
      // At most 2^40 steps in all: one count, or runs of one thread that merge (the fuzzer's
      // find: two counts under the bound merged into one the line form could not say again).
      {"rs1:0*1099511627777", "byte 6: the schedule runs past 1099511627776 steps"},
      {"rs1:9*1099511627775.9*2", "byte 22: the schedule runs past 1099511627776 steps"},
      {"rs1:9*1099511627776.3", "byte 20: the schedule runs past 1099511627776 steps"},
      // Control characters are named, not printed: the error stays one line.
      {"rs1:0\n1", "expected '.' between steps, found byte 0x0a"},
      {"r\ns1:0", "schedule format 'r\\x0as1' is not supported"},
  };
  for (const BadLine& c : cases) {
    SCOPED_TRACE(c.line);
    auto s = Schedule::Parse(c.line, "test");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find(c.expected), std::string::npos) << s.error().message;
    EXPECT_EQ(s.error().message.rfind("test: ", 0), 0u);
    EXPECT_EQ(s.error().exit_code, 65);
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos) << s.error().message;
  }
}

TEST(Schedule, SavesAndLoadsWithMetadata) {
  const std::string path = ::testing::TempDir() + "/schedule_test.sched";
  const Schedule s = Of({0, 1, 1, 2});
  ASSERT_TRUE(s.Save(path, {{"seed", "7"}, {"strategy", "random"}}).ok());
  std::ifstream f(path);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("# seed: 7\n"), std::string::npos);
  auto back = Schedule::Load(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
  std::remove(path.c_str());
}

TEST(Schedule, LoadNamesTheMissingFile) {
  auto s = Schedule::Load("/nonexistent/dir/x.sched");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/nonexistent/dir/x.sched: cannot open"), std::string::npos);
  EXPECT_EQ(s.error().exit_code, 66);
}

// A device or a folder never reaches getline (/dev/zero would be read for gigabytes).
TEST(Schedule, LoadRefusesWhatIsNotARegularFile) {
  for (const char* path : {"/dev/zero", "/dev/urandom", "/tmp"}) {
    SCOPED_TRACE(path);
    auto s = Schedule::Load(path);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().exit_code, 66);
    EXPECT_NE(s.error().message.find(std::string(path) + ": not a regular file"), std::string::npos)
        << s.error().message;
  }
}

TEST(Schedule, LoadNamesTheLineOfABadSchedule) {
  const std::string path = ::testing::TempDir() + "/bad.sched";
  {
    std::ofstream f(path);
    f << "# rerace schedule\n\nrs1:0*q\n";
  }
  auto s = Schedule::Load(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(path + ":3: byte 6"), std::string::npos) << s.error().message;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rerace::sim
