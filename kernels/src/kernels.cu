// kernels/src/kernels.cu: l2norm forward, RMSNorm and a tiled matmul, with their launchers
// and autotuner specs.
#include <string>

#include "rerace/kernels/cuda.h"

namespace rerace::kernels {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

namespace {

// Sum over the block; every thread gets the total. `smem` holds 33 floats.
__device__ float BlockSum(float v, float* smem) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // smem is reused row after row
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    float t = lane < warps ? smem[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) t += __shfl_down_sync(0xffffffffu, t, o);
    if (lane == 0) smem[32] = t;
  }
  __syncthreads();
  return smem[32];
}

// One block: `rows_per_block` rows. rms: divide the sum of squares by dim and scale by w.
__global__ void NormKernel(const float* __restrict__ x, const float* __restrict__ w,
                           float* __restrict__ y, int64_t rows, int64_t dim, int rows_per_block,
                           bool rms) {
  __shared__ float smem[33];
  for (int rr = 0; rr < rows_per_block; ++rr) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * rows_per_block + rr;
    if (r >= rows) return;  // the same r for the whole block
    const float* xr = x + r * dim;
    float ss = 0.0f;
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) ss += xr[d] * xr[d];
    const float total = BlockSum(ss, smem);
    const float inv = rsqrtf((rms ? total / static_cast<float>(dim) : total) + static_cast<float>(kNormEps));
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x)
      y[r * dim + d] = xr[d] * inv * (rms ? w[d] : 1.0f);
  }
}

// C[m x n] = A[m x k] B[k x n]. Block (TILE, TILE / WORK); each thread WORK rows of C.
template <int TILE, int WORK>
__global__ void MatmulKernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int64_t m, int64_t n, int64_t k) {
  __shared__ float as[TILE][TILE + 1];
  __shared__ float bs[TILE][TILE + 1];
  constexpr int kStride = TILE / WORK;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * TILE + tx;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * TILE;
  float acc[WORK];
  for (int w = 0; w < WORK; ++w) acc[w] = 0.0f;
  for (int64_t t = 0; t < k; t += TILE) {
    for (int w = 0; w < WORK; ++w) {
      const int r = ty + w * kStride;
      const int64_t ar = row0 + r, ac = t + tx, br = t + r;
      as[r][tx] = (ar < m && ac < k) ? a[ar * k + ac] : 0.0f;
      bs[r][tx] = (br < k && col < n) ? b[br * n + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int p = 0; p < TILE; ++p) {
      const float bv = bs[p][tx];
      for (int w = 0; w < WORK; ++w) acc[w] += as[ty + w * kStride][p] * bv;
    }
    __syncthreads();
  }
  for (int w = 0; w < WORK; ++w) {
    const int64_t r = row0 + ty + w * kStride;
    if (r < m && col < n) c[r * n + col] = acc[w];
  }
}

template <int TILE, int WORK>
void Matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
            cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((n + TILE - 1) / TILE), static_cast<unsigned>((m + TILE - 1) / TILE));
  const dim3 block(TILE, TILE / WORK);
  MatmulKernel<TILE, WORK><<<grid, block, 0, s>>>(a, b, c, m, n, k);
}

void LaunchNorm(const NormConfig& cfg, const float* x, const float* w, float* y, int64_t rows,
                int64_t dim, bool rms, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((rows + cfg.rows - 1) / cfg.rows);
  NormKernel<<<blocks, static_cast<unsigned>(cfg.block), 0, s>>>(x, w, y, rows, dim, cfg.rows, rms);
}

float* F(const Arg& a) { return static_cast<float*>(a.data); }

std::vector<std::string> Names(const std::vector<NormConfig>& c) {
  std::vector<std::string> out;
  for (const auto& x : c) out.push_back(x.Name());
  return out;
}

}  // namespace

void LaunchL2Norm(size_t config, const float* x, float* y, int64_t rows, int64_t dim,
                  cudaStream_t s) {
  LaunchNorm(L2NormConfigs().at(config), x, nullptr, y, rows, dim, false, s);
  Check(cudaGetLastError(), "l2norm_fwd launch");
}

void LaunchRmsNorm(size_t config, const float* x, const float* w, float* y, int64_t rows,
                   int64_t dim, cudaStream_t s) {
  LaunchNorm(RmsNormConfigs().at(config), x, w, y, rows, dim, true, s);
  Check(cudaGetLastError(), "rmsnorm launch");
}

void LaunchMatmul(size_t config, const float* a, const float* b, float* c, int64_t m, int64_t n,
                  int64_t k, cudaStream_t s) {
  const MatmulConfig& cfg = MatmulConfigs().at(config);
  if (cfg.tile == 16 && cfg.work == 1) Matmul<16, 1>(a, b, c, m, n, k, s);
  else if (cfg.tile == 16 && cfg.work == 2) Matmul<16, 2>(a, b, c, m, n, k, s);
  else if (cfg.tile == 16 && cfg.work == 4) Matmul<16, 4>(a, b, c, m, n, k, s);
  else if (cfg.tile == 32 && cfg.work == 1) Matmul<32, 1>(a, b, c, m, n, k, s);
  else if (cfg.tile == 32 && cfg.work == 2) Matmul<32, 2>(a, b, c, m, n, k, s);
  else Matmul<32, 4>(a, b, c, m, n, k, s);
  Check(cudaGetLastError(), "matmul launch");
}

KernelSpec L2NormSpec() {
  KernelSpec k;
  k.name = "l2norm_fwd";
  k.arg_names = {"x", "y", "rows", "dim"};
  k.configs = Names(L2NormConfigs());
  k.key = {3};
  k.restore_value = {1};
  k.launch = [](size_t c, const Call& call) {
    LaunchL2Norm(c, F(call.args[0]), F(call.args[1]), call.args[2].value, call.args[3].value,
                 static_cast<cudaStream_t>(call.stream));
  };
  return k;
}

KernelSpec RmsNormSpec() {
  KernelSpec k;
  k.name = "rmsnorm";
  k.arg_names = {"x", "w", "y", "rows", "dim"};
  k.configs = Names(RmsNormConfigs());
  k.key = {4};
  k.restore_value = {2};
  k.launch = [](size_t c, const Call& call) {
    LaunchRmsNorm(c, F(call.args[0]), F(call.args[1]), F(call.args[2]), call.args[3].value,
                  call.args[4].value, static_cast<cudaStream_t>(call.stream));
  };
  return k;
}

KernelSpec MatmulSpec() {
  KernelSpec k;
  k.name = "matmul";
  k.arg_names = {"a", "b", "c", "m", "n", "k"};
  for (const auto& c : MatmulConfigs()) k.configs.push_back(c.Name());
  k.key = {3, 4, 5};
  k.restore_value = {2};
  k.launch = [](size_t c, const Call& call) {
    LaunchMatmul(c, F(call.args[0]), F(call.args[1]), F(call.args[2]), call.args[3].value,
                 call.args[4].value, call.args[5].value, static_cast<cudaStream_t>(call.stream));
  };
  return k;
}

}  // namespace rerace::kernels
