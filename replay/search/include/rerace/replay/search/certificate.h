// rerace/replay/search/certificate.h: "holds for every interleaving of any K of the N recorded
// threads", a certificate a search can finish.
//
// No search covers every interleaving of a step's eight threads (docs/PERFORMANCE.md), but an
// unbounded DPOR search over every sub-program of K of them is complete and cheap for K = 2 or
// 3, and most concurrency bugs need two or three threads (the autotuner race needs two). A
// sub-program (model/program.h SubProgram) is K worker threads' recorded calls against the
// tuner state as recorded, the other threads absent.
//
// Symmetry. The K-thread combinations fall into classes: two combinations are in one class when
// their sub-programs are the same up to the order of the threads and a renaming of the objects
// they share (tuners, locks, streams) — the same calls, tuner classes and metadata, kernels,
// keys, configs, in-parameters, shapes, and the config each call's recorded timings select.
// What is left out (thread names, recorded times) changes only virtual time, never which
// interleavings exist or what a run finds (docs/MODEL.md, "Certificates"). So one search per
// class stands for every combination in it; `SymmetryClasses` finds the classes, with the
// lexicographically first combination of each as its representative.
//
//   const std::vector<SubsetClass> classes = SymmetryClasses(program, 3);
//   const Certificate c = Certify(program, options, 3, 200'000, 2);
//   if (c.counterexample) ... SubProgram(program, c.failing_threads) replays it ...
//
// Deterministic: the classes, every count and the counterexample are the same for any `jobs`
// (each class's search is; a failure found by a later class while an earlier one is still
// running is kept only when every earlier class holds). `Certify` may run classes on `jobs`
// threads, each with its own Replayer; it must be called from one thread, and calls `progress`
// on that thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rerace/replay/engine/replay.h"
#include "rerace/replay/model/program.h"
#include "rerace/replay/model/result.h"
#include "rerace/replay/search/check.h"

namespace rerace::replay {

// Per class, when --max-runs is not given: the model's unbounded DPOR runs thousands of runs a
// second, the real code tens.
inline constexpr uint64_t kCertificateMaxRuns = 1'000'000;
inline constexpr uint64_t kCertificateMaxRunsPython = 20'000;
// The most K-thread combinations a certificate enumerates (each has its symmetry key made).
inline constexpr uint64_t kMaxCertificateCombinations = 200'000;

// The indices (into p.threads) of the threads a certificate chooses from: the workers.
std::vector<uint32_t> WorkerIndices(const Program& p);

struct SubsetClass {
  std::vector<uint32_t> threads;  // the representative: indices into p.threads, ascending
  uint64_t combinations = 0;      // the K-thread combinations it stands for
};
// The classes of the K-thread combinations of p's workers, in the order of their
// representatives. REQUIRES: 1 <= k <= WorkerIndices(p).size().
std::vector<SubsetClass> SymmetryClasses(const Program& p, uint32_t k);
// The class key of one combination (indices into p.threads): two combinations are in one class
// exactly when their keys are equal (the least text of their sub-program over the orders of its
// threads, tuners, locks and streams renamed by first appearance).
std::string SymmetryKey(const Program& p, std::vector<uint32_t> combination);
// C(n, k), saturating at UINT64_MAX.
uint64_t Combinations(uint64_t n, uint64_t k);

struct Certificate {
  uint32_t threads = 0;       // K
  uint32_t of = 0;            // N: the recording's worker threads
  uint64_t classes = 0;
  uint64_t combinations = 0;  // C(N, K)
  uint64_t runs = 0;          // the runs of the classes searched (up to a failing one)
  uint64_t searched = 0;      // classes whose search ended (exhausted, or failed)
  bool complete = false;      // every class searched to its end, none failed
  // The first class (in order) whose search its budget stopped, when none failed.
  std::optional<SubsetClass> stopped;
  // A failure: the first failing class's threads and its counterexample, a run of
  // SubProgram(p, failing_threads).
  std::vector<uint32_t> failing_threads;
  std::optional<ReplayResult> counterexample;
};

// Unbounded DPOR (sim/explore.h, no preemption bound: nothing cut) over each class's
// representative sub-program, each within `max_runs` runs, on `jobs` threads (0: 1). A class
// that fails ends the certificate (classes after it are not searched).
Certificate Certify(const Program& p, const ReplayOptions& options, uint32_t k, uint64_t max_runs,
                    unsigned jobs, const CheckProgress& progress = {});

// "every interleaving of any 3 of the 8 recorded threads (1 class standing for 56 combinations;
// 19128 runs)": what a complete certificate certifies, in words.
std::string CertificateWords(const Certificate& c);
// The JSON object `{"threads":3,"of":8,"classes":1,"combinations":56,"runs":19128,"complete":true}`.
std::string CertificateJson(const Certificate& c);

}  // namespace rerace::replay
