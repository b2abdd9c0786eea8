// A small multi-threaded CUDA program with a known number of launches per thread and stream,
// for the recorder's GPU test. Thread t (own stream) launches (t+1)*100 kernel_a and 50
// kernel_b, emits one tuner mark through probe.h and one free NVTX mark, and syncs its stream.
// --abort-after K: thread 0 syncs and aborts after K launches (the trace must stay readable).
// Exit 77 when there is no GPU.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rerace/recorder/probe.h"

__global__ void kernel_a(float* x) { x[threadIdx.x] += 1.0f; }
__global__ void kernel_b(float* x) { x[threadIdx.x] *= 2.0f; }

int main(int argc, char** argv) {
  int threads = 4;
  long abort_after = -1;
  long launches = -1;  // per thread, instead of (t+1)*100 (the overhead benchmark)
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--abort-after")) abort_after = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--launches")) launches = std::atol(argv[i + 1]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gpu_launches: no CUDA device\n");
    return 77;
  }
  cudaFree(nullptr);  // context creation outside the timed part
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([t, abort_after, launches] {
      std::string name = "launcher-" + std::to_string(t);
      pthread_setname_np(pthread_self(), name.c_str());
      cudaSetDevice(0);
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      float* x = nullptr;
      cudaMalloc(&x, 256 * sizeof(float));
      rerace::probe::TunerMark m;
      m.kernel = "kernel_a";
      m.tuner_class = "rerace.test";
      m.event.kind = rerace::traces::TunerKind::kCallBegin;
      m.event.key = std::to_string(t);
      m.event.configs = {"a", "b"};
      rerace::probe::Emit(m);
      nvtxMarkA("free mark");
      long n = 0;
      const long count = launches >= 0 ? launches : (t + 1) * 100L;
      for (long i = 0; i < count; ++i) {
        kernel_a<<<1, 128, 0, s>>>(x);
        if (t == 0 && abort_after >= 0 && ++n >= abort_after) {
          cudaStreamSynchronize(s);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // > one flush period
          std::abort();
        }
      }
      for (int i = 0; i < (launches >= 0 ? 0 : 50); ++i) kernel_b<<<2, 64, 0, s>>>(x);
      if (launches < 0) {
        // One fill and two copies per thread (the recorder's memory operations).
        float* y = nullptr;
        cudaMalloc(&y, 256 * sizeof(float));
        std::vector<float> host(256, 1.0f);
        cudaMemsetAsync(y, 0, 256 * sizeof(float), s);
        cudaMemcpyAsync(y, x, 256 * sizeof(float), cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(x, host.data(), 256 * sizeof(float), cudaMemcpyHostToDevice, s);
        cudaStreamSynchronize(s);
        cudaFree(y);
      }
      cudaStreamSynchronize(s);
      cudaFree(x);
      cudaStreamDestroy(s);
    });
  }
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("gpu_launches: done in %.6f s\n", secs);
  return 0;
}
