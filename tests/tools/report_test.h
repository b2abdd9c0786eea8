// tests/tools/report_test.h: what the report tests (report_test.cc, report_hints_test.cc,
// report_engine_test.cc) share: a scratch folder per test, and reading a report's FAILED line.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>

namespace rerace::testing::report {

inline size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

inline std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/report-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// "FAILED: CODE in thread N (NAME) at step S" → CODE ("" when the report has no failure).
inline std::string FailedCode(const std::string& report) {
  static const std::regex re("(^|\n)FAILED: ([a-z-]+)");
  std::smatch m;
  return std::regex_search(report, m, re) ? m[2].str() : "";
}

// The thread name of the FAILED line, "" without one.
inline std::string FailedThread(const std::string& report) {
  static const std::regex re("(^|\n)FAILED: [a-z-]+ in thread [0-9]+ \\(([^)]*)\\)");
  std::smatch m;
  return std::regex_search(report, m, re) ? m[2].str() : "";
}

}  // namespace rerace::testing::report
