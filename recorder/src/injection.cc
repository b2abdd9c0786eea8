// recorder/src/injection.cc: the CUPTI injection library (librerace_cupti.so).
//
// Loaded into the recorded process through CUDA_INJECTION64_PATH (the driver calls
// InitializeInjection during cuInit); NVTX_INJECTION64_PATH may point at it too, and NVTX then
// finds libcupti's InitializeInjectionNvtx2 through this library's dependency (what worked on
// the H200, see the brief). The recorder starts at the first context creation, when the GPUs
// can be listed for the header; NVTX marks made before that are not recorded.
//
// NB: the callbacks run on the user's threads: they never throw, never abort, never allocate
// after a thread's first event (recorder.h), and count what goes wrong instead.
#include <cuda.h>
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rerace/recorder/recorder.h"

namespace rerace::recorder {
namespace {

using traces::MemKind;
using traces::NvtxKind;
using traces::SyncKind;

CUpti_SubscriberHandle g_subscriber = nullptr;
std::once_flag g_init_once;
std::once_flag g_start_once;
std::unique_ptr<Recorder> g_owned;

// Activity buffers from a preallocated pool.
constexpr size_t kActivityBufferBytes = 8u << 20;
constexpr size_t kActivityBuffers = 32;
std::mutex g_pool_mu;
std::vector<uint8_t*> g_pool;


std::string TracePath() {
  const char* base = std::getenv("RERACE_TRACE");
  std::string path = base && *base ? base : "rerace.rrt";
  const char* rank = std::getenv("RANK");
  if (!rank || !*rank) rank = std::getenv("LOCAL_RANK");
  std::string suffix = "." + std::string(rank && *rank ? std::string("rank") + rank + "." : "") +
                       "pid" + std::to_string(getpid());
  if (std::getenv("RERACE_TRACE_EXACT") && !(rank && *rank)) suffix.clear();
  const size_t dot = path.rfind(".rrt");
  if (dot != std::string::npos && dot + 4 == path.size()) return path.substr(0, dot) + suffix + ".rrt";
  return path + suffix;
}

traces::Header MakeHeader() {
  traces::Header h;
  h.recorder_version = "rerace-recorder 0.1.0";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  h.host = host;
  h.pid = static_cast<uint32_t>(getpid());
  const char* rank = std::getenv("RANK");
  if (!rank || !*rank) rank = std::getenv("LOCAL_RANK");
  h.rank = rank && *rank ? std::atoi(rank) : -1;
  std::ifstream cmd("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(cmd, arg, '\0')) h.command_line.push_back(arg);
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  h.start_time_unix_ns = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  h.start_cpu_ns = MonotonicNs();
  int count = 0;
  if (cuDeviceGetCount(&count) == CUDA_SUCCESS) {
    for (int i = 0; i < count; ++i) {
      CUdevice dev;
      if (cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
      traces::Gpu g;
      g.index = static_cast<uint32_t>(i);
      char name[256] = {};
      cuDeviceGetName(name, sizeof name - 1, dev);
      g.name = name;
      CUuuid uuid;
      if (cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
        char buf[64];
        const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
        std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                      b[12], b[13], b[14], b[15]);
        g.uuid = buf;
      }
      size_t mem = 0;
      cuDeviceTotalMem(&mem, dev);
      g.memory_bytes = mem;
      h.gpus.push_back(g);
      uint64_t gpu_now = 0;
      cuptiGetTimestamp(&gpu_now);
      h.clock_pairs.push_back({g.index, MonotonicNs(), gpu_now});
    }
  }
  return h;
}

std::vector<traces::ClockPair> EndClockPairs() {
  std::vector<traces::ClockPair> out;
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS) return out;
  for (int i = 0; i < count; ++i) {
    uint64_t gpu_now = 0;
    cuptiGetTimestamp(&gpu_now);
    out.push_back({static_cast<uint32_t>(i), MonotonicNs(), gpu_now});
  }
  return out;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> g(g_pool_mu);
  *max_records = 0;
  if (g_pool.empty()) {
    *buffer = nullptr;  // CUPTI drops records and counts them
    *size = 0;
    if (Recorder* r = Global()) r->CountProblem();
    return;
  }
  *buffer = g_pool.back();
  g_pool.pop_back();
  *size = kActivityBufferBytes;
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                              size_t valid) {
  Recorder* r = Global();
  CUpti_Activity* record = nullptr;
  while (r && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      r->AddActivity(k->correlationId, k->start, k->end);
    }
  }
  size_t dropped = 0;
  if (r && cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped)
    r->AddDropped(dropped);
  // CUPTI takes the buffers as zeroed (Init): clear what this one used before it is lent again,
  // here (where CUPTI hands a buffer back) rather than in BufferRequested, which may run in the
  // middle of a user's launch.
  std::memset(buffer, 0, std::min(valid, kActivityBufferBytes));
  std::lock_guard<std::mutex> g(g_pool_mu);
  g_pool.push_back(buffer);
}

void AtExit() {
  Recorder* r = Global();
  if (!r) return;
  cuptiActivityFlushAll(1);
  auto s = r->Stop(EndClockPairs(), true);
  if (!s) std::fprintf(stderr, "rerace recorder: %s\n", s.error().message.c_str());
  SetGlobal(nullptr);
}

void StartRecorder() {
  std::call_once(g_start_once, [] {
    RecorderOptions o;
    o.path = TracePath();
    o.header = MakeHeader();
    auto r = Recorder::Create(std::move(o));
    if (!r) {
      std::fprintf(stderr, "rerace recorder: %s (nothing will be recorded)\n", r.error().message.c_str());
      return;
    }
    g_owned = std::move(*r);
    SetGlobal(g_owned.get());
    std::atexit(AtExit);
  });
}

// Device and stream ids cost a CUPTI call each; a launch-heavy thread asks about the same few
// (context, stream) pairs again and again. Each thread keeps the answers in a small
// direct-mapped cache, valid while no stream or context has been destroyed since (a new stream
// may reuse a destroyed one's handle): the resource callbacks bump g_generation.
std::atomic<uint64_t> g_generation{1};

struct IdSlot {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  uint64_t generation = 0;  // 0: empty
  bool ptsz = false;
  uint32_t device = 0;
  uint64_t stream_id = 0;
};
thread_local IdSlot t_ids[16];

const IdSlot& IdsOf(CUcontext ctx, CUstream s, bool ptsz) {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  const auto h = reinterpret_cast<uintptr_t>(s) ^ (reinterpret_cast<uintptr_t>(ctx) >> 4);
  IdSlot& slot = t_ids[(h >> 4 ^ h >> 9) & 15];
  if (slot.generation == gen && slot.ctx == ctx && slot.stream == s && slot.ptsz == ptsz) return slot;
  slot.ctx = ctx;
  slot.stream = s;
  slot.ptsz = ptsz;
  slot.device = 0;
  slot.stream_id = 0;
  if (ctx) {
    cuptiGetDeviceId(ctx, &slot.device);
    uint32_t id = 0;
    if (cuptiGetStreamIdEx(ctx, s, ptsz ? 1 : 0, &id) == CUPTI_SUCCESS) slot.stream_id = id;
  }
  slot.generation = gen;
  return slot;
}

uint32_t DeviceOf(CUcontext ctx) { return IdsOf(ctx, nullptr, false).device; }

uint64_t StreamOf(CUcontext ctx, CUstream s, bool ptsz) { return IdsOf(ctx, s, ptsz).stream_id; }

// A copy through unified addressing (cuMemcpy, cuMemcpyAsync): its direction from the
// pointers' memory types (one attribute query each; host memory CUDA does not know is host).
MemKind UnifiedKind(CUdeviceptr dst, CUdeviceptr src) {
  auto on_device = [](CUdeviceptr p) {
    unsigned int type = 0;
    return cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
           (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY);
  };
  const bool d = on_device(dst), s = on_device(src);
  return d && s ? MemKind::kDtoD : d ? MemKind::kHtoD : s ? MemKind::kDtoH : MemKind::kHtoH;
}

const char* NvtxText(const nvtxEventAttributes_t* a) {
  if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  return "";
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) StartRecorder();
    if (cbid == CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING ||
        cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
      g_generation.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  Recorder* r = Global();
  if (r == nullptr) return;
  const uint64_t now = MonotonicNs();
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const auto* nv = static_cast<const CUpti_NvtxData*>(data);
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxMarkA:
        r->Nvtx(now, NvtxKind::kMark, static_cast<const nvtxMarkA_params*>(nv->functionParams)->message, 0);
        break;
      case CUPTI_CBID_NVTX_nvtxMarkEx:
        r->Nvtx(now, NvtxKind::kMark, NvtxText(static_cast<const nvtxMarkEx_params*>(nv->functionParams)->eventAttrib), 0);
        break;
      case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
        r->Nvtx(now, NvtxKind::kMark,
                NvtxText(static_cast<const nvtxDomainMarkEx_params*>(nv->functionParams)->core.eventAttrib), 0);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        r->Nvtx(now, NvtxKind::kRangePush, static_cast<const nvtxRangePushA_params*>(nv->functionParams)->message, 0);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        r->Nvtx(now, NvtxKind::kRangePush,
                NvtxText(static_cast<const nvtxRangePushEx_params*>(nv->functionParams)->eventAttrib), 0);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
        r->Nvtx(now, NvtxKind::kRangePop, "", 0);
        break;
      default:
        break;
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  const CUcontext ctx = cb->context;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      // cuLaunchCooperativeKernel's parameters start with the same fields.
      const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      const uint32_t grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
      const uint32_t block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
      const bool ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                        cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
      r->Launch(now, cb->correlationId, reinterpret_cast<uint64_t>(p->f), cb->symbolName,
                DeviceOf(ctx), StreamOf(ctx, p->hStream, ptsz), grid, block, p->sharedMemBytes);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      const CUlaunchConfig* c = p->config;
      if (c == nullptr) {
        r->CountProblem();
        break;
      }
      const uint32_t grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
      const uint32_t block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
      r->Launch(now, cb->correlationId, reinterpret_cast<uint64_t>(p->f), cb->symbolName,
                DeviceOf(ctx),
                StreamOf(ctx, c->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz),
                grid, block, c->sharedMemBytes);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      r->Sync(now, SyncKind::kContext, DeviceOf(ctx), 0, 0);
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz: {
      const auto* p = static_cast<const cuStreamSynchronize_params*>(cb->functionParams);
      r->Sync(now, SyncKind::kStream, DeviceOf(ctx),
              StreamOf(ctx, p->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz), 0);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: {
      const auto* p = static_cast<const cuEventSynchronize_params*>(cb->functionParams);
      r->Sync(now, SyncKind::kEvent, DeviceOf(ctx), 0, reinterpret_cast<uint64_t>(p->hEvent));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      const auto* p = static_cast<const cuEventRecord_params*>(cb->functionParams);
      r->Sync(now, SyncKind::kEventRecord, DeviceOf(ctx),
              StreamOf(ctx, p->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz),
              reinterpret_cast<uint64_t>(p->hEvent));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      const auto* p = static_cast<const cuStreamWaitEvent_params*>(cb->functionParams);
      r->Sync(now, SyncKind::kStreamWaitEvent, DeviceOf(ctx),
              StreamOf(ctx, p->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz),
              reinterpret_cast<uint64_t>(p->hEvent));
      break;
    }
    // Copies and fills, asynchronous (on a stream) or not (the legacy default stream).
#define RERACE_MEMOP(CBID, PARAMS, KIND, BYTES, STREAM, PTSZ)                                   \
  case CUPTI_DRIVER_TRACE_CBID_##CBID: {                                                        \
    const auto* p = static_cast<const PARAMS*>(cb->functionParams);                             \
    (void)p;                                                                                    \
    r->MemOp(now, KIND, DeviceOf(ctx), StreamOf(ctx, STREAM, PTSZ), BYTES, cb->correlationId); \
    break;                                                                                      \
  }
      RERACE_MEMOP(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_params, MemKind::kHtoD, p->ByteCount, p->hStream, false)
      RERACE_MEMOP(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2_ptsz_params, MemKind::kHtoD, p->ByteCount, p->hStream, true)
      RERACE_MEMOP(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_params, MemKind::kDtoH, p->ByteCount, p->hStream, false)
      RERACE_MEMOP(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2_ptsz_params, MemKind::kDtoH, p->ByteCount, p->hStream, true)
      RERACE_MEMOP(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_params, MemKind::kDtoD, p->ByteCount, p->hStream, false)
      RERACE_MEMOP(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2_ptsz_params, MemKind::kDtoD, p->ByteCount, p->hStream, true)
      RERACE_MEMOP(cuMemcpyAsync, cuMemcpyAsync_params, UnifiedKind(p->dst, p->src), p->ByteCount, p->hStream, false)
      RERACE_MEMOP(cuMemcpyAsync_ptsz, cuMemcpyAsync_ptsz_params, UnifiedKind(p->dst, p->src), p->ByteCount, p->hStream, true)
      RERACE_MEMOP(cuMemcpyPeerAsync, cuMemcpyPeerAsync_params, MemKind::kPeer, p->ByteCount, p->hStream, false)
      RERACE_MEMOP(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync_ptsz_params, MemKind::kPeer, p->ByteCount, p->hStream, true)
      RERACE_MEMOP(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_params, MemKind::kHtoD, p->ByteCount, nullptr, false)
      RERACE_MEMOP(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2_ptds_params, MemKind::kHtoD, p->ByteCount, nullptr, true)
      RERACE_MEMOP(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_params, MemKind::kDtoH, p->ByteCount, nullptr, false)
      RERACE_MEMOP(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2_ptds_params, MemKind::kDtoH, p->ByteCount, nullptr, true)
      RERACE_MEMOP(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_params, MemKind::kDtoD, p->ByteCount, nullptr, false)
      RERACE_MEMOP(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2_ptds_params, MemKind::kDtoD, p->ByteCount, nullptr, true)
      RERACE_MEMOP(cuMemcpy, cuMemcpy_params, UnifiedKind(p->dst, p->src), p->ByteCount, nullptr, false)
      RERACE_MEMOP(cuMemcpy_ptds, cuMemcpy_ptds_params, UnifiedKind(p->dst, p->src), p->ByteCount, nullptr, true)
      RERACE_MEMOP(cuMemsetD8Async, cuMemsetD8Async_params, MemKind::kMemset, p->N, p->hStream, false)
      RERACE_MEMOP(cuMemsetD8Async_ptsz, cuMemsetD8Async_ptsz_params, MemKind::kMemset, p->N, p->hStream, true)
      RERACE_MEMOP(cuMemsetD32Async, cuMemsetD32Async_params, MemKind::kMemset, 4 * p->N, p->hStream, false)
      RERACE_MEMOP(cuMemsetD32Async_ptsz, cuMemsetD32Async_ptsz_params, MemKind::kMemset, 4 * p->N, p->hStream, true)
      RERACE_MEMOP(cuMemsetD8_v2, cuMemsetD8_v2_params, MemKind::kMemset, p->N, nullptr, false)
      RERACE_MEMOP(cuMemsetD8_v2_ptds, cuMemsetD8_v2_ptds_params, MemKind::kMemset, p->N, nullptr, true)
      RERACE_MEMOP(cuMemsetD32_v2, cuMemsetD32_v2_params, MemKind::kMemset, 4 * p->N, nullptr, false)
      RERACE_MEMOP(cuMemsetD32_v2_ptds, cuMemsetD32_v2_ptds_params, MemKind::kMemset, 4 * p->N, nullptr, true)
#undef RERACE_MEMOP
    default:
      break;
  }
}

