// replay/engine/src/python_fix.cc: a named fix for the real-code engine: its patch files under
// rerace_real/fixes/ (prewarm is the engine's own).
#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "rerace/replay/engine/replay.h"

namespace rerace::replay {

Result<void> UsePythonFix(const std::string& text, ReplayOptions& o) {
  const std::string dir = PythonEngineDir() + "/rerace_real/fixes/";
  std::vector<std::string> files;
  Fix fix;
  fix.name = text;
  size_t start = 0;
  for (;;) {
    const size_t plus = text.find('+', start);
    const std::string part = text.substr(start, plus == std::string::npos ? plus : plus - start);
    if (part == "prewarm") {
      fix.prewarm = true;
    } else if (part != "none" || text.find('+') != std::string::npos) {
      std::string file = part;
      std::replace(file.begin(), file.end(), '-', '_');
      const bool name_ok = !part.empty() && part.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
      if (!name_ok || access((dir + file + ".py").c_str(), R_OK) != 0) {
        std::string known = "none, prewarm";
        if (DIR* d = opendir(dir.c_str())) {
          std::vector<std::string> names;
          while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            if (n.size() > 3 && n.ends_with(".py") && n[0] != '_') {
              n.resize(n.size() - 3);
              std::replace(n.begin(), n.end(), '_', '-');
              names.push_back(n);
            }
          }
          closedir(d);
          std::sort(names.begin(), names.end());
          for (const auto& n : names) known += ", " + n;
        }
        return Error{fmt::format("--fix '{}': '{}' is not a fix the python engine has (known: {}; "
                                 "or give your own patch with --patch FILE)",
                                 text, part, known),
                     kExitUsage};
      }
      files.push_back(dir + file + ".py");
    }
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  o.fix = std::move(fix);
  o.patches.insert(o.patches.begin(), files.begin(), files.end());
  return {};
}

}  // namespace rerace::replay
