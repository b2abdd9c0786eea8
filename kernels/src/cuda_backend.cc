// kernels/src/cuda_backend.cc: the autotuner's CUDA backend and the NVTX announcer.
#include <nvtx3/nvToolsExt.h>

#include "rerace/kernels/cuda.h"
#include "rerace/recorder/probe.h"

namespace rerace::kernels {

Arg CudaBackend::Clone(const Arg& t, int device, Stream s) {
  Check(cudaSetDevice(device), "cudaSetDevice (clone)");
  Arg c = t;
  Check(cudaMalloc(&c.data, t.bytes), "cudaMalloc (pre-hook clone)");
  Check(cudaMemcpyAsync(c.data, t.data, t.bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s)),
        "cudaMemcpyAsync (pre-hook clone)");
  return c;
}

void CudaBackend::CopyInto(const Arg& dst, const Arg& src, Stream s) {
  Check(cudaMemcpyAsync(dst.data, src.data, std::min(dst.bytes, src.bytes), cudaMemcpyDefault,
                        static_cast<cudaStream_t>(s)),
        "cudaMemcpyAsync (post-hook restore)");
}

void CudaBackend::Free(const Arg& t, int device) {
  // Another thread's stream may still read the copy (a post-hook that restored it): wait for
  // the device, as Python's reference counting would keep the tensor alive until then.
  if (cudaSetDevice(device) != cudaSuccess) return;
  cudaDeviceSynchronize();
  cudaFree(t.data);
}

void CudaBackend::Zero(const Arg& t, Stream s) {
  Check(cudaMemsetAsync(t.data, 0, t.bytes, static_cast<cudaStream_t>(s)), "cudaMemsetAsync (reset_to_zero)");
}

double CudaBackend::Time(const std::function<void()>& launch, int device, Stream s) {
  Check(cudaSetDevice(device), "cudaSetDevice (bench)");
  const auto st = static_cast<cudaStream_t>(s);
  cudaEvent_t begin, end;
  Check(cudaEventCreate(&begin), "cudaEventCreate");
  Check(cudaEventCreate(&end), "cudaEventCreate");
  Check(cudaEventRecord(begin, st), "cudaEventRecord");
  launch();
  Check(cudaEventRecord(end, st), "cudaEventRecord");
  Check(cudaEventSynchronize(end), "cudaEventSynchronize (bench)");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return ms;
}

bool NvtxAnnouncer::Enabled() const { return probe::Enabled(); }

void NvtxAnnouncer::Mark(const std::string& text) { nvtxMarkA(text.c_str()); }

}  // namespace rerace::kernels
