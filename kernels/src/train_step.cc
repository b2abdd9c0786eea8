// kernels/src/train_step.cc: the training-step workload (see train_step.h).
#include "rerace/kernels/train_step.h"

#include <fmt/format.h>
#include <pthread.h>

#include <barrier>
#include <cstdlib>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "rerace/kernels/cuda.h"

namespace rerace::kernels {

namespace {

struct Buffer {
  float* p = nullptr;
  size_t n = 0;
  int device = 0;
  Arg arg() const { return Arg{p, n * sizeof(float), 0}; }
};

Buffer Alloc(int device, size_t n) {
  Buffer b;
  b.device = device;
  b.n = n;
  Check(cudaSetDevice(device), "cudaSetDevice");
  Check(cudaMalloc(&b.p, n * sizeof(float)), "cudaMalloc (workload)");
  return b;
}

void FillRandom(const Buffer& b, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> h(b.n);
  for (float& v : h) v = d(rng);
  Check(cudaSetDevice(b.device), "cudaSetDevice");
  Check(cudaMemcpy(b.p, h.data(), b.n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy (init)");
}

Arg Int(int64_t v) { return Arg{nullptr, 0, v}; }

// The tuners a worker calls: shared, or its own (per-thread-tuner).
struct Tuners {
  std::unique_ptr<Autotuner> rms, mm, l2;
};

Tuners MakeTuners(Backend& b, Announcer& a, const Autotuner::Options& o) {
  Tuners t;
  t.rms = std::make_unique<Autotuner>(RmsNormSpec(), b, a, o);
  t.mm = std::make_unique<Autotuner>(MatmulSpec(), b, a, o);
  t.l2 = std::make_unique<Autotuner>(L2NormSpec(), b, a, o);
  return t;
}

// One worker's tensors and streams for its role.
struct Worker {
  std::string name;
  bool drafter = false;
  int gpu_a = 0, gpu_b = 0;
  std::map<int, cudaStream_t> stream;       // per GPU
  std::map<int, std::vector<Buffer>> act;   // per GPU: x, h, h2, w(norm), W(layer)
};

// One layer on `gpu`: h = rmsnorm(x, w); h2 = h W; x = l2norm(h2).
void Layer(Tuners& t, Worker& w, int gpu, int64_t rows, int64_t dim, int64_t n_out) {
  auto& a = w.act.at(gpu);
  const Stream s = w.stream.at(gpu);
  t.rms->Run(Call{{a[0].arg(), a[3].arg(), a[1].arg(), Int(rows), Int(dim)}, gpu, s});
  t.mm->Run(Call{{a[1].arg(), a[4].arg(), a[2].arg(), Int(rows), Int(n_out), Int(dim)}, gpu, s});
  t.l2->Run(Call{{a[2].arg(), a[0].arg(), Int(rows), Int(n_out)}, gpu, s});
}

}  // namespace

Result<TrainStepReport> RunTrainStep(const TrainStepOptions& o, Announcer& announce) {
  if (o.threads < 1 || o.steps < 1 || o.layers < 1 || o.tokens < 1 || o.dim < 1 || o.gpus < 0)
    return Error{"--threads, --steps, --layers, --tokens and --dim must be >= 1, --gpus >= 0",
                 kExitUsage};
  auto fix = ParseTunerFix(o.fix);
  if (!fix.ok()) return fix.error();
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0)
    return Error{"no CUDA device", 77};
  // One process per GPU, as torchrun starts them: LOCAL_RANK picks this process's GPU.
  int first = 0;
  int g = o.gpus == 0 ? visible : o.gpus;
  if (const char* lr = std::getenv("LOCAL_RANK"); lr != nullptr && *lr != 0 && o.gpus == 0) {
    char* end = nullptr;
    const long rank = std::strtol(lr, &end, 10);
    if (*end != 0 || rank < 0) return Error{fmt::format("LOCAL_RANK '{}' is not a rank", lr), kExitUsage};
    first = static_cast<int>(rank % visible);
    g = 1;
  }
  if (g > visible)
    return Error{fmt::format("--gpus {} but only {} visible", o.gpus, visible), kExitUsage};
  TrainStepReport rep;
  rep.gpus = g;
  try {
    const Roles roles = AssignRoles(o.threads, g, first);
    rep.roles = roles.text;
    // Peer access between every two GPUs (activations cross a pair; a racing tuner may even
    // benchmark on another thread's tensors, as Triton would).
    for (int a = first; a < first + g; ++a)
      for (int b = first; b < first + g; ++b) {
        if (a == b) continue;
        int ok = 0;
        cudaDeviceCanAccessPeer(&ok, a, b);
        if (!ok) continue;
        Check(cudaSetDevice(a), "cudaSetDevice");
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) Check(e, "cudaDeviceEnablePeerAccess");
        cudaGetLastError();
      }

    CudaBackend backend;
    Owners owners;
    Autotuner::Options to;
    to.fix = *fix;
    to.reps = o.reps;
    to.owners = &owners;
    const int64_t rows = o.tokens, dim = o.dim;
    std::vector<Worker> workers(static_cast<size_t>(o.threads));
    uint64_t seed = o.seed;
    for (int i = 0; i < o.threads; ++i) {
      Worker& w = workers[static_cast<size_t>(i)];
      const WorkerRole& role = roles.workers[static_cast<size_t>(i)];
      w.drafter = role.drafter;
      w.name = fmt::format("{}-{}", w.drafter ? "drafter" : "worker", i);
      w.gpu_a = role.gpu_a;
      w.gpu_b = role.gpu_b;
      for (int gpu : {w.gpu_a, w.gpu_b}) {
        if (w.stream.count(gpu)) continue;
        Check(cudaSetDevice(gpu), "cudaSetDevice");
        cudaStream_t s;
        Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        w.stream[gpu] = s;
        auto& a = w.act[gpu];
        const size_t big = static_cast<size_t>(std::max(rows, dim) * dim);
        for (int k = 0; k < 3; ++k) a.push_back(Alloc(gpu, big));
        a.push_back(Alloc(gpu, static_cast<size_t>(dim)));        // norm weight
        a.push_back(Alloc(gpu, static_cast<size_t>(dim * dim)));  // layer weight
        FillRandom(a[0], ++seed, 1.0f);
        FillRandom(a[3], ++seed, 1.0f);
        FillRandom(a[4], ++seed, 1.0f / static_cast<float>(std::sqrt(static_cast<double>(dim))));
      }
    }

    // The tuners: one set shared by every worker (the kernel objects of a module), or one per
    // worker under per-thread-tuner.
    Tuners shared = MakeTuners(backend, announce, to);
    std::vector<Tuners> own;
    if (fix->per_thread_tuner)
      for (int i = 0; i < o.threads; ++i) own.push_back(MakeTuners(backend, announce, to));
    auto tuners_of = [&](size_t i) -> Tuners& { return fix->per_thread_tuner ? own[i] : shared; };

    if (fix->prewarm) {
      // Every key, serially, on the main thread, before the workers start.
      Worker& w = workers[0];
      Layer(shared, w, w.gpu_a, rows, dim, dim);
      auto& a = w.act.at(w.gpu_a);  // and the drafter's weight-gradient matmul key
      shared.mm->Run(Call{{a[0].arg(), a[1].arg(), a[2].arg(), Int(dim), Int(dim), Int(rows)},
                          w.gpu_a, w.stream.at(w.gpu_a)});
      for (auto& [gpu, s] : w.stream) Check(cudaStreamSynchronize(s), "prewarm sync");
    }

    std::mutex mu;  // failures
    std::barrier start(o.threads + 1), done(o.threads + 1);
    std::vector<std::thread> pool;
    for (int i = 0; i < o.threads; ++i) {
      pool.emplace_back([&, i] {
        Worker& w = workers[static_cast<size_t>(i)];
        pthread_setname_np(pthread_self(), w.name.substr(0, 15).c_str());
        for (int step = 0; step < o.steps; ++step) {
          start.arrive_and_wait();
          const char* kernel = "";
          try {
            Tuners& t = tuners_of(static_cast<size_t>(i));
            if (w.drafter) {
              Layer(t, w, w.gpu_a, rows, dim, dim);
              // The weight gradient: (dim x rows) (rows x dim), another matmul key.
              auto& a = w.act.at(w.gpu_a);
              kernel = "matmul";
              t.mm->Run(Call{{a[0].arg(), a[1].arg(), a[2].arg(), Int(dim), Int(dim), Int(rows)},
                             w.gpu_a, w.stream.at(w.gpu_a)});
            } else {
              const int half = std::max(1, o.layers / 2);
              for (int l = 0; l < o.layers; ++l) {
                const int gpu = l < half ? w.gpu_a : w.gpu_b;
                if (l == half && w.gpu_a != w.gpu_b) {
                  // Hand the activations to the pair's second GPU.
                  Check(cudaStreamSynchronize(w.stream.at(w.gpu_a)), "pipeline sync");
                  Check(cudaMemcpyPeerAsync(w.act.at(w.gpu_b)[0].p, w.gpu_b, w.act.at(w.gpu_a)[0].p,
                                            w.gpu_a, static_cast<size_t>(rows * dim) * sizeof(float),
                                            w.stream.at(w.gpu_b)),
                        "cudaMemcpyPeerAsync");
                }
                Layer(t, w, gpu, rows, dim, dim);
              }
            }
            for (auto& [gpu, s] : w.stream) Check(cudaStreamSynchronize(s), "step sync");
          } catch (const TunerError& e) {
            std::lock_guard<std::mutex> l(mu);
            rep.failures.push_back({w.name, step, kernel, e.what(), e.where()});
            for (auto& [gpu, s] : w.stream) cudaStreamSynchronize(s);
          } catch (const std::exception& e) {  // a CUDA error: reported, not a tuner failure
            std::lock_guard<std::mutex> l(mu);
            rep.failures.push_back({w.name, step, kernel, e.what(), "CUDA"});
          }
          done.arrive_and_wait();
        }
      });
    }
    double total_ms = 0;
    for (int step = 0; step < o.steps; ++step) {
      const auto t0 = std::chrono::steady_clock::now();
      start.arrive_and_wait();
      done.arrive_and_wait();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      rep.step_ms.push_back(ms);
      total_ms += ms;
    }
    for (auto& th : pool) th.join();
    int targets = 0;
    for (const Worker& w : workers) targets += !w.drafter;
    rep.tokens_per_s = total_ms > 0 ? static_cast<double>(targets) * static_cast<double>(rows) *
                                          o.steps / (total_ms / 1000.0)
                                    : 0;
    for (Autotuner* t : {shared.rms.get(), shared.mm.get(), shared.l2.get()}) {
      for (const std::string& key : {fmt::format("({},)", dim), fmt::format("({}, {}, {})", rows, dim, dim),
                                     fmt::format("({}, {}, {})", dim, dim, rows)}) {
        const int c = t->CachedConfig(key);
        if (c >= 0) rep.tuned.push_back(fmt::format("{} {} -> {}", t->spec().name, key, t->spec().configs[static_cast<size_t>(c)]));
      }
    }
    for (Worker& w : workers)
      for (auto& [gpu, bufs] : w.act) {
        cudaSetDevice(gpu);
        for (Buffer& b : bufs) cudaFree(b.p);
        cudaStreamDestroy(w.stream.at(gpu));
      }
  } catch (const CudaError& e) {
    return Error{fmt::format("{}", e.what()), kExitInternal};
  }
  return rep;
}

}  // namespace rerace::kernels
