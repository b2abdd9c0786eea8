// rerace/kernels/kernels.h: the kernel families, their launch configurations, and CPU
// references in float64.
//
//   l2norm_fwd   y[r] = x[r] / sqrt(sum(x[r]^2) + eps), as in linear-attention layers (FLA's
//                l2norm forward); 12 configs (threads per block x rows per block)
//   rmsnorm      y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w; 8 configs
//   matmul       C = A B (row-major, tiled in shared memory); 6 configs (tile x rows per thread)
//
// The GPU side is kernels/cuda.h (built with RERACE_CUDA). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rerace::kernels {

inline constexpr double kNormEps = 1e-6;

struct NormConfig {
  int block;  // threads per block
  int rows;   // rows per block
  std::string Name() const;
};
struct MatmulConfig {
  int tile;  // square tile edge (16 or 32)
  int work;  // output rows per thread
  std::string Name() const;
};

const std::vector<NormConfig>& L2NormConfigs();
const std::vector<NormConfig>& RmsNormConfigs();
const std::vector<MatmulConfig>& MatmulConfigs();

// References: float inputs, float64 arithmetic and outputs.
std::vector<double> L2NormReference(const std::vector<float>& x, int64_t rows, int64_t dim);
std::vector<double> RmsNormReference(const std::vector<float>& x, const std::vector<float>& w,
                                     int64_t rows, int64_t dim);
std::vector<double> MatmulReference(const std::vector<float>& a, const std::vector<float>& b,
                                    int64_t m, int64_t n, int64_t k);

// max |got - want| / max(|want|, floor): the relative error the GPU tests bound.
double MaxRelativeError(const std::vector<float>& got, const std::vector<double>& want,
                        double floor = 1e-3);

}  // namespace rerace::kernels
