// rerace-train-step: the native multi-GPU training step (kernels/train_step.h), to record.
//
//   rerace record -o step.rrt -- build/bin/rerace-train-step --threads 8 --fix none
//
// Exit: 0 no failure, 1 a worker's tuner call failed, 64 usage, 70 a CUDA error, 77 no GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "rerace/kernels/cuda.h"
#include "rerace/kernels/train_step.h"

int main(int argc, char** argv) {
  using namespace rerace::kernels;
  TrainStepOptions o;
  CLI::App app{
      "rerace-train-step: a thread pool drives the GPUs through a training step (target forward "
      "passes on GPU pairs, a drafter on the other GPUs); every layer calls autotuned kernels "
      "(rmsnorm, matmul, l2norm_fwd) through rerace's native autotuner, which has Triton's "
      "shared-state design. Record it with `rerace record -- rerace-train-step ...`."};
  app.add_option("--threads", o.threads, "Worker threads")->default_val(8)->check(CLI::Range(1, 1024));
  app.add_option("--gpus", o.gpus,
                 "GPUs to use (0: every visible GPU, or with LOCAL_RANK set the one GPU "
                 "LOCAL_RANK % visible, as torchrun starts one process per GPU)")->default_val(0)->check(CLI::Range(0, 1024));
  app.add_option("--steps", o.steps, "Training steps")->default_val(3)->check(CLI::Range(1, 1000000));
  app.add_option("--tokens", o.tokens, "Rows of a micro-batch")->default_val(2048)->check(CLI::Range(1, 1 << 20));
  app.add_option("--dim", o.dim, "Model width")->default_val(1024)->check(CLI::Range(1, 1 << 16));
  app.add_option("--layers", o.layers, "Target layers per forward pass")->default_val(2)->check(CLI::Range(1, 1024));
  app.add_option("--reps", o.reps, "Timed repetitions per config when tuning")->default_val(5)->check(CLI::Range(1, 1000));
  app.add_option("--fix", o.fix,
                 "Fix of the autotuner: " + fmt::format("{}", fmt::join(TunerFixNames(), ", ")) +
                     ", or several joined by '+'")
      ->default_val("none");
  app.add_option("--seed", o.seed, "Seed of the random inputs")->default_val(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 64;
  }
  NvtxAnnouncer announce;
  auto r = RunTrainStep(o, announce);
  if (!r.ok()) {
    std::fprintf(stderr, "rerace-train-step: %s\n", r.error().message.c_str());
    return r.error().exit_code;
  }
  std::printf("rerace-train-step: %d threads, %d GPU(s) (%s), %d steps, fix %s\n", o.threads,
              r->gpus, r->roles.c_str(), o.steps, o.fix.c_str());
  for (size_t i = 0; i < r->step_ms.size(); ++i) std::printf("step %zu: %.3f ms\n", i, r->step_ms[i]);
  std::printf("throughput: %.0f tokens/s\n", r->tokens_per_s);
  for (const std::string& t : r->tuned) std::printf("tuned: %s\n", t.c_str());
  std::printf("failures: %zu\n", r->failures.size());
  for (const TrainStepFailure& f : r->failures)
    std::printf("  step %d %s: %s: %s (at %s)\n", f.step, f.thread.c_str(),
                f.where == "CUDA" ? "CUDA error" : kTunerErrorType, f.message.c_str(), f.where.c_str());
  return r->failures.empty() ? 0 : 1;
}
