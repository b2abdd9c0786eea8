// tools/rerace/output.h: output that is either all there or reported: stdout checked at exit,
// files written under a temporary name and renamed into place.
//
// NB: a write to a full device (or past RLIMIT_FSIZE) fails only when the buffer is flushed,
// often after the command has decided its exit code; FinishStdout() is where that is noticed.
// Must be called from the main thread.
#pragma once

#include <string>
#include <vector>

#include "rerace/base/result.h"

namespace rerace::tools {

// Flushes stdout; when anything written to it was lost, says so on stderr and returns 74,
// otherwise `code`.
int FinishStdout(int code);

// Writes `text` to `path` + ".tmp-PID", then renames it to `path`: a reader of `path` sees the
// old file or the whole new one, never a part. On failure the temporary file is removed and the
// error (exit 74) names `path`.
Result<void> WriteFileAtomically(const std::string& path, const std::string& text);

// File-name stems for the traces of one command, one per trace and all different: a/x.rrt and
// b/x.rrt are "x.1" and "x.2" (their positions), a trace whose stem is unique keeps it ("x").
std::vector<std::string> UniqueStems(const std::vector<std::string>& paths);

}  // namespace rerace::tools
