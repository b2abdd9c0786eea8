// rerace/base/result.h: the vocabulary every component shares for errors at its boundaries.
//
// `Result<T>` carries either a value or an `Error` (a one-line message with its context and
// the exit code the command line should end with). It is `[[nodiscard]]`: a boundary call
// whose result is dropped is a compile-time warning, and in CI an error.
//
//   Result<Trace> r = traces::ReadTrace(path);
//   if (!r) { std::cerr << r.error().message << '\n'; return r.error().exit_code; }
//   Trace& t = *r;
//
// Header only, no dependencies: `sim` and `traces` both use it and depend on nothing else of
// ours. Safe to use from any thread; a Result is a plain value.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace rerace {

// Exit codes of every rerace command (the house style fixes them; sysexits.h values).
enum ExitCode : int {
  kExitOk = 0,          // nothing found / the fix holds
  kExitFound = 1,       // a race or failure was found / the fix fails
  kExitInconclusive = 3,  // check: no counterexample, but the search was not exhausted (its
                          // budget stopped it, or --bound 0 cannot preempt): not a "holds"
  kExitUsage = 64,      // wrong flags or arguments
  kExitDataError = 65,  // bad input data: a corrupt trace, a bad schedule file
  kExitNoInput = 66,    // an input file does not exist or cannot be opened
  kExitUnavailable = 69,  // the environment lacks what is needed (no Triton for --python-exe)
  kExitInternal = 70,   // a bug in rerace, and nothing else
  kExitIoError = 74,    // an output file cannot be written
  kExitConfig = 78,     // a configuration error (--python-exe is not a Python that runs)
};

struct Error {
  std::string message;  // one line: what, where, what was expected
  int exit_code = kExitDataError;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // REQUIRES: !ok().
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

// An error found deep inside a run, where no Result can carry it (a fiber, a callback), with
// the exit code the command ends with; the command line reports it as it reports an Error
// (kExitInternal: as a bug in rerace).
class ExitError : public std::runtime_error {
 public:
  explicit ExitError(const std::string& message, int exit_code = kExitInternal)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// An always-on assertion for broken invariants (a bug in rerace, never a user error): prints
// the condition, the location and a message carrying the values involved, then aborts.
[[noreturn]] inline void AssertFail(const char* cond, const char* file, int line,
                                    const std::string& msg) {
  std::fprintf(stderr, "rerace: internal error at %s:%d: %s failed%s%s\n", file, line, cond,
               msg.empty() ? "" : ": ", msg.c_str());
  std::abort();
}

}  // namespace rerace

#define RERACE_ASSERT(cond, msg)                                              \
  do {                                                                        \
    if (!(cond)) ::rerace::AssertFail(#cond, __FILE__, __LINE__, (msg));      \
  } while (0)
