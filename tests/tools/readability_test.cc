// tests/tools/readability_test.cc: outputs a person reads (issue 49, readability): `show` lists
// the tuners that were called and counts the rest in one line; `export` names events short and
// gives each kernel's full name once; JUnit case names survive an edit of a patch, and every
// case has a time.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "rerace/replay/report/checked.h"
#include "rerace/replay/report/fuzz_report.h"
#include "rerace/replay/report/timeline.h"
#include "rerace/testing/cli_run.h"
#include "rerace/testing/rewrite.h"

#ifndef RERACE_PY_ROOT
#define RERACE_PY_ROOT ""
#endif

namespace {

using rerace::testing::CliRun;
using rerace::testing::RunRerace;
using rerace::testing::SourcePath;

std::string Sample(const std::string& name) { return SourcePath("traces/samples/" + name); }

std::string Dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/readability-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

size_t Count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + part.size())) ++n;
  return n;
}

size_t Lines(const std::string& s) { return Count(s, "\n"); }

// Each <testcase ...> element's opening tag, in order.
std::vector<std::string> Testcases(const std::string& xml) {
  std::vector<std::string> out;
  for (size_t p = xml.find("<testcase "); p != std::string::npos; p = xml.find("<testcase ", p + 1))
    out.push_back(xml.substr(p, xml.find('>', p) - p + 1));
  return out;
}

