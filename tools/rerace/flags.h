// tools/rerace/flags.h: the validators every subcommand's numeric and structured flags use, so
// that a flag means what it says or is refused (exit 64) naming what was expected.
//
// CLI11 converts "-1" to an unsigned 2^64-1, saturates "18446744073709551616", and accepts
// " 1" or "+1"; a duration parsed with stod accepts "nan" and "inf". Each validator here checks
// the text before CLI11 converts it:
//
//   sub->add_option("--runs", runs, "Runs per trace")->check(flags::Count(1, flags::kMaxRuns));
//
// The validators carry no description, so --help (and docs/CLI.md) do not change with them.
// Safe to call from any thread; no state.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "rerace/base/result.h"

namespace rerace::tools::flags {

inline constexpr uint64_t kMaxRuns = 1'000'000'000'000ull;   // a campaign, not a wrap-around
inline constexpr uint64_t kMaxSteps = 1'000'000'000'000ull;  // one run's step bound
inline constexpr double kMinSeconds = 1.0;                    // --time: at least one second
inline constexpr double kMaxSeconds = 30.0 * 24 * 3600;        // and at most 30 days

// A whole number written in decimal digits only (no sign, space or exponent), in [min, max].
CLI::Validator Count(uint64_t min, uint64_t max);
// A duration: a finite positive number and a unit s, ms, m, min or h ("90s", "10m", "1h"; a
// bare number is seconds), from kMinSeconds to kMaxSeconds.
CLI::Validator Duration();
// "K/N" with 0 <= K < N (digits only), "auto" or "auto/N".
CLI::Validator ShardSpec();
// A file name that is not empty ('' names no file: refused rather than ignored).
CLI::Validator FileName();

// The checks behind the validators, for code that parses the same text itself.
// "" when `text` is a valid Count(min, max); otherwise what was expected.
std::string CheckCount(const std::string& text, uint64_t min, uint64_t max);
Result<double> ParseDuration(const std::string& text);

}  // namespace rerace::tools::flags
