// replay/report/src/fuzz_report.cc: fuzz results as JSON and JUnit XML, and the report colouring
// (see rerace/replay/report/fuzz_report.h).
#include "rerace/replay/report/fuzz_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "rerace/base/utf8.h"
#include "rerace/replay/report/checked.h"
#include "rerace/replay/model/result.h"
#include "rerace/replay/report/report.h"

namespace rerace::replay {

namespace {

std::string XmlEscape(const std::string& raw) {
  const std::string s = ValidUtf8(raw);  // the report says encoding="UTF-8"
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

// A JUnit case is named by its patches' file names (its history kept across edits of them):
// each one's content hash is a property, one <property> line each.
std::string PatchProperties(const std::vector<std::pair<std::string, std::string>>& patches) {
  std::string out;
  for (const auto& [file, sha] : patches)
    out += fmt::format("        <property name=\"sha256 {}\" value=\"{}\"/>\n", XmlEscape(file), XmlEscape(sha));
  return out;
}

// Where a failure signature ("code at where") ranks by harm: docs/MODEL.md's order.
size_t HarmRank(const std::string& signature) {
  const std::string code = signature.substr(0, signature.find(' '));
  const auto& kinds = FailureKinds();
  return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), code) - kinds.begin());
}

}  // namespace

std::string FuzzTrace::Checked() const {
  std::vector<PatchId> ids;
  for (const auto& [file, sha] : patches) {
    PatchId p;
    p.name = file;
    p.sha256 = sha;
    ids.push_back(std::move(p));
  }
  return CheckedWords(fix, ids, false);
}

bool FailureBefore(const FuzzFailure& x, const FuzzFailure& y) {
  return std::make_pair(HarmRank(x.signature), x.signature) <
         std::make_pair(HarmRank(y.signature), y.signature);
}

std::string FuzzJson(const std::vector<FuzzTrace>& all, const std::string& shard) {
  // "rerace_fuzz": 1 stays for `rerace merge` of older shards' files; the keys are the same
  // whatever ran, null where a trace lacks one (docs/JSON.md).
  std::string out = JsonHeader("fuzz") +
                    fmt::format("\"rerace_fuzz\":1,\"shard\":{},\"traces\":[", JsonOrNull(shard));
  for (size_t i = 0; i < all.size(); ++i) {
    const FuzzTrace& t = all[i];
    // The python engine runs no model: "engine" says which ran, "patches" what it loaded.
    std::string patches;
    for (const auto& [file, sha] : t.patches)
      patches += fmt::format("{}{{\"file\":{},\"sha256\":\"{}\"}}", patches.empty() ? "" : ",",
                             JsonString(file), sha);
    out += fmt::format("{}{{\"trace\":{},\"fix\":{},\"patches\":[{}],\"engine\":{},\"model\":{},"
                       "\"strategy\":{},\"runs\":{},\"failing\":{},\"failures\":[",
                       i ? "," : "", JsonString(t.trace), JsonString(t.fix), patches, JsonString(t.engine),
                       t.engine == "python" ? "null" : JsonOrNull(t.model), JsonString(t.strategy),
                       t.runs, t.failing);
    for (size_t k = 0; k < t.failures.size(); ++k) {
      const FuzzFailure& f = t.failures[k];
      // "thread_name" null where no one thread failed (a deadlock is every thread's); a silent
      // failure raised nothing: "type" and "message" null.
      out += fmt::format("{}{{\"failure\":{},\"seed\":{},\"schedule\":\"{}\",\"schedule_file\":{},"
                         "\"thread_name\":{},\"type\":{},\"message\":{},\"words\":{},\"silent\":{},"
                         "\"first\":{}}}",
                         k ? "," : "", JsonString(f.signature), f.seed, f.schedule,
                         JsonOrNull(f.schedule_file), JsonOrNull(f.thread_name),
                         f.silent ? "null" : JsonString(f.type), f.silent ? "null" : JsonString(f.message),
                         JsonString(f.words), f.silent ? "true" : "false", f.first ? "true" : "false");
    }
    out += "],\"races\":" + (t.races_json.empty() ? std::string("null") : t.races_json);
    out += t.error.empty() ? std::string(",\"error\":null,\"exit_code\":null")
                           : fmt::format(",\"error\":{},\"exit_code\":{}", JsonString(t.error),
                                         t.error_code);
    // Last, after the keys older readers know (docs/JSON.md).
    out += fmt::format(",\"runs_in_one_process\":{},\"unconfirmed\":{}}}", t.in_process,
                       t.unconfirmed);
  }
  return out + "]}";
}

