// tools/rerace/output.h: output that is either all there or reported: stdout checked at exit,
// files written through rerace/base/output_file.h (a regular file replaced whole, a device
// or FIFO written in place).
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

// Writes `text` to `path` as rerace/base/output_file.h says: a regular file through a temporary
// beside it and a rename (a reader sees the old file or the whole new one), anything else (a
// device, a FIFO, a symlink's target) in place. The error (exit 74) names `path`.
Result<void> WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace rerace::tools
