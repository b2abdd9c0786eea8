// tools/scripts/cupti_activity_overhead.cc: the host time of a timed trial (event record, launch,
// event record, then wait) with CUPTI's kernel activity off and on, on 1 and N threads at once; the
// measurement behind the recorder's one activity buffer per process (docs/RECORDER.md, "What
// recording costs"; docs/gpu-logs/h200-recorder-buffers-2026-12-04.log). Standalone, not built by CMake:
//   g++ -O2 -std=c++20 tools/scripts/cupti_activity_overhead.cc -I/usr/local/cuda/include \
//     -L/usr/local/cuda/lib64/stubs -L/usr/local/cuda/extras/CUPTI/lib64 -L/usr/local/cuda/lib64 \
//     -lcuda -lcupti -lpthread -o cupti_activity_overhead
//   cupti_activity_overhead MODE [THREADS=8] [SPIN=0] [REPS=3]
// MODE: off (no CUPTI), act (kernel activity, CUPTI's default buffer per thread), act-shared (one
// buffer for the process, as the recorder), act-zeroed (buffers zeroed by the caller), and any of
// them with -toggle (activity disabled and re-enabled in the same process). SPIN: the kernel's
// loop count (0: an empty kernel). REPS rounds of 300 trials per thread count, each on fresh
// threads with fresh streams. Prints the median over threads of the per-trial host time of
// the record-launch-record part and of the whole trial, in microseconds.
#include <cuda.h>
#include <cupti.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
static const char* kPtx = R"(
.version 7.5
.target sm_75
.address_size 64
.visible .entry rerace_empty() { ret; }
.visible .entry rerace_spin(.param .u64 n) {
  .reg .u64 %r<4>; .reg .pred %p;
  ld.param.u64 %r1, [n]; mov.u64 %r2, 0;
L: add.u64 %r2, %r2, 1; setp.lt.u64 %p, %r2, %r1; @%p bra L;
  ret; }
)";
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s; cuGetErrorString(r_, &s); std::fprintf(stderr, "%s: %s\n", #x, s); std::exit(1);} } while (0)
static uint64_t Now() { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static std::atomic<uint64_t> g_records{0};
static void CUPTIAPI Req(uint8_t** b, size_t* s, size_t* m) { void* p; posix_memalign(&p, 8, 8 << 20); std::memset(p, 0, 8 << 20); *b = (uint8_t*)p; *s = 8 << 20; *m = 0; }
static void CUPTIAPI Done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr; while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) g_records++; free(b); }
CUcontext ctx; CUfunction empty, spin;
struct Res { double launch_us, trial_us; };
Res Run(int threads, int iters, uint64_t spin_n) {
  std::vector<double> launch(threads), trial(threads);
  std::vector<std::thread> ts;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
    CK(cuCtxSetCurrent(ctx));
    CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
    ready++; while (ready.load() < threads) {}
    uint64_t lsum = 0, t0 = Now();
    for (int i = 0; i < iters; ++i) {
      uint64_t l0 = Now();
      CK(cuEventRecord(a, s));
      void* args[] = {&spin_n};
      if (spin_n) CK(cuLaunchKernel(spin, 1,1,1, 32,1,1, 0, s, args, nullptr));
      else CK(cuLaunchKernel(empty, 1,1,1, 32,1,1, 0, s, nullptr, nullptr));
      CK(cuEventRecord(b, s));
      lsum += Now() - l0;
      CK(cuEventSynchronize(b));
    }
    launch[t] = lsum / 1e3 / iters; trial[t] = (Now() - t0) / 1e3 / iters;
    CK(cuStreamDestroy(s));
  });
  for (auto& t : ts) t.join();
  std::sort(launch.begin(), launch.end()); std::sort(trial.begin(), trial.end());
  return {launch[threads / 2], trial[threads / 2]};
}
int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "off";
  int nthreads = argc > 2 ? std::atoi(argv[2]) : 8;
  uint64_t spin_n = argc > 3 ? std::strtoull(argv[3], 0, 10) : 0;
  int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  if (mode != "off") {
    if (mode.find("zeroed") != std::string::npos) { uint8_t v = 1; size_t sz = 1; cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz, &v); }
    if (mode.find("shared") != std::string::npos) { uint8_t v = 0; size_t sz = 1; std::printf("per-thread off: %d\n", cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &sz, &v)); }
    if (mode.find("pinned") != std::string::npos) { uint8_t v = 1; size_t sz = 1; cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &sz, &v); }
    cuptiActivityRegisterCallbacks(Req, Done);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, d)); CK(cuCtxSetCurrent(ctx));
  CUmodule m; CK(cuModuleLoadData(&m, kPtx)); CK(cuModuleGetFunction(&empty, m, "rerace_empty")); CK(cuModuleGetFunction(&spin, m, "rerace_spin"));
  Run(1, 50, spin_n);  // warm
  for (int rep = 0; rep < reps; ++rep) {
    for (int th : {1, nthreads}) {
      Res r = Run(th, 300, spin_n);
      std::printf("mode=%s spin=%llu threads=%d rep=%d launch_part_us=%.2f trial_us=%.2f\n", mode.c_str(), (unsigned long long)spin_n, th, rep, r.launch_us, r.trial_us);
    }
  }
  if (mode.find("toggle") != std::string::npos) {
    for (int rep = 0; rep < 3; ++rep) {
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      for (int th : {1, nthreads}) { Res r = Run(th, 300, spin_n); std::printf("toggled-off threads=%d launch_part_us=%.2f trial_us=%.2f\n", th, r.launch_us, r.trial_us); }
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      for (int th : {1, nthreads}) { Res r = Run(th, 300, spin_n); std::printf("toggled-on threads=%d launch_part_us=%.2f trial_us=%.2f\n", th, r.launch_us, r.trial_us); }
    }
  }
  cuptiActivityFlushAll(1);
  std::printf("records=%llu\n", (unsigned long long)g_records.load());
}