std::string FuzzJunit(const std::vector<FuzzTrace>& all, const std::string& program) {
  // One test case per trace and fix, and one more per distinct failure (with its seed and
  // schedule in the message), so that a CI page lists each failure on its own line.
  size_t tests = 0, failures = 0, errors = 0;
  double seconds = 0;
  std::string cases;
  for (const FuzzTrace& t : all) {
    const std::string cls = XmlEscape(t.trace);
    std::vector<PatchId> ids;
    for (const auto& [file, sha] : t.patches) ids.push_back({.path = file, .name = file, .sha256 = sha});
    const std::string checked = XmlEscape(CheckedNames(t.fix, ids, false));
    const std::string hashes = PatchProperties(t.patches);
    const std::string properties = hashes.empty() ? "" : "      <properties>\n" + hashes + "      </properties>\n";
    auto testcase = [&](const std::string& name, double time, const std::string& body) {
      const std::string inner = properties + body;
      return fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"{}", cls, name, time,
                         inner.empty() ? "/>\n" : ">\n" + inner + "    </testcase>\n");
    };
    ++tests;
    seconds += t.seconds;
    if (!t.error.empty()) {  // a trace that could not be fuzzed: an error, never a pass
      ++errors;
      cases += testcase(checked, t.seconds, fmt::format("      <error message=\"{}\"/>\n", XmlEscape(t.error)));
      continue;
    }
    if (!t.failures.empty()) ++failures;
    cases += testcase(fmt::format("{} ({} runs, {})", checked, t.runs, XmlEscape(t.strategy)), t.seconds,
                      t.failures.empty()
                          ? std::string()
                          : fmt::format("      <failure message=\"{} distinct failure(s) in {} of {} runs\"/>\n",
                                        t.failures.size(), t.failing, t.runs));
    for (const FuzzFailure& f : t.failures) {
      ++tests;
      ++failures;
      // The replay names the fix and engine; a patch's path and the Python are the run's.
      std::string replay = program + " replay " + t.trace;
      if (t.fix != "none") replay += " --fix '" + t.fix + "'";
      if (t.engine != "model") replay += " --engine " + t.engine;
      replay += f.schedule_file.empty() ? " --schedule '" + f.schedule + "'" : " --schedule " + f.schedule_file;
      if (!t.patches.empty()) replay += " (with this run's --patch and --python-exe)";
      const std::string msg = fmt::format(
          "{}{}: {}; seed {}; replay: {}", f.silent ? "silent corruption" : f.type + ": " + f.message,
          f.thread_name.empty() ? "" : " in thread " + f.thread_name, f.words, f.seed, replay);
      // Its time is its trace case's: 0 here, so that the cases add up to the suite's.
      cases += testcase(checked + ": " + XmlEscape(f.signature), 0,
                        fmt::format("      <failure message=\"{}\">{}</failure>\n", XmlEscape(msg), XmlEscape(msg)));
    }
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"rerace fuzz\" tests=\"{}\" failures=\"{}\"{} time=\"{:.3f}\">\n{}  </testsuite>\n</testsuites>\n",
                     tests, failures, errors ? fmt::format(" errors=\"{}\"", errors) : "", seconds, cases);
}

std::string CheckJunit(const std::string& trace, const std::string& checked,
                       const std::string& engine, const std::string& verdict,
                       const std::string& verdict_line, const std::string& report,
                       const std::vector<std::pair<std::string, std::string>>& patches,
                       double seconds) {
  std::string line = verdict_line;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  const std::string said = XmlEscape(line);
  std::string body;
  if (verdict == "fails")
    body = fmt::format("      <failure message=\"{}\">{}</failure>\n", said, XmlEscape(report));
  else
    body = fmt::format("{}      <system-out>{}\n{}</system-out>\n",
                       verdict == "inconclusive" ? fmt::format("      <skipped message=\"{}\"/>\n", said)
                                                 : std::string(),
                       said, XmlEscape(report));
  const std::string properties = PatchProperties(patches);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"rerace "
      "check\" tests=\"1\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n    <testcase classname=\"{}\" "
      "name=\"{}\" time=\"{:.3f}\">\n      <properties>\n        <property name=\"verdict\" value=\"{}\"/>\n"
      "        <property name=\"engine\" value=\"{}\"/>\n{}      </properties>\n{}    </testcase>\n"
      "  </testsuite>\n</testsuites>\n",
      verdict == "fails" ? 1 : 0, verdict == "inconclusive" ? 1 : 0, seconds, XmlEscape(trace),
      XmlEscape(checked), seconds, XmlEscape(verdict), XmlEscape(engine), properties, body);
}

std::string ColourReport(const std::string& report, bool colour) {
  if (!colour) return report;
  std::string out;
  size_t pos = 0;
  while (pos < report.size()) {
    size_t nl = report.find('\n', pos);
    if (nl == std::string::npos) nl = report.size();
    const std::string line = report.substr(pos, nl - pos);
    if (line.rfind("FAILED", 0) == 0 || line.find("FAILS") != std::string::npos)
      out += "\033[1;31m" + line + "\033[0m";
    else if (line.rfind("ok:", 0) == 0 || line.find(" holds ") != std::string::npos)
      out += "\033[1;32m" + line + "\033[0m";
    else if (line.rfind("warning:", 0) == 0 || line.rfind("also:", 0) == 0)
      out += "\033[33m" + line + "\033[0m";
    else
      out += line;
    if (nl < report.size()) out += '\n';
    pos = nl + 1;
  }
  return out;
}

}  // namespace rerace::replay
