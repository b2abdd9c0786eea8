// tests/tools/truth_test.h: what the truth tests (truth_test.cc, truth_engine_test.cc,
// truth_show_test.cc) share: a scratch folder per test, and the venv's Python for the
// real-code engine's cases (they skip, saying why, without it).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::testing::truth {

inline std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/truth-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The venv's python, or "" (and `skip` says why).
inline std::string Python(std::string& skip) {
  const std::string exe = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(exe.c_str(), X_OK) != 0) {
    skip = exe + " is missing (tools/scripts/python-envs.sh makes it)";
    return "";
  }
  return exe;
}

}  // namespace rerace::testing::truth
