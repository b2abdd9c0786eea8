// replay/report/include/rerace/replay/report/fuzz_report.h: the fuzz campaign's results as data, and their
// renderings as `rerace fuzz` and `rerace merge` print them: the JSON that `fuzz --json` writes
// and `merge` reads, the JUnit XML for CI pages (fuzz's and check's), and the terminal colouring
// of reports.
//
// One result per trace and what was checked (a FuzzTrace), its distinct failures (FuzzFailure)
// listed by harm (docs/MODEL.md), then by signature:
//
//   std::vector<FuzzTrace> all = ...;   // from RunFuzzCommand or MergeFuzzResults
//   std::string json = FuzzJson(all, "0/4");
//   std::string xml = FuzzJunit(all);
//
// Plain functions of their arguments: safe to call from any thread; no seeded randomness.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rerace::replay {

// One distinct failure of a fuzz campaign, as `fuzz --json` writes it and `rerace merge` reads it.
struct FuzzFailure {
  std::string signature;  // "code at where"
  uint64_t seed = 0;
  std::string schedule;   // rs1:...
  std::string schedule_file;
  std::string thread_name;
  std::string type, message, words;
  bool silent = false;
  bool first = true;      // the first failure of its seed's run
  std::string note;       // text only: when its schedule fails first with something else
};

// One trace's fuzzing result under one fix (or set of patches), engine and strategy.
struct FuzzTrace {
  std::string trace, fix, model, strategy;
  std::string engine = "model";  // "model" or "python"
  // The --patch files run (python engine), named as the text names them, each with the
  // SHA-256 of its content: (file, sha256).
  std::vector<std::pair<std::string, std::string>> patches;
  // "fix 'none'", "patch my_lock.py (sha256 1a2b3c4d)": what was checked, as reports name it.
  std::string Checked() const;
  uint64_t runs = 0, failing = 0;
  // Of `runs`, those made in the engine's long-lived process (CampaignOptions::in_process),
  // and of their failing runs, those a fresh fork did not confirm (the fork's run counted).
  uint64_t in_process = 0, unconfirmed = 0;
  std::vector<FuzzFailure> failures;
  std::string races_json;  // with --races: the campaign's distinct races, a JSON array
  // A trace that could not be fuzzed (a corrupt trace among others): the one-line error and
  // its exit code; the other traces' results are kept. "" and 0 otherwise.
  std::string error;
  int error_code = 0;
  // The wall time of this trace's runs (with their shrinking and saving), in seconds: JUnit's
  // `time` only. The JSON leaves it out, its bytes being the same for the same inputs and
  // seeds; so a merged result has 0.
  double seconds = 0;
};

// The order fuzz and merge list failures in: by harm (docs/MODEL.md), then by signature.
bool FailureBefore(const FuzzFailure& x, const FuzzFailure& y);
// {"rerace_fuzz":1,"shard":...,"traces":[...]}: `shard` is "" (unsharded), "K/N", or
// "merged 0/2 1/2".
std::string FuzzJson(const std::vector<FuzzTrace>& all, const std::string& shard);
// One test case per trace and fix, one more per distinct failure. A case is named by the fix
// and the patches' file names ("patch my_lock.py (40 runs, random)"), never by a content hash,
// so that its history on a CI page survives an edit of the patch; each patch's SHA-256 is a
// property of the case ("sha256 my_lock.py"). Each case has a `time`: the trace's `seconds`
// for its case, 0 for its failures'. NB: `time` is the one thing in the file that differs
// between two runs of the same inputs and seeds.
// `program`: the command as invoked (CommandOptions::program), shell-quoted, which each failure's
// replay names.
std::string FuzzJunit(const std::vector<FuzzTrace>& all, const std::string& program = "rerace");

// `rerace check --junit`: one test case, named after `checked` ("fix 'lock-run'", "patch
// my_lock.py": CheckedNames, without content hashes, as FuzzJunit's), of suite "rerace check",
// class `trace`, with `patches` (file, sha256) as properties and `seconds`, the command's wall
// time, as its `time`. `verdict` is "holds"
// (the case passes; `verdict_line`, which says what the search covered, is its output),
// "fails" (a failure: `verdict_line` its message, `report` its text) or
// "inconclusive" (skipped, with `verdict_line` as the reason: neither a pass nor a failure).
// `engine` ("model", "python") is a property of the case. `report` holds what the check said:
// its notes on the engine (the Python, Triton and patches that ran), the lines printed under
// the verdict (the interpreter the verdict assumes, the patch's reach), then a failure's
// report. It is the text of a failure; otherwise the case's output, after the verdict line.
std::string CheckJunit(const std::string& trace, const std::string& checked,
                       const std::string& engine, const std::string& verdict,
                       const std::string& verdict_line, const std::string& report,
                       const std::vector<std::pair<std::string, std::string>>& patches,
                       double seconds);

// `report` with its verdict lines coloured for a terminal (FAILED/FAILS red, ok/holds green,
// warnings yellow) when `colour`; unchanged otherwise.
std::string ColourReport(const std::string& report, bool colour);

}  // namespace rerace::replay
