// The kernels and the training step on a real GPU (label gpu): skipped where there is none.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "rerace/kernels/cuda.h"
#include "rerace/kernels/train_step.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/engine/replay.h"
#include "rerace/replay/report/report.h"
#include "rerace/traces/reader.h"

namespace rerace::kernels {
namespace {

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Fresh inputs on every check: the seed is printed with any failure.
std::vector<float> Random(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Dev {
  float* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<float>& h) : n(h.size()) {
    Check(cudaMalloc(&p, n * 4), "cudaMalloc");
    Check(cudaMemcpy(p, h.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  explicit Dev(size_t count) : n(count) { Check(cudaMalloc(&p, n * 4), "cudaMalloc"); }
  ~Dev() { cudaFree(p); }
  void Poison() { Check(cudaMemset(p, 0xFF, n * 4), "cudaMemset"); }  // NaN everywhere
  std::vector<float> Get() const {
    std::vector<float> h(n);
    Check(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return h;
  }
};

TEST(GpuKernels, EveryConfigMatchesTheFloat64Reference) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Odd sizes on purpose: partial blocks and tiles.
  for (auto [rows, dim] : {std::pair<int64_t, int64_t>{37, 1000}, {256, 1024}, {3, 4097}}) {
    for (size_t c = 0; c < L2NormConfigs().size(); ++c) {
      const auto x = Random(static_cast<size_t>(rows * dim), rng);
      Dev dx(x), dy(x.size());
      dy.Poison();
      LaunchL2Norm(c, dx.p, dy.p, rows, dim, nullptr);
      Check(cudaDeviceSynchronize(), "sync");
      EXPECT_LT(MaxRelativeError(dy.Get(), L2NormReference(x, rows, dim)), 1e-4)
          << "l2norm " << L2NormConfigs()[c].Name() << " " << rows << "x" << dim;
    }
    for (size_t c = 0; c < RmsNormConfigs().size(); ++c) {
      const auto x = Random(static_cast<size_t>(rows * dim), rng);
      const auto w = Random(static_cast<size_t>(dim), rng);
      Dev dx(x), dw(w), dy(x.size());
      dy.Poison();
      LaunchRmsNorm(c, dx.p, dw.p, dy.p, rows, dim, nullptr);
      Check(cudaDeviceSynchronize(), "sync");
      EXPECT_LT(MaxRelativeError(dy.Get(), RmsNormReference(x, w, rows, dim)), 1e-4)
          << "rmsnorm " << RmsNormConfigs()[c].Name() << " " << rows << "x" << dim;
    }
  }
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 64, 64}, {100, 70, 333}, {257, 129, 1024}}) {
    for (size_t c = 0; c < MatmulConfigs().size(); ++c) {
      const auto a = Random(static_cast<size_t>(m * k), rng);
      const auto b = Random(static_cast<size_t>(k * n), rng);
      Dev da(a), db(b), dc(static_cast<size_t>(m * n));
      dc.Poison();
      LaunchMatmul(c, da.p, db.p, dc.p, m, n, k, nullptr);
      Check(cudaDeviceSynchronize(), "sync");
      // Entries are sums of k products of N(0,1) values: relative to sqrt(k).
      EXPECT_LT(MaxRelativeError(dc.Get(), MatmulReference(a, b, m, n, k), std::sqrt(static_cast<double>(k))), 1e-5)
          << "matmul " << MatmulConfigs()[c].Name() << " " << m << "x" << n << "x" << k;
    }
  }
}

std::string Bin() {
  const char* b = std::getenv("RERACE_BIN");
  return b ? b : "build/bin";
}

int Shell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A recorded training step (no fix): the failures the real run raised are the ones rerace's
// native model raises in the recorded order, thread by thread, message by message.
TEST(GpuTrainStep, RecordedFailuresReplayInTheSameThreads) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device on this machine";
  const std::string dir = ::testing::TempDir() + "/train-step-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string out;
  const int rc = Shell(Bin() + "/rerace record -o " + dir + "/t.rrt -- " + Bin() +
                           "/rerace-train-step --threads 8 --steps 1 --tokens 512 --dim 256",
                       &out);
  ASSERT_TRUE(rc == 0 || rc == 1) << out;
  std::string path;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".rrt") path = e.path().string();
  ASSERT_FALSE(path.empty()) << out;
  auto t = traces::ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->footer.cupti_dropped, 0u);
  auto p = replay::BuildProgram(*t, path);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::set<std::pair<std::string, std::string>> recorded, replayed;
  for (const auto& th : p->threads)
    for (const auto& f : th.failures) recorded.insert({th.name, f.message});
  EXPECT_EQ(rc == 1, !recorded.empty()) << out;
  replay::Replayer rep(*p, replay::ReplayOptions{});
  EXPECT_EQ(rep.ModelName(), "native");
  const replay::ReplayResult r = rep.RunRecorded();
  for (const auto& f : r.findings)
    if (!f.silent) replayed.insert({f.thread_name, f.message});
  EXPECT_EQ(replayed, recorded) << out << replay::FormatReport(r, *p, "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rerace::kernels
