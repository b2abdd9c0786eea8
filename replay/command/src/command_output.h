// replay/command/src/command_output.h: how a command ends (see rerace/replay/command/command.h's CommandOutput).
#pragma once

#include <string>
#include <utility>

#include "rerace/base/result.h"
#include "rerace/replay/command/command.h"

namespace rerace::replay::detail {

// The report so far, then `error` (its exit code).
inline CommandOutput Fail(std::string& out, Error error) {
  CommandOutput o;
  o.out = std::move(out);
  o.exit_code = error.exit_code;
  o.error = std::move(error);
  return o;
}

// Sends the report so far to options.report, when set.
inline void Flush(std::string& out, const CommandOptions& options) {
  if (!options.report || out.empty()) return;
  options.report(out);
  out.clear();
}

inline CommandOutput Done(std::string& out, int exit_code) {
  CommandOutput o;
  o.out = std::move(out);
  o.exit_code = exit_code;
  return o;
}

}  // namespace rerace::replay::detail
