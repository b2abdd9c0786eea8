// kernels/src/reference.cc: configs and float64 references.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "rerace/kernels/kernels.h"

namespace rerace::kernels {

std::string NormConfig::Name() const { return fmt::format("BLOCK={},ROWS={}", block, rows); }
std::string MatmulConfig::Name() const { return fmt::format("TILE={},WORK={}", tile, work); }

const std::vector<NormConfig>& L2NormConfigs() {
  static const std::vector<NormConfig> c = {{32, 1},  {32, 2},  {32, 4},  {64, 1},
                                            {64, 2},  {64, 4},  {128, 1}, {128, 2},
                                            {128, 4}, {256, 1}, {256, 2}, {256, 4}};
  return c;
}

const std::vector<NormConfig>& RmsNormConfigs() {
  static const std::vector<NormConfig> c = {{64, 1},  {64, 4},  {128, 1}, {128, 4},
                                            {256, 1}, {256, 4}, {512, 1}, {512, 2}};
  return c;
}

const std::vector<MatmulConfig>& MatmulConfigs() {
  static const std::vector<MatmulConfig> c = {{16, 1}, {16, 2}, {16, 4}, {32, 1}, {32, 2}, {32, 4}};
  return c;
}

namespace {
// y[r] = x[r] / sqrt(ss + eps) (l2norm) or x[r] / sqrt(ss / dim + eps) * w (RMSNorm).
std::vector<double> NormReference(const std::vector<float>& x, const std::vector<float>* w,
                                  int64_t rows, int64_t dim) {
  std::vector<double> y(static_cast<size_t>(rows * dim));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * dim;
    double ss = 0;
    for (int64_t d = 0; d < dim; ++d) ss += static_cast<double>(xr[d]) * static_cast<double>(xr[d]);
    const double inv = 1.0 / std::sqrt((w ? ss / static_cast<double>(dim) : ss) + kNormEps);
    for (int64_t d = 0; d < dim; ++d)
      y[static_cast<size_t>(r * dim + d)] =
          static_cast<double>(xr[d]) * inv * (w ? static_cast<double>((*w)[static_cast<size_t>(d)]) : 1.0);
  }
  return y;
}
}  // namespace

std::vector<double> L2NormReference(const std::vector<float>& x, int64_t rows, int64_t dim) {
  return NormReference(x, nullptr, rows, dim);
}

std::vector<double> RmsNormReference(const std::vector<float>& x, const std::vector<float>& w,
                                     int64_t rows, int64_t dim) {
  return NormReference(x, &w, rows, dim);
}

std::vector<double> MatmulReference(const std::vector<float>& a, const std::vector<float>& b,
                                    int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double av = a[static_cast<size_t>(i * k + p)];
      for (int64_t j = 0; j < n; ++j)
        c[static_cast<size_t>(i * n + j)] += av * static_cast<double>(b[static_cast<size_t>(p * n + j)]);
    }
  return c;
}

double MaxRelativeError(const std::vector<float>& got, const std::vector<double>& want,
                        double floor) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (!std::isfinite(g)) return INFINITY;  // a poisoned element never written
    worst = std::max(worst, std::abs(g - want[i]) / std::max(std::abs(want[i]), floor));
  }
  return worst;
}

}  // namespace rerace::kernels
