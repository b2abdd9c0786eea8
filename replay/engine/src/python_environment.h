// replay/engine/src/python_environment.h: where the real-code engine's Python side comes from
// (private to replay): the interpreter to exec, the build tree's environments named when it has
// no Triton, the user's PYTHONPATH, and the environment the engine runs with. The package's
// own folder is PythonEngineDir (replay.h).
#pragma once

#include <string>
#include <vector>

namespace rerace::replay::detail {

// The file exec would run for `exe` (a path, or a name looked up on PATH), or "".
std::string FindExecutable(const std::string& exe);

// The Python environments of the build tree rerace runs from (RERACE_PY_ROOT: build/py), as
// paths relative to the current directory where they lie below it; none when rerace runs
// installed.
std::vector<std::string> BuildTreePythons();

// The user's PYTHONPATH without empty entries (an empty entry means the current directory,
// which the engine never searches).
std::vector<std::string> UserPythonPath();

// The environment the engine runs with: this process's, with the engine's own settings.
// Made before fork: another job's thread may hold the allocator's locks when this one forks,
// so the child only calls what is async-signal-safe.
std::vector<std::string> EngineEnvironment(const std::string& pythonpath);

}  // namespace rerace::replay::detail
