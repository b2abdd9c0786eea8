// kernels/src/autotuner.cc: the native autotuner (see autotuner.h), its fixes and Owners.
//
// The structure follows triton/runtime/autotuner.py 3.6 step by step (Autotuner.run lines
// 213-257, benchmark() 231-235, _bench 143, the default hooks 61-75), so that rerace's model
// of Triton's tuner, with native names, is a model of this one.
#include "rerace/kernels/autotuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "rerace/base/named_fix.h"
#include "rerace/recorder/grammar.h"

namespace rerace::kernels {

namespace {
// The switch each named fix (rerace/base/named_fix.h, the table replay parses too) sets; none
// for "none".
bool TunerFix::*SwitchOf(NamedFixId id) {
  switch (id) {
    case NamedFixId::kNone: return nullptr;
    case NamedFixId::kLockRun: return &TunerFix::lock_run;
    case NamedFixId::kTlsNargs: return &TunerFix::tls_nargs;
    case NamedFixId::kCallLocal: return &TunerFix::call_local;
    case NamedFixId::kLockKeyFuture: return &TunerFix::key_future;
    case NamedFixId::kPerThreadTuner: return &TunerFix::per_thread_tuner;
    case NamedFixId::kPrewarm: return &TunerFix::prewarm;
    case NamedFixId::kOwnerThread: return &TunerFix::owner_thread;
    // The Python patches' designs, natively: per-call state is per-thread state made stricter
    // (no field of one call reaches another), and the per-key event is the per-key future
    // (the first thread to miss a key tunes it, the others wait for it). Same verdicts on
    // parallel threads; the model replays the patches' own steps (replay/model/src/fix.cc).
    case NamedFixId::kTlsState: return &TunerFix::call_local;
    case NamedFixId::kLockKeyEvent: return &TunerFix::key_future;
  }
  return nullptr;
}

// lock-run: one lock for every tuner in the process (Python's module-level lock).
std::mutex& GlobalRunLock() {
  static std::mutex m;
  return m;
}
}  // namespace

const std::vector<std::string>& TunerFixNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const NamedFix& f : kNamedFixes) v.push_back(f.name);
    return v;
  }();
  return names;
}

Result<TunerFix> ParseTunerFix(const std::string& text) {
  TunerFix f;
  f.name = text.empty() ? "none" : text;
  size_t start = 0;
  while (!text.empty()) {
    const size_t plus = text.find('+', start);
    const std::string n = text.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    const NamedFix* hit = FindNamedFix(n);
    if (hit == nullptr)
      return Error{fmt::format("unknown fix '{}' in '{}'; the native autotuner knows: {}", n, text,
                               fmt::join(TunerFixNames(), ", ")),
                   kExitUsage};
    if (bool TunerFix::*on = SwitchOf(hit->id); on != nullptr) f.*on = true;
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return f;
}

// ---- Owners ----

Owners::~Owners() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [d, q] : queues_) {
    {
      std::lock_guard<std::mutex> qg(q->mu);
      q->stop = true;
    }
    q->cv.notify_all();
    q->thread.join();
  }
}

void Owners::Submit(int device, const std::function<void()>& work) {
  Queue* q = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& slot = queues_[device];
    if (!slot) {
      slot = std::make_unique<Queue>();
      Queue* raw = slot.get();
      raw->thread = std::thread([raw, device] {
        const std::string name = fmt::format("gpu{}-owner", device);
        pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
        for (;;) {
          std::packaged_task<void()> task;
          {
            std::unique_lock<std::mutex> l(raw->mu);
            raw->cv.wait(l, [raw] { return raw->stop || !raw->work.empty(); });
            if (raw->work.empty()) return;
            task = std::move(raw->work.front());
            raw->work.pop_front();
          }
          task();
        }
      });
    }
    q = slot.get();
  }
  std::packaged_task<void()> task(work);
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> l(q->mu);
    q->work.push_back(std::move(task));
  }
  q->cv.notify_one();
  done.get();  // rethrows the owner's TunerError
}

// ---- Autotuner ----

struct Autotuner::Copies {
  Backend* backend = nullptr;
  int device = 0;
  std::vector<Arg> saved;  // by in-parameter index (position in restore_value); empty: {}
  ~Copies() {
    for (const Arg& a : saved) backend->Free(a, device);
  }
};

namespace {
// tls-nargs / call-local: the fields that live per thread, per tuner.
struct LocalFields {
  std::shared_ptr<const Call> nargs;
  std::shared_ptr<void> copies;
};
thread_local std::map<const void*, LocalFields> tls_fields;
}  // namespace

Autotuner::Autotuner(KernelSpec spec, Backend& backend, Announcer& announcer, Options options)
    : spec_(std::move(spec)), backend_(backend), announce_(announcer), options_(std::move(options)) {}

Autotuner::~Autotuner() = default;

std::string Autotuner::KeyOf(const Call& call) const {
  std::string out = "(";
  for (size_t i = 0; i < spec_.key.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(call.args.at(spec_.key[i]).value);
  }
  return out + (spec_.key.size() == 1 ? ",)" : ")");
}

