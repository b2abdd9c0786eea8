// replay/engine/src/python_environment.cc: finding the real-code engine's package and
// interpreters, and the environment its process starts with (python_environment.h).
#include "python_environment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/text.h"

#ifndef RERACE_PYTHON_DIR
#define RERACE_PYTHON_DIR ""
#endif
#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace rerace::replay::detail {

std::string FindExecutable(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0 ? exe : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string f = (d.empty() ? "." : d) + "/" + exe;
    struct stat st {};
    if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

std::vector<std::string> BuildTreePythons() {
  std::vector<std::string> out;
  const std::string root = RERACE_PY_ROOT;
  std::error_code ec;
  if (root.empty() || PythonEngineDir() != RERACE_PYTHON_DIR) return out;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::filesystem::path py = e.path() / "bin" / "python";
    if (access(py.c_str(), X_OK) != 0) continue;
    out.push_back(detail::ShownPath(py.string()));
  }
  // As --engine auto tries them: venv312 (CPython 3.12, the H200's interpreter) first.
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    const bool a312 = a.find("/venv312/") != std::string::npos;
    const bool b312 = b.find("/venv312/") != std::string::npos;
    return a312 != b312 ? a312 : a < b;
  });
  return out;
}

std::vector<std::string> UserPythonPath() {
  std::vector<std::string> out;
  const char* pp = std::getenv("PYTHONPATH");
  if (pp == nullptr) return out;
  std::stringstream in(pp);
  for (std::string e; std::getline(in, e, ':');)
    if (!e.empty()) out.push_back(e);
  return out;
}

std::vector<std::string> EngineEnvironment(const std::string& pythonpath) {
  static const char* const kOwn[] = {"PYTHONPATH", "PYTHONSAFEPATH", "PYTHONHASHSEED",
                                     "PYTHONDONTWRITEBYTECODE", "PYTHONSTARTUP"};
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    const bool own = std::any_of(std::begin(kOwn), std::end(kOwn), [&](const char* k) {
      const std::string_view key(k);
      return v.size() > key.size() && v.substr(0, key.size()) == key && v[key.size()] == '=';
    });
    if (!own) out.emplace_back(v);
  }
  out.push_back("PYTHONPATH=" + pythonpath);
  out.push_back("PYTHONSAFEPATH=1");
  out.push_back("PYTHONHASHSEED=0");
  out.push_back("PYTHONDONTWRITEBYTECODE=1");
  return out;
}

}  // namespace rerace::replay::detail

namespace rerace::replay {

std::string PythonEngineDir() {
  if (const char* d = std::getenv("RERACE_PYTHONPATH"); d != nullptr && *d != '\0') return d;
  // Installed (PREFIX/bin/rerace beside PREFIX/share/rerace/python) before the source tree the
  // binary was built from: an installed rerace never runs a source tree's engine.
  const std::string built = RERACE_PYTHON_DIR;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string installed;
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    installed = dir + "/../share/rerace/python";
    if (access((installed + "/rerace_real").c_str(), R_OK) == 0) return installed;
  }
  if (!built.empty() && access((built + "/rerace_real").c_str(), R_OK) == 0) return built;
  return installed.empty() ? built : installed;
}

}  // namespace rerace::replay
