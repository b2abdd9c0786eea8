// rerace/kernels/cuda.h: the kernels on the GPU, the autotuner's CUDA backend, and the NVTX
// announcer (built with RERACE_CUDA only).
//
// Launch functions take a config index into the family's configs (kernels.h) and throw
// CudaError on a launch error. The specs wrap them for the Autotuner: argument order and
// names, key, restore_value. CudaBackend and NvtxAnnouncer are stateless; any thread.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "rerace/kernels/autotuner.h"
#include "rerace/kernels/kernels.h"

namespace rerace::kernels {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Throws CudaError "what: <CUDA's message>" when `e` is not cudaSuccess.
void Check(cudaError_t e, const char* what);

void LaunchL2Norm(size_t config, const float* x, float* y, int64_t rows, int64_t dim,
                  cudaStream_t s);
void LaunchRmsNorm(size_t config, const float* x, const float* w, float* y, int64_t rows,
                   int64_t dim, cudaStream_t s);
void LaunchMatmul(size_t config, const float* a, const float* b, float* c, int64_t m, int64_t n,
                  int64_t k, cudaStream_t s);

// Args (x, y, rows, dim); key (dim); restore_value (y).
KernelSpec L2NormSpec();
// Args (x, w, y, rows, dim); key (dim); restore_value (y).
KernelSpec RmsNormSpec();
// Args (a, b, c, m, n, k); key (m, n, k); restore_value (c).
KernelSpec MatmulSpec();

class CudaBackend final : public Backend {
 public:
  Arg Clone(const Arg& t, int device, Stream s) override;
  void CopyInto(const Arg& dst, const Arg& src, Stream s) override;
  void Free(const Arg& t, int device) override;
  void Zero(const Arg& t, Stream s) override;
  double Time(const std::function<void()>& launch, int device, Stream s) override;
};

// Marks as NVTX marks, when a recorder is loaded (NVTX_INJECTION64_PATH set).
class NvtxAnnouncer final : public Announcer {
 public:
  bool Enabled() const override;
  void Mark(const std::string& text) override;
};

}  // namespace rerace::kernels
