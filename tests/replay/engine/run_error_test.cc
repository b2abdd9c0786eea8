// Item 14 of issue 16: a run that ended in a bug of rerace (an exception escaping the model) or
// in a divergence (a schedule that does not fit) is not a race: RunError gives its own exit code.
#include <gtest/gtest.h>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"

namespace rerace::replay {
namespace {

ReplayResult WithFinding(const std::string& code, bool race_first) {
  ReplayResult r;
  r.model = "triton";
  if (race_first) {
    Finding k;
    k.code = "in-param-not-in-cache";
    k.step = 3;
    r.findings.push_back(k);
  }
  Finding f;
  f.code = code;
  f.type = code == "internal" ? "exception" : "Divergence";
  f.message = "map::at";
  f.step = 7;
  r.findings.push_back(f);
  return r;
}

struct Case {
  std::string code;
  bool race_first;
  int exit_code;  // 0: no RunError
  std::string words;
};

TEST(RunError, InternalIs70DivergenceIs65AndARaceIsNeither) {
  const Case cases[] = {
      {"internal", false, kExitInternal, "internal error: an exception escaped the triton model"},
      {"internal", true, kExitInternal, "at step 7: exception: map::at"},
      {"divergence", false, kExitDataError, "the schedule diverges from this program at step 7"},
      {"divergence", true, kExitDataError, "replay it with the options its header names"},
      {"wrong-restore", true, 0, ""},
      {"deadlock", false, 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code + (c.race_first ? " after a race" : ""));
    const ReplayResult r = WithFinding(c.code, c.race_first);
    const auto e = RunError(r);
    if (c.exit_code == 0) {
      EXPECT_FALSE(e.has_value());
      continue;
    }
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->exit_code, c.exit_code);
    EXPECT_NE(e->message.find(c.words), std::string::npos) << e->message;
    EXPECT_TRUE(Hits(r, "nargs-none"));  // counts as a hit for any --failure: it is reported
  }
}

}  // namespace
}  // namespace rerace::replay