// The name="..." of each test case.
std::vector<std::string> CaseNames(const std::string& xml) {
  std::vector<std::string> out;
  static const std::regex name(R"re( name="([^"]*)")re");
  for (const std::string& tag : Testcases(xml)) {
    std::smatch m;
    out.push_back(std::regex_search(tag, m, name) ? m[1].str() : "(no name) " + tag);
  }
  return out;
}

// Every test case, and the suite, have a time="seconds".
void ExpectTimes(const std::string& xml) {
  static const std::regex time(R"( time="[0-9]+\.[0-9]{3}")");
  const std::vector<std::string> cases = Testcases(xml);
  EXPECT_FALSE(cases.empty()) << xml;
  for (const std::string& tag : cases) EXPECT_TRUE(std::regex_search(tag, time)) << tag;
  const std::string suite = xml.substr(xml.find("<testsuite "), xml.find('>', xml.find("<testsuite ")) - xml.find("<testsuite "));
  EXPECT_TRUE(std::regex_search(suite, time)) << suite;
}

// --- show ---------------------------------------------------------------------------------

// The FLA recording: FLA's import makes an Autotuner per autotuned kernel, and the step called
// one. show lists that one with FLA's version from the probe's metadata, and counts the others
// in one line; --all lists them all.
TEST(ReadabilityShow, TunersNeverCalledAreOneLineAndAllListsThem) {
  const std::string t = Sample("restore-fla-none-h200.rrt");
  const CliRun brief = RunRerace("show " + t);
  const CliRun all = RunRerace("show --all " + t);
  ASSERT_EQ(brief.code, 0) << brief.out;
  ASSERT_EQ(all.code, 0) << all.out;
  const size_t uncalled = Count(all.out, ": 0 calls, 0 config benchmarks");
  ASSERT_GT(uncalled, 100u) << all.out;
  EXPECT_EQ(Count(brief.out, ": 0 calls, 0 config benchmarks"), 0u) << brief.out;
  EXPECT_TRUE(Has(brief.out, "\n  and " + std::to_string(uncalled) +
                                 " other tuners with no call recorded (created, never called; --all lists them)\n"))
      << brief.out;
  EXPECT_FALSE(Has(all.out, "other tuners with no call recorded")) << all.out;
  EXPECT_EQ(Lines(brief.out) + uncalled - 1, Lines(all.out));
  EXPECT_LT(Lines(brief.out), 100u) << brief.out;
  // The tuner called: FLA's CachedAutotuner, with the versions the probe recorded.
  for (const std::string& out : {brief.out, all.out}) {
    EXPECT_TRUE(Has(out, " axpy_inplace_kernel (fla.ops.utils.cache.CachedAutotuner): 8 calls, 92 config benchmarks"))
        << out;
    EXPECT_TRUE(Has(out, "\n      FLA 0.6.0, Triton 3.6.0\n")) << out;
  }
}

// A Triton recording has no tuner that was never called: show says nothing more, --all
// changes nothing, and no FLA line.
TEST(ReadabilityShow, TritonRecordingsAreListedWhole) {
  const std::string t = Sample("triton-none-h200.rrt");
  const CliRun brief = RunRerace("show " + t);
  ASSERT_EQ(brief.code, 0) << brief.out;
  EXPECT_EQ(RunRerace("show --all " + t).out, brief.out);
  EXPECT_FALSE(Has(brief.out, "other tuner")) << brief.out;
  EXPECT_FALSE(Has(brief.out, "FLA")) << brief.out;
  EXPECT_TRUE(Has(brief.out, " l2norm_fwd_kernel (")) << brief.out;
}

// A recording whose probe metadata has no FLA version (fla null): the tuner's FLA module is
// said, and that the version is not recorded; no version is made up.
TEST(ReadabilityShow, AnFlaTunerWithoutARecordedVersionSaysSo) {
  const std::string out = Dir("show-noversion") + "/fla.rrt";
  rerace::testing::RewriteSample("restore-fla-none-h200.rrt", out, [](std::string d) {
    const std::string v = "\"fla\":\"0.6.0\"";
    if (const size_t p = d.find(v); p != std::string::npos) d.replace(p, v.size(), "\"fla\":null");
    return d;
  });
  const CliRun r = RunRerace("show " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "\n      FLA: fla.ops.utils.cache, its version not recorded\n")) << r.out;
  EXPECT_FALSE(Has(r.out, "FLA 0.6.0")) << r.out;
}

// --- export -------------------------------------------------------------------------------

// Kernel events are named short (a C++ kernel's demangled name is kilobytes long); each
// kernel's full name is in the metadata table once and on the first event that names it, not
// on every event.
TEST(ReadabilityExport, EventNamesAreShortAndEachFullNameIsGivenOnce) {
  const std::string dir = Dir("export");
  for (const char* trace : {"torch-two-threads-h200.rrt", "triton-none-h200.rrt", "native-none-h200.rrt"}) {
    SCOPED_TRACE(trace);
    const std::string out = dir + "/" + trace + ".json";
    const CliRun r = RunRerace("export " + Sample(trace) + " -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string text = Slurp(out);
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << text.substr(0, 500);
    ASSERT_TRUE(j["traceEvents"].is_array());
    size_t kernel_events = 0;
    std::map<int, size_t> first_names;  // kernel → events that carry its full name
    for (const auto& e : j["traceEvents"]) {
      const std::string name = e.value("name", std::string());
      EXPECT_LE(name.size(), 200u) << name.substr(0, 300);
      const std::string cat = e.value("cat", std::string());
      if (cat != "kernel" && cat != "launch") continue;
      ++kernel_events;
      ASSERT_TRUE(e["args"].contains("kernel")) << e.dump();
      EXPECT_FALSE(e["args"].contains("mangled")) << e.dump();
      if (e["args"].contains("full_name")) ++first_names[e["args"]["kernel"].get<int>()];
    }
    ASSERT_GT(kernel_events, 0u);
    const auto& kernels = j["metadata"]["kernels"];
    ASSERT_TRUE(kernels.is_array()) << j["metadata"].dump();
    ASSERT_FALSE(kernels.empty());
    bool some_long = false;
    for (size_t k = 0; k < kernels.size(); ++k) {
      const auto& row = kernels[k];
      EXPECT_EQ(row["kernel"].get<size_t>(), k);
      const auto name = row["name"].get<std::string>();
      const auto full = row["full_name"].get<std::string>();
      const auto mangled = row["mangled"].get<std::string>();
      EXPECT_LE(name.size(), 200u) << name;
      EXPECT_EQ(name, rerace::replay::ShortKernelName(mangled));
      EXPECT_EQ(full, rerace::replay::Demangle(mangled));
      // A full name that differs from the short one: on its first event, and nowhere else.
      if (full != name) {
        some_long |= full.size() > 200;
        EXPECT_EQ(first_names[static_cast<int>(k)], 1u) << full;
        EXPECT_EQ(Count(text, nlohmann::json(full).dump()), 2u) << full;  // that event, the table
      } else {
        EXPECT_EQ(first_names[static_cast<int>(k)], 0u) << full;
      }
    }
    if (std::string(trace) == "torch-two-threads-h200.rrt") {
      EXPECT_TRUE(some_long);  // at:: kernels' full names are kilobytes
    }
  }
}

// --- JUnit --------------------------------------------------------------------------------

rerace::replay::FuzzTrace FuzzedWithPatch(const std::string& sha, double seconds) {
  rerace::replay::FuzzTrace t;
  t.trace = "step.rrt";
  t.fix = "none";
  t.engine = "python";
  t.strategy = "random";
  t.patches = {{"my_lock.py", sha}};
  t.runs = 4;
  t.failing = 2;
  t.seconds = seconds;
  rerace::replay::FuzzFailure f;
  f.signature = "deadlock at my_lock.py:3";
  f.seed = 2;
  f.schedule = "rs1:abc";
  f.silent = true;
  f.words = "each thread waits";
  t.failures = {f};
  return t;
}

// Two contents of one patch file: the same case names (a CI page keeps one history), each
// hash in its case's properties, and every case timed.
TEST(ReadabilityJunit, FuzzCaseNamesAreTheSameForTwoContentsOfAPatch) {
  const std::string a(64, 'a'), b(64, 'b');
  const std::string xa = rerace::replay::FuzzJunit({FuzzedWithPatch(a, 1.5)});
  const std::string xb = rerace::replay::FuzzJunit({FuzzedWithPatch(b, 0.25)});
  EXPECT_EQ(CaseNames(xa), CaseNames(xb));
  EXPECT_EQ(CaseNames(xa),
            (std::vector<std::string>{"patch my_lock.py (4 runs, random)", "patch my_lock.py: deadlock at my_lock.py:3"}));
  EXPECT_TRUE(Has(xa, "<property name=\"sha256 my_lock.py\" value=\"" + a + "\"/>")) << xa;
  EXPECT_TRUE(Has(xb, "<property name=\"sha256 my_lock.py\" value=\"" + b + "\"/>")) << xb;
  EXPECT_FALSE(Has(xa, b)) << xa;
  for (const std::string& xml : {xa, xb}) ExpectTimes(xml);
  // The trace's time on its case, 0 on its failure's: they add up to the suite's.
  EXPECT_TRUE(Has(xa, "name=\"patch my_lock.py (4 runs, random)\" time=\"1.500\"")) << xa;
  EXPECT_TRUE(Has(xa, "name=\"patch my_lock.py: deadlock at my_lock.py:3\" time=\"0.000\"")) << xa;
  EXPECT_TRUE(Has(xa, "<testsuite name=\"rerace fuzz\" tests=\"2\" failures=\"2\" time=\"1.500\">")) << xa;
}

TEST(ReadabilityJunit, CheckCaseNamesAreTheSameForTwoContentsOfAPatch) {
  std::string xml[2];
  const std::string sha[2] = {std::string(64, 'c'), std::string(64, 'd')};
  for (int k = 0; k < 2; ++k) {
    rerace::replay::PatchId p;
    p.path = "dir" + std::to_string(k) + "/my_lock.py";
    p.name = "my_lock.py";
    p.sha256 = sha[k];
    const std::string checked = rerace::replay::CheckedNames("none", {p});
    EXPECT_EQ(checked, "patch my_lock.py");
    EXPECT_EQ(rerace::replay::CheckedNames("lock-run", {p}), "fix 'lock-run' + patch my_lock.py");
    xml[k] = rerace::replay::CheckJunit("step.rrt", checked, "python", "holds",
                                        "verdict: " + rerace::replay::CheckedWords("none", {p}) + " holds\n",
                                        "", {{p.name, p.sha256}}, 2.0 + k);
    ExpectTimes(xml[k]);
    EXPECT_TRUE(Has(xml[k], "<property name=\"sha256 my_lock.py\" value=\"" + sha[k] + "\"/>")) << xml[k];
    // The verdict line, the case's output, names the content.
    EXPECT_TRUE(Has(xml[k], "<system-out>verdict: patch my_lock.py (sha256 " + sha[k].substr(0, 8) + ") holds"))
        << xml[k];
  }
  EXPECT_EQ(CaseNames(xml[0]), CaseNames(xml[1]));
  EXPECT_EQ(CaseNames(xml[0]), std::vector<std::string>{"patch my_lock.py"});
}

// From the command line: fuzz's, merge's and check's files time every case.
TEST(ReadabilityJunit, EveryCaseOfTheCommandsHasATime) {
  const std::string dir = Dir("junit-time");
  const std::string t = Sample("synth-h200-shape.rrt");
  const CliRun f = RunRerace("fuzz --engine model " + t + " --runs 20 --json --junit " + dir + "/f.xml > " + dir + "/f.json");
  ASSERT_EQ(f.code, 1) << f.out;
  const std::string fx = Slurp(dir + "/f.xml");
  ExpectTimes(fx);
  EXPECT_GT(Testcases(fx).size(), 1u) << fx;  // the trace's case and its failures'
  // The JSON holds no time (its bytes are the same for the same seeds): merge's cases have 0.
  EXPECT_FALSE(Has(Slurp(dir + "/f.json"), "seconds")) << Slurp(dir + "/f.json");
  ASSERT_EQ(RunRerace("merge " + dir + "/f.json --junit " + dir + "/m.xml").code, 1);
  const std::string mx = Slurp(dir + "/m.xml");
  ExpectTimes(mx);
  EXPECT_EQ(Count(mx, " time=\"0.000\""), Testcases(mx).size() + 1) << mx;
  const CliRun c = RunRerace("check --engine model " + Sample("triton-none-h200.rrt") +
                             " --fix lock-run --bound 1 --junit " + dir + "/c.xml");
  ASSERT_EQ(c.code, 0) << c.out;
  const std::string cx = Slurp(dir + "/c.xml");
  ExpectTimes(cx);
  EXPECT_EQ(CaseNames(cx), std::vector<std::string>{"fix 'lock-run'"});
}

// The real-code engine with a user's patch: two versions of my_lock.py give check cases of one
// name, their hashes in the properties and in the output.
TEST(ReadabilityJunit, CheckOfTwoVersionsOfAPatchFileKeepsTheCaseName) {
  const std::string py = std::string(RERACE_PY_ROOT) + "/venv/bin/python";
  if (std::string(RERACE_PY_ROOT).empty() || access(py.c_str(), X_OK) != 0)
    GTEST_SKIP() << py << " is missing (tools/scripts/python-envs.sh makes it)";
  const std::string dir = Dir("junit-patch");
  const std::string patch = Slurp(SourcePath("tests/data/patches/reach_works.py"));
  ASSERT_FALSE(patch.empty());
  Write(dir + "/a/my_lock.py", patch);
  Write(dir + "/b/my_lock.py", patch + "\n# version 2\n");
  std::string xml[2];
  const char* folders[2] = {"a", "b"};
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(folders[k]);
    const std::string file = dir + "/" + folders[k] + "/my_lock.py";
    const CliRun r = RunRerace("check " + Sample("triton-none-h200.rrt") + " --bound 1 --engine python --python-exe " +
                               py + " --patch " + file + " --junit " + dir + "/" + folders[k] + ".xml");
    ASSERT_EQ(r.code, 0) << r.out;
    xml[k] = Slurp(dir + "/" + folders[k] + ".xml");
    ExpectTimes(xml[k]);
    const std::string sha = rerace::replay::IdentifyPatch(file).sha256;
    EXPECT_TRUE(Has(xml[k], "<property name=\"sha256 my_lock.py\" value=\"" + sha + "\"/>")) << xml[k];
    EXPECT_TRUE(Has(xml[k], "patch my_lock.py (sha256 " + sha.substr(0, 8) + ")")) << xml[k];
  }
  EXPECT_NE(xml[0], xml[1]);
  EXPECT_EQ(CaseNames(xml[0]), CaseNames(xml[1]));
  EXPECT_EQ(CaseNames(xml[0]), std::vector<std::string>{"patch my_lock.py"});
}

}  // namespace
