// The recorder on a real GPU (label gpu): skipped where there is none.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "rerace/traces/reader.h"

namespace {

struct Out {
  int code;
  std::string text;
};

Out Shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  Out o{-1, ""};
  if (!p) return o;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.text.append(buf.data(), n);
  const int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

std::string Bin() {
  const char* b = std::getenv("RERACE_BIN");
  return b ? b : "build/bin";
}

std::string FindTrace(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".rrt") return e.path().string();
  return "";
}

TEST(GpuRecord, EveryLaunchThreadStreamAndMarkArrives) {
  const std::string dir = ::testing::TempDir() + "/gpu-record-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const Out o = Shell(Bin() + "/rerace record -o " + dir + "/t.rrt -- " + Bin() + "/gpu_launches");
  if (o.code == 77) GTEST_SKIP() << "no GPU on this machine: " << o.text;
  ASSERT_EQ(o.code, 0) << o.text;
  const std::string path = FindTrace(dir);
  ASSERT_FALSE(path.empty()) << o.text;
  auto t = rerace::traces::ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_FALSE(t->truncated) << t->truncation;
  EXPECT_EQ(t->footer.cupti_dropped, 0u);
  std::map<std::string, std::map<std::string, int>> per_thread;  // thread name → kernel → n
  std::map<std::string, std::set<uint64_t>> streams;
  std::map<std::string, std::multiset<std::pair<int, uint64_t>>> memops;  // kind, bytes
  int activity = 0, timed = 0, tuner = 0, free_marks = 0, launches = 0;
  for (const auto& e : t->events) {
    const std::string& th = t->threads[e.thread].name;
    if (e.kind == rerace::traces::EventKind::kLaunch) {
      const auto& sh = t->shapes[e.shape];
      ++per_thread[th][t->Str(sh.kernel)];
      streams[th].insert(sh.stream);
      ++launches;
    }
    if (e.kind == rerace::traces::EventKind::kActivity) {
      ++activity;
      timed += e.gpu_start_ns != 0 && e.gpu_end_ns > e.gpu_start_ns;
    }
    if (e.kind == rerace::traces::EventKind::kTuner) ++tuner;
    if (e.kind == rerace::traces::EventKind::kMemOp)
      memops[th].insert({static_cast<int>(e.mem), e.bytes});
    if (e.kind == rerace::traces::EventKind::kNvtx && t->Str(e.text) == "free mark") ++free_marks;
  }
  for (int i = 0; i < 4; ++i) {
    const std::string name = "launcher-" + std::to_string(i);
    SCOPED_TRACE(name);
    int a = 0, b = 0;
    for (const auto& [k, n] : per_thread[name]) {
      if (k.find("kernel_a") != std::string::npos) a += n;
      if (k.find("kernel_b") != std::string::npos) b += n;
    }
    EXPECT_EQ(a, (i + 1) * 100);
    EXPECT_EQ(b, 50);
    EXPECT_EQ(streams[name].size(), 1u);  // its own stream
    using rerace::traces::MemKind;
    const std::multiset<std::pair<int, uint64_t>> want = {
        {static_cast<int>(MemKind::kMemset), 1024}, {static_cast<int>(MemKind::kDtoD), 1024},
        {static_cast<int>(MemKind::kHtoD), 1024}};
    EXPECT_EQ(memops[name], want);
  }
  EXPECT_EQ(launches, 1000 + 200);
  EXPECT_EQ(activity, launches);
  EXPECT_EQ(timed, launches);
  EXPECT_EQ(tuner, 4);
  EXPECT_EQ(free_marks, 4);
  EXPECT_FALSE(t->header.gpus.empty());
  std::filesystem::remove_all(dir);
}

TEST(GpuRecord, AbortHalfwayLeavesAReadableTruncatedTrace) {
  const std::string dir = ::testing::TempDir() + "/gpu-abort-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const Out o = Shell(Bin() + "/rerace record -o " + dir + "/t.rrt -- " + Bin() +
                    "/gpu_launches --threads 1 --abort-after 60");
  if (o.code == 77) GTEST_SKIP() << "no GPU on this machine: " << o.text;
  EXPECT_EQ(o.code, 128 + 6) << o.text;  // SIGABRT passed through
  const std::string path = FindTrace(dir);
  ASSERT_FALSE(path.empty()) << o.text;
  auto t = rerace::traces::ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->truncated);
  int launches = 0;
  for (const auto& e : t->events) launches += e.kind == rerace::traces::EventKind::kLaunch;
  EXPECT_EQ(launches, 60);  // all flushed before the abort
  std::filesystem::remove_all(dir);
}

}  // namespace
