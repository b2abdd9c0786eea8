// rerace/kernels/train_step.h: a multi-GPU training step driven by a thread pool (RERACE_CUDA).
//
// The brief's situation in C++: a pool of `threads` workers, released together each step by a
// barrier, drives the GPUs. Workers run target-model forward passes on GPU pairs (the first
// half of the layers on one GPU, the activations copied to the other, the second half there),
// and a drafter trains on the remaining GPUs (a forward layer and a weight-gradient matmul).
// Every layer calls the autotuned kernels (rmsnorm, matmul, l2norm_fwd), shared by all workers
// unless the fix says otherwise, so a cold cache is tuned by several threads at once.
//
// GPU roles for G GPUs:  G = 1: target pair (0,0), drafter on 0.  G = 2: pair (0,1), drafter
// on 1.  G >= 3: drafter on G-1; pairs (0,1), (2,3), ... over the first G-1 (an odd one out
// pairs with itself). Worker i is a drafter when i % 4 == 3, else it runs pair i % pairs.
// With one GPU, every worker has its own stream on it. With LOCAL_RANK set (and --gpus 0), the
// process drives one GPU, LOCAL_RANK modulo the visible ones, as torchrun's one process per GPU.
//
// A TunerError ends the worker's task for that step (as an exception in a Python future
// would) and is reported; the other workers go on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rerace/base/result.h"
#include "rerace/kernels/autotuner.h"

namespace rerace::kernels {

struct TrainStepOptions {
  int threads = 8;
  int gpus = 0;           // 0: every visible GPU
  int steps = 3;
  int64_t tokens = 2048;  // rows of a micro-batch
  int64_t dim = 1024;     // model width
  int layers = 2;
  uint32_t reps = 5;      // timed repetitions per config
  std::string fix = "none";
  uint64_t seed = 1;
};

struct TrainStepFailure {
  std::string thread;  // worker name
  int step = 0;
  std::string kernel;
  std::string message;
  std::string where;
};

struct TrainStepReport {
  int gpus = 0;
  std::string roles;                 // "target pairs (0,0); drafter on 0"
  std::vector<double> step_ms;       // wall time of each step
  double tokens_per_s = 0;           // target tokens over the steps' total time
  std::vector<TrainStepFailure> failures;
  std::vector<std::string> tuned;    // "l2norm_fwd (1024,) -> BLOCK=64,ROWS=2"
};

// Which GPUs each worker drives (the rules above). Pure; any thread.
struct WorkerRole {
  bool drafter = false;
  int gpu_a = 0, gpu_b = 0;  // the pair (first half of the layers on a, second on b); a == b
};
struct Roles {
  std::vector<std::pair<int, int>> pairs;
  int drafter_gpu = 0;
  std::vector<WorkerRole> workers;
  std::string text;  // "target pairs (0,1), (2,3); drafter on 4"
};
// REQUIRES: threads >= 1, gpus >= 1. GPUs are numbered from `first`.
Roles AssignRoles(int threads, int gpus, int first);

// Runs the workload. Errors: bad options (exit 64), no GPU (77 is the caller's), CUDA errors.
[[nodiscard]] Result<TrainStepReport> RunTrainStep(const TrainStepOptions& o, Announcer& announce);

}  // namespace rerace::kernels