int Autotuner::CachedConfig(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? -1 : it->second;
}

void Autotuner::Mark(traces::TunerKind kind, int config, const std::string& key,
                     traces::TunerField field, std::vector<double> timings, uint32_t reps) {
  if (!announce_.Enabled()) return;
  recorder::TunerMark m;
  m.tuner_class = kTunerClass;
  m.kernel = spec_.name;
  m.event.kind = kind;
  m.event.tuner = reinterpret_cast<uintptr_t>(this);
  m.event.key = key;
  m.event.config = config;
  m.event.field = field;
  m.event.timings_ms = std::move(timings);
  m.event.repetitions = reps;
  if (kind == traces::TunerKind::kCallBegin) {
    m.event.configs = spec_.configs;
    m.event.arg_names = spec_.arg_names;
    m.event.restore_value = spec_.restore_value;
    m.event.reset_to_zero = spec_.reset_to_zero;
  }
  announce_.Mark(recorder::EncodeTunerMark(m));
}

void Autotuner::MarkError(const std::string& key, const TunerError& e) {
  if (!announce_.Enabled()) return;
  recorder::TunerMark m;
  m.tuner_class = kTunerClass;
  m.kernel = spec_.name;
  m.event.kind = traces::TunerKind::kError;
  m.event.tuner = reinterpret_cast<uintptr_t>(this);
  m.event.key = key;
  m.event.error_type = kTunerErrorType;
  m.event.error_message = e.what();
  m.event.error_where = e.where();
  announce_.Mark(recorder::EncodeTunerMark(m));
}

void Autotuner::MarkLock(const char* kind) {
  if (!announce_.Enabled()) return;
  announce_.Mark(fmt::format("rerace:lock kind={} lock={:#x} name=global%20autotune%20lock", kind,
                             reinterpret_cast<uintptr_t>(&GlobalRunLock())));
}

Autotuner::Nargs Autotuner::ReadNargs() {
  std::lock_guard<std::mutex> g(mu_);
  Mark(traces::TunerKind::kFieldRead, -1, "", traces::TunerField::kNargs);
  if (options_.fix.tls_nargs || options_.fix.call_local) return tls_fields[this].nargs;
  return nargs_;
}

void Autotuner::WriteNargs(Nargs v) {
  std::lock_guard<std::mutex> g(mu_);
  Mark(traces::TunerKind::kFieldWrite, -1, "", traces::TunerField::kNargs);
  if (options_.fix.tls_nargs || options_.fix.call_local) {
    tls_fields[this].nargs = std::move(v);
    return;
  }
  nargs_ = std::move(v);
}

std::shared_ptr<Autotuner::Copies> Autotuner::ReadCopies() {
  std::lock_guard<std::mutex> g(mu_);
  Mark(traces::TunerKind::kFieldRead, -1, "", traces::TunerField::kRestoreCopies);
  if (options_.fix.call_local) return std::static_pointer_cast<Copies>(tls_fields[this].copies);
  return restore_copies_;
}

void Autotuner::WriteCopies(std::shared_ptr<Copies> v) {
  std::shared_ptr<Copies> old;  // freed outside the lock
  std::lock_guard<std::mutex> g(mu_);
  Mark(traces::TunerKind::kFieldWrite, -1, "", traces::TunerField::kRestoreCopies);
  if (options_.fix.call_local) {
    old = std::static_pointer_cast<Copies>(tls_fields[this].copies);
    tls_fields[this].copies = std::move(v);
    return;
  }
  old = std::move(restore_copies_);
  restore_copies_ = std::move(v);
}

void Autotuner::Run(const Call& call) {
  if (options_.fix.owner_thread) {
    if (options_.owners == nullptr)
      throw std::logic_error("Autotuner: fix owner-thread needs Options::owners");
    options_.owners->Submit(call.device, [&] { RunHere(call); });
    return;
  }
  if (!options_.fix.lock_run) {
    RunHere(call);
    return;
  }
  std::lock_guard<std::mutex> g(GlobalRunLock());
  MarkLock("acquire");
  try {
    RunHere(call);
  } catch (...) {
    MarkLock("release");
    throw;
  }
  MarkLock("release");
}

