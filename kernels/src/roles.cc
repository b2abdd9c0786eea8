// kernels/src/roles.cc: which GPUs each worker of the training step drives (train_step.h).
#include <fmt/format.h>

#include <algorithm>

#include "rerace/kernels/train_step.h"

namespace rerace::kernels {

Roles AssignRoles(int threads, int gpus, int first) {
  Roles r;
  if (gpus == 1) {
    r.pairs = {{0, 0}};
    r.drafter_gpu = 0;
  } else if (gpus == 2) {
    r.pairs = {{0, 1}};
    r.drafter_gpu = 1;
  } else {
    r.drafter_gpu = gpus - 1;
    for (int i = 0; i < gpus - 1; i += 2) r.pairs.push_back({i, std::min(i + 1, gpus - 2)});
  }
  for (auto& [a, b] : r.pairs) {
    a += first;
    b += first;
  }
  r.drafter_gpu += first;
  size_t target = 0;  // targets take the pairs in turn, drafters aside
  for (int i = 0; i < threads; ++i) {
    WorkerRole w;
    w.drafter = i % 4 == 3;
    if (w.drafter) {
      w.gpu_a = w.gpu_b = r.drafter_gpu;
    } else {
      const auto& p = r.pairs[target++ % r.pairs.size()];
      w.gpu_a = p.first;
      w.gpu_b = p.second;
    }
    r.workers.push_back(w);
  }
  for (size_t i = 0; i < r.pairs.size(); ++i)
    r.text += fmt::format("{}({},{})", i ? ", " : "target pairs ", r.pairs[i].first, r.pairs[i].second);
  r.text += fmt::format("; drafter on {}", r.drafter_gpu);
  return r;
}

}  // namespace rerace::kernels
