// rerace/base/wrap.h: report lines under a width with commands to copy kept whole, and --help
// with descriptions in their column.
#include "rerace/base/wrap.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace rerace {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string Prose(size_t words) {
  std::string s = "  verdict:";
  for (size_t i = 0; i < words; ++i) s += " word" + std::to_string(i % 13);
  return s;
}

TEST(Wrap, LongProseFitsTheWidthAndKeepsEveryWordInOrder) {
  const std::string line = Prose(60);
  ASSERT_GT(line.size(), 160u);
  const std::string wrapped = WrapReport(line + "\nshort line\n");
  const auto lines = Lines(wrapped);
  ASSERT_GE(lines.size(), 4u);
  for (const std::string& l : lines) EXPECT_LE(l.size(), kReportWidth) << l;
  EXPECT_EQ(lines[1].rfind("      word", 0), 0u) << "indented 4 more than its own 2";
  EXPECT_EQ(Words(wrapped), Words(line + "\nshort line\n"));
  EXPECT_EQ(lines.back(), "short line");
  EXPECT_EQ(wrapped.back(), '\n');
  EXPECT_EQ(WrapReport(wrapped), wrapped) << "wrapping twice changes nothing";
}

TEST(Wrap, ACommandToCopyIsNeverBroken) {
  const std::string command = "build/bin/rerace replay t.rrt --seed 3 --schedule rs1:" +
                              std::string(150, '7') + " --engine python";
  const std::string line = "replay it (add --save-schedule FILE to keep the schedule): " + command;
  const auto lines = Lines(WrapReport(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "replay it (add --save-schedule FILE to keep the schedule):");
  EXPECT_EQ(lines[1], "    " + command);
  // A command that a line starts with stays as it is, however long.
  const std::string alone = "rerace check t.rrt --fix lock-run --patch " + std::string(200, 'p') + ".py";
  EXPECT_EQ(WrapReport(alone), alone);
  // "rerace" in prose is not a command.
  const std::string prose = Prose(30) + " and rerace replay of it" + Prose(20);
  for (const std::string& l : Lines(WrapReport(prose))) EXPECT_LE(l.size(), kReportWidth) << l;
}

TEST(Wrap, JsonAndLongWordsStayWhole) {
  const std::string json = "{\"findings\":[" + std::string(400, ' ') + "]}";
  EXPECT_EQ(WrapReport(json), json);
  const std::string word(300, 'x');
  const auto lines = Lines(WrapReport("a " + word + " b"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "    " + word);
}

TEST(Wrap, ColourSequencesTakeNoColumns) {
  const std::string red = "\x1b[31m", off = "\x1b[0m";
  std::string line = red;
  line.append("FAILED:").append(off);
  while (line.size() < 150) line.append(" ").append(red).append("w").append(off);
  // 150 bytes, far fewer columns: nothing to wrap.
  EXPECT_EQ(WrapReport(line), line);
}

TEST(Wrap, HelpDescriptionsGoOnInTheirColumn) {
  const std::string opt = "  --fix TEXT                  " + Prose(20).substr(2);
  const auto lines = Lines(WrapHelp(opt, 80));
  ASSERT_GE(lines.size(), 2u);
  for (const std::string& l : lines) EXPECT_LE(l.size(), 80u) << l;
  const size_t column = opt.find("verdict:");
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].find_first_not_of(' '), column) << lines[i];
  }
  EXPECT_EQ(WrapHelp("Usage: rerace check", 80), "Usage: rerace check");
}

}  // namespace
}  // namespace rerace