bool Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "rerace recorder: %s failed: %s\n", what, msg ? msg : "?");
  return false;
}

void Init() {
  std::call_once(g_init_once, [] {
    for (size_t i = 0; i < kActivityBuffers; ++i) {
      // calloc: fresh pages, zero without being written (CUPTI wants 8-byte alignment; malloc
      // gives 16).
      if (void* p = std::calloc(1, kActivityBufferBytes)) g_pool.push_back(static_cast<uint8_t*>(p));
    }
    if (!Check(cuptiSubscribe(&g_subscriber, Callback, nullptr), "cuptiSubscribe")) return;
    Check(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE), "enable resource callbacks");
    Check(cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_NVTX), "enable NVTX callbacks");
    const CUpti_CallbackId driver[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
        CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
        CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz,
        // Copies and fills (the cases in Callback).
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    };
    for (CUpti_CallbackId id : driver)
      Check(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id), "enable a driver callback");
    // One activity buffer for the process, not one per thread (CUPTI's default since CUDA 12):
    // on the H200 a timed trial's record-launch-record took 27-29 us for the process's first
    // ~600 trials with a buffer per thread and 11-14 us after (6-7 us without CUPTI), 8-11 us
    // from the start with one buffer; the native step's per-thread-tuner recorded 17 % slow
    // with one per thread, 9 % with one (docs/RECORDER.md, "What recording costs"). Set before
    // the callbacks are registered and any kind enabled, as CUPTI requires; a CUPTI without
    // the attribute keeps its default, and RERACE_CUPTI_PER_THREAD_BUFFERS=1 asks for it.
    if (!std::getenv("RERACE_CUPTI_PER_THREAD_BUFFERS")) {
      uint8_t per_thread = 0;
      size_t size = sizeof per_thread;
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread);
    }
    // The pool's buffers come zeroed (calloc, and BufferCompleted clears what was used), so that
    // CUPTI does not clear 8 MiB in the launching thread when it takes one.
    uint8_t zeroed = 1;
    size_t zeroed_size = sizeof zeroed;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed);
    Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "register activity buffers");
    // CONCURRENT_KERNEL, never KERNEL (which serializes the GPU's kernels).
    Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernel activity");
  });
}

}  // namespace
}  // namespace rerace::recorder

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  rerace::recorder::Init();
  return 1;
}