void Autotuner::RunHere(const Call& call) {
  const std::string own_key = KeyOf(call);
  int config_done = -1;
  Mark(traces::TunerKind::kCallBegin, -1, own_key);
  try {
    // autotuner.py:213 self.nargs = dict(zip(self.arg_names, args))
    WriteNargs(std::make_shared<const Call>(call));
    std::string key = own_key;
    int config = 0;
    if (spec_.configs.size() > 1) {
      // 216: all_args = {**self.nargs, **kwargs}; the key comes from whatever nargs holds now.
      const Nargs n = ReadNargs();
      if (!n) throw TunerError("nargs is null while computing the key", kWhereRun);
      key = KeyOf(*n);
      // 223: if key not in self.cache
      if (CachedConfig(key) < 0) {
        if (!options_.fix.key_future) {
          Benchmark(call, key);
        } else {
          std::promise<int> mine;
          std::shared_future<int> f;
          bool owner = false;
          {
            std::lock_guard<std::mutex> g(key_mu_);
            auto it = key_futures_.find(key);
            if (it == key_futures_.end()) {
              f = mine.get_future().share();
              key_futures_.emplace(key, f);
              owner = true;
            } else {
              f = it->second;
            }
          }
          if (owner) {
            int best = -1;
            try {
              best = Benchmark(call, key);
            } catch (...) {
              mine.set_value(-1);
              throw;
            }
            mine.set_value(best);
          } else {
            f.get();
          }
        }
      }
      // 242: config = self.cache[key]
      config = std::max(CachedConfig(key), 0);
    }
    {
      // 245: self.best_config = config
      std::lock_guard<std::mutex> g(mu_);
      Mark(traces::TunerKind::kFieldWrite, -1, "", traces::TunerField::kBestConfig);
      best_config_ = config;
    }
    Mark(traces::TunerKind::kLaunch, config);
    spec_.launch(static_cast<size_t>(config), call);
    // 257: self.nargs = None
    WriteNargs(nullptr);
    config_done = config;
  } catch (const TunerError& e) {
    MarkError(own_key, e);
    throw;
  }
  Mark(traces::TunerKind::kCallEnd, config_done, own_key);
}

int Autotuner::Benchmark(const Call& call, const std::string& key) {
  std::vector<double> timings(spec_.configs.size(), std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < spec_.configs.size(); ++i) {
    uint32_t reps = 0;
    timings[i] = Bench(call, i, &reps);
  }
  const int best =
      static_cast<int>(std::min_element(timings.begin(), timings.end()) - timings.begin());
  {
    std::lock_guard<std::mutex> g(mu_);
    bench_time_ = 0;  // 231 (the model's point; its value is not used)
    Mark(traces::TunerKind::kFieldWrite, -1, "", traces::TunerField::kCache);
    cache_[key] = best;  // 232
  }
  // 233: full_nargs = {**self.nargs, ...}; the reset-only pre-hook zeroes reset_to_zero.
  const Nargs n = ReadNargs();
  if (!n) throw TunerError("nargs is null after benchmarking", kWhereBenchmark);
  for (uint32_t r : spec_.reset_to_zero) backend_.Zero(n->args.at(r), call.stream);
  {
    std::lock_guard<std::mutex> g(mu_);
    configs_timings_ = timings;  // 235
  }
  return best;
}

double Autotuner::Bench(const Call& call, size_t config, uint32_t* reps_done) {
  Mark(traces::TunerKind::kBenchBegin, static_cast<int>(config));
  // 143: full_nargs = {**self.nargs, **current}: the trial runs on whatever nargs holds.
  const Nargs n = ReadNargs();
  if (!n) {
    throw TunerError(fmt::format("nargs is null while benchmarking config {}", config), kWhereBench);
  }
  std::vector<double> ms;
  ms.reserve(options_.reps);
  for (uint32_t r = 0; r < options_.reps; ++r) {
    PreHook(n, call, config);
    ms.push_back(backend_.Time([&] { spec_.launch(config, Call{n->args, call.device, call.stream}); },
                               call.device, call.stream));
    PostHook(n, call, config);
  }
  *reps_done = options_.reps;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  Mark(traces::TunerKind::kBenchEnd, static_cast<int>(config), "", traces::TunerField::kNone, {median}, options_.reps);
  return median;
}

void Autotuner::PreHook(const Nargs& n, const Call& call, size_t config) {
  Mark(traces::TunerKind::kPreHook, static_cast<int>(config));
  for (uint32_t r : spec_.reset_to_zero) backend_.Zero(n->args.at(r), call.stream);
  if (spec_.restore_value.empty()) return;
  // 63: self.restore_copies = {name: kwargs[name].clone() for name in self.restore_value}
  auto copies = std::make_shared<Copies>();
  copies->backend = &backend_;
  copies->device = call.device;
  for (uint32_t r : spec_.restore_value)
    copies->saved.push_back(backend_.Clone(n->args.at(r), call.device, call.stream));
  WriteCopies(std::move(copies));
}

void Autotuner::PostHook(const Nargs& n, const Call& call, size_t config) {
  Mark(traces::TunerKind::kPostHook, static_cast<int>(config));
  if (spec_.restore_value.empty()) return;
  // 74: for name in self.restore_value: kwargs[name].copy_(self.restore_copies[name])
  for (size_t i = 0; i < spec_.restore_value.size(); ++i) {
    const std::shared_ptr<Copies> c = ReadCopies();
    if (!c || i >= c->saved.size())
      throw TunerError(fmt::format("In-parameter input {} is not in the cache", i), kWherePostHook);
    backend_.CopyInto(n->args.at(spec_.restore_value[i]), c->saved[i], call.stream);
  }
  // 75: self.restore_copies = {}
  WriteCopies(nullptr);
}

}  // namespace rerace::kernels
