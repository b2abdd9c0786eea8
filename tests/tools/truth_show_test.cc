// tests/tools/truth_show_test.cc: one true answer from `rerace show` (issue 28): kernels by
// their short names as Nsight Systems gives them, every sample's summary within 160 columns, and
// the samples' README counting what show counts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "rerace/replay/report/timeline.h"
#include "rerace/testing/cli.h"
#include "truth_test.h"

namespace {

using rerace::testing::CliRun;
using rerace::testing::Has;
using rerace::testing::Lines;
using rerace::testing::Rerace;
using rerace::testing::SampleTrace;
using rerace::testing::Slurp;
using rerace::testing::Source;
using rerace::testing::truth::TempDir;

// Defect 7: show names kernels short by default, as Nsight Systems does: no template
// arguments, parameters, return type or namespaces.
struct ShortCase {
  const char* raw;
  const char* short_name;
};

TEST(Truth, ShortKernelNamesDropTemplatesParametersAndNamespaces) {
  const ShortCase cases[] = {
      {"l2norm_fwd_kernel", "l2norm_fwd_kernel"},  // Triton: unchanged
      {"void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, "
       "4, at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase "
       "const&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() "
       "const::{lambda(float)#2}>(long, at::PhiloxCudaState, float)",
       "distribution_elementwise_grid_stride_kernel"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
       "vectorized_elementwise_kernel"},
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_"
       "256x128_8x4_nn_align1::Params)",
       "Kernel2"},
      // A mangled name is demangled first: rerace::kernels::(anonymous namespace)::NormKernel(...).
      {"_ZN6rerace7kernels12_GLOBAL__N_110NormKernelEPKfS3_Pfllib", "NormKernel"},
  };
  for (const ShortCase& c : cases) EXPECT_EQ(rerace::replay::ShortKernelName(c.raw), c.short_name) << c.raw;
}

// Defect 7: every sample's summary has no line over 160 columns and its PyTorch kernels by
// their short names; --full-names gives them whole.
TEST(Truth, ShowFitsEverySampleIn160Columns) {
  const std::string dir = TempDir("show");
  size_t samples = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(Source("traces/samples"))) {
    const std::string name = e.path().filename().string();
    const bool packed = name.size() > 7 && name.compare(name.size() - 7, 7, ".rrt.xz") == 0;
    if (e.path().extension() != ".rrt" && !packed) continue;
    ++samples;
    SCOPED_TRACE(e.path().string());
    std::string path = e.path().string();
    if (packed) {  // the cost recordings, unpacked as their README says
      path = dir + "/unpacked.rrt";
      if (std::system(("xz -dc '" + e.path().string() + "' > '" + path + "' 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "xz cannot unpack " << e.path();
    }
    const CliRun r = Rerace("show " + path);
    ASSERT_EQ(r.code, 0) << r.out;
    for (const std::string& line : Lines(r.out)) EXPECT_LE(line.size(), 160u) << line;
  }
  EXPECT_GE(samples, 50u);
  const std::string t = SampleTrace("triton-none-h200.rrt");
  const CliRun show = Rerace("show " + t);
  EXPECT_TRUE(Has(show.out, "  distribution_elementwise_grid_stride_kernel\n")) << show.out;
  for (const std::string& line : Lines(show.out)) {
    if (line.rfind("      device ", 0) != 0) continue;
    EXPECT_FALSE(Has(line, "<")) << line;
  }
  const CliRun full = Rerace("show --full-names " + t);
  EXPECT_TRUE(Has(full.out, "::distribution_elementwise_grid_stride_kernel<float,")) << full.out;
}

// Defect 9: traces/samples/README.md's event counts are what `rerace show` counts (the
// compressed recordings unpacked with xz).
TEST(Truth, SamplesReadmeCountsAreWhatShowSays) {
  const std::string dir = TempDir("counts");
  static const std::regex row(R"(^\| `([^`]+)` .*[^0-9,]([0-9][0-9,]*k?) events)");
  size_t checked = 0;
  for (const std::string& line : Lines(Slurp(Source("traces/samples/README.md")))) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::string name = m[1], want = m[2];
    want.erase(std::remove(want.begin(), want.end(), ','), want.end());  // "153k" matches no count
    // "r{1,2,3}": each of the files.
    std::vector<std::string> files;
    if (const size_t open = name.find('{'); open != std::string::npos) {
      const size_t close = name.find('}', open);
      std::string alts = name.substr(open + 1, close - open - 1) + ",";
      for (size_t p = 0, q; (q = alts.find(',', p)) != std::string::npos; p = q + 1)
        files.push_back(name.substr(0, open) + alts.substr(p, q - p) + name.substr(close + 1));
    } else {
      files.push_back(name);
    }
    for (const std::string& f : files) {
      SCOPED_TRACE(f);
      std::string path = Source("traces/samples/" + f);
      ASSERT_TRUE(std::filesystem::exists(path)) << line;
      if (path.size() > 3 && path.compare(path.size() - 3, 3, ".xz") == 0) {
        const std::string out = dir + "/unpacked.rrt";
        if (std::system(("xz -dc '" + path + "' > '" + out + "' 2>/dev/null").c_str()) != 0)
          GTEST_SKIP() << "xz cannot unpack " << path;
        path = out;
      }
      const CliRun r = Rerace("show " + path);
      EXPECT_TRUE(Has(r.out, "  " + want + " events in ")) << line << "\n" << r.out.substr(0, 600);
      ++checked;
    }
  }
  EXPECT_GE(checked, 20u);
}

}  // namespace
