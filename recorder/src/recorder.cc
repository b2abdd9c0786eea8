// recorder/src/recorder.cc: per-thread buffers and the background writer.
#include "rerace/recorder/recorder.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "rerace/recorder/grammar.h"
#include "rerace/traces/writer.h"

namespace rerace::recorder {

using namespace rerace::traces;

namespace {
size_t Round8(size_t n) { return (n + 7) & ~size_t{7}; }
std::atomic<Recorder*> g_recorder{nullptr};
}  // namespace

Recorder* Global() { return g_recorder.load(std::memory_order_acquire); }
void SetGlobal(Recorder* r) { g_recorder.store(r, std::memory_order_release); }

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t OsThreadId() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

ThreadBuffer::ThreadBuffer(size_t capacity_bytes, uint64_t os_tid)
    : data_(new uint8_t[Round8(std::max<size_t>(capacity_bytes, 4096))]),
      capacity_(Round8(std::max<size_t>(capacity_bytes, 4096))),
      os_tid_(os_tid) {}

bool ThreadBuffer::Push(const RawRecord& r, const char* text, size_t text_len) {
  if (text_len > UINT16_MAX) text_len = UINT16_MAX;
  const size_t need = kPrefix + Round8(sizeof(RawRecord) + text_len);
  uint64_t h = head_.load(std::memory_order_relaxed);
  const uint64_t t = tail_.load(std::memory_order_acquire);
  size_t off = h % capacity_;
  const size_t until_end = capacity_ - off;
  const size_t waste = until_end < need ? until_end : 0;
  if (capacity_ - (h - t) < need + waste) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (waste != 0) {
    std::memcpy(data_.get() + off, &kWrapMarker, sizeof kWrapMarker);
    h += waste;
    off = 0;
  }
  const auto len = static_cast<uint32_t>(need);
  std::memcpy(data_.get() + off, &len, sizeof len);
  RawRecord copy = r;
  copy.text_len = static_cast<uint16_t>(text_len);
  std::memcpy(data_.get() + off + kPrefix, &copy, sizeof copy);
  if (text_len != 0) std::memcpy(data_.get() + off + kPrefix + sizeof copy, text, text_len);
  head_.store(h + need, std::memory_order_release);
  if ((h + need - t) * 8 > capacity_ && pressure_ != nullptr) pressure_->store(true, std::memory_order_relaxed);
  return true;
}

bool ThreadBuffer::NameSent(uint64_t function) {
  const uint64_t slot = (function >> 4) % kNameSlots;
  return names_[slot] == function;
}

void ThreadBuffer::MarkNameSent(uint64_t function) { names_[(function >> 4) % kNameSlots] = function; }

Recorder::Recorder(RecorderOptions options) : options_(std::move(options)) {
  static std::atomic<uint64_t> generations{0};
  generation_ = generations.fetch_add(1) + 1;
}

Result<std::unique_ptr<Recorder>> Recorder::Create(RecorderOptions options) {
  if (options.flush_period_ms == 0 || options.flush_period_ms > 100)
    return Error{"recorder: the flush period must be 1..100 ms", kExitUsage};
  auto w = TraceWriter::Create(options.path, options.header);
  if (!w) return w.error();
  std::unique_ptr<Recorder> r(new Recorder(std::move(options)));
  r->writer_ = std::move(*w);
  r->thread_ = std::thread([p = r.get()] { p->WriterLoop(); });
  return r;
}

Recorder::~Recorder() {
  if (!stopped_) (void)Stop({}, false);
}

ThreadBuffer* Recorder::BufferForThisThread() {
  // Keyed by the recorder's generation, not its address: a later recorder may reuse it.
  thread_local uint64_t owner = 0;
  thread_local ThreadBuffer* buffer = nullptr;
  if (owner == generation_) return buffer;
  auto b = std::make_unique<ThreadBuffer>(options_.buffer_bytes, OsThreadId());
  b->SetPressureFlag(&pressure_);
  ThreadBuffer* raw = b.get();
  {
    std::lock_guard<std::mutex> g(buffers_mu_);
    buffers_.push_back(std::move(b));
  }
  owner = generation_;
  buffer = raw;
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0 && name[0] != 0) {
    RawRecord r;
    r.kind = RawRecord::kThreadName;
    // Time 0: the OS name is a default, sorted before every record of the thread. The record
    // that made this buffer was timed before it existed; with the time of now, a probe's
    // `rerace:thread` mark as a thread's first record sorted first and the OS name ("python3")
    // then overwrote it.
    r.cpu_ns = 0;
    raw->Push(r, name, std::strlen(name));
  }
  return raw;
}

void Recorder::Launch(uint64_t cpu_ns, uint32_t correlation, uint64_t function, const char* name,
                      uint32_t device, uint64_t stream, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t shared_bytes) {
  ThreadBuffer* b = BufferForThisThread();
  RawRecord r;
  r.kind = RawRecord::kLaunch;
  r.cpu_ns = cpu_ns;
  r.correlation = correlation;
  r.function = function;
  r.device = device;
  r.stream = stream;
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = grid[i];
    r.block[i] = block[i];
  }
  r.shared_bytes = shared_bytes;
  const bool send_name = !b->NameSent(function) && name != nullptr;
  if (b->Push(r, send_name ? name : nullptr, send_name ? std::strlen(name) : 0) && send_name)
    b->MarkNameSent(function);
}

void Recorder::Sync(uint64_t cpu_ns, SyncKind kind, uint32_t device, uint64_t stream, uint64_t event) {
  RawRecord r;
  r.kind = RawRecord::kSync;
  r.sub = static_cast<uint8_t>(kind);
  r.cpu_ns = cpu_ns;
  r.device = device;
  r.stream = stream;
  r.handle = event;
  BufferForThisThread()->Push(r, nullptr, 0);
}

void Recorder::MemOp(uint64_t cpu_ns, MemKind kind, uint32_t device, uint64_t stream, uint64_t bytes,
                     uint32_t correlation) {
  RawRecord r;
  r.kind = RawRecord::kMemOp;
  r.sub = static_cast<uint8_t>(kind);
  r.cpu_ns = cpu_ns;
  r.device = device;
  r.stream = stream;
  r.handle = bytes;
  r.correlation = correlation;
  BufferForThisThread()->Push(r, nullptr, 0);
}

void Recorder::Nvtx(uint64_t cpu_ns, NvtxKind kind, const char* text, uint64_t range_id) {
  RawRecord r;
  r.kind = RawRecord::kNvtx;
  r.sub = static_cast<uint8_t>(kind);
  r.cpu_ns = cpu_ns;
  r.handle = range_id;
  BufferForThisThread()->Push(r, text, text ? std::strlen(text) : 0);
}

void Recorder::ThreadName(uint64_t cpu_ns, const char* name) {
  RawRecord r;
  r.kind = RawRecord::kThreadName;
  r.cpu_ns = cpu_ns;
  BufferForThisThread()->Push(r, name, name ? std::strlen(name) : 0);
}

void Recorder::AddActivity(uint32_t correlation, uint64_t gpu_start_ns, uint64_t gpu_end_ns) {
  Event e;
  e.kind = EventKind::kActivity;
  e.correlation = correlation;
  e.gpu_start_ns = gpu_start_ns;
  e.gpu_end_ns = gpu_end_ns;
  std::lock_guard<std::mutex> g(activity_mu_);
  activity_.push_back(e);
}

void Recorder::AddDropped(uint64_t records) { dropped_.fetch_add(records, std::memory_order_relaxed); }

void Recorder::WriterLoop() {
  // Wakes every 2 ms; drains when the flush period has passed, or at once when a ring is
  // over an eighth full (a thread launching a million kernels a second fills its 4 MiB ring
  // in about 45 ms). The producers only set a flag: no system call on their path.
  std::unique_lock<std::mutex> lk(stop_mu_);
  auto last = std::chrono::steady_clock::now();
  const auto period = std::chrono::milliseconds(options_.flush_period_ms);
  while (!stop_.load()) {
    stop_cv_.wait_for(lk, std::chrono::milliseconds(2));
    const auto now = std::chrono::steady_clock::now();
    if (!PressureAndClear() && now - last < period) continue;
    last = now;
    lk.unlock();
    if (auto r = DrainAll(); !r) CountProblem();
    lk.lock();
  }
}

Result<void> Recorder::FlushNow() { return DrainAll(); }

uint64_t Recorder::events_written() const { return writer_ ? writer_->events_written() : 0; }

Result<void> Recorder::DrainAll() {
  std::lock_guard<std::mutex> wg(write_mu_);
  // Reused from drain to drain (under write_mu_): no fresh multi-megabyte allocation, and
  // no page faults, each time a busy ring is drained.
  std::vector<DrainItem>& items = drain_items_;
  items.clear();
  {
    std::lock_guard<std::mutex> g(buffers_mu_);
    uint64_t order = 0;
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (thread_ids_.size() <= i)
        thread_ids_.push_back(writer_->AddThread(buffers_[i]->os_tid(), ""));
      buffers_[i]->Drain([&](const RawRecord& r, std::string_view text) {
        items.push_back({r.cpu_ns, i, order++, r, std::string(text)});
      });
    }

  }
  std::stable_sort(items.begin(), items.end(), [](const DrainItem& a, const DrainItem& b) {
    return a.cpu_ns < b.cpu_ns;
  });
  auto name_of = [&](uint64_t fn) -> std::optional<uint32_t> {
    auto it = std::lower_bound(function_names_.begin(), function_names_.end(),
                               std::make_pair(fn, uint32_t{0}));
    if (it != function_names_.end() && it->first == fn) return it->second;
    return std::nullopt;
  };
  for (const DrainItem& it : items) {
    const uint32_t thread = thread_ids_[it.buffer];
    const RawRecord& r = it.r;
    switch (r.kind) {
      case RawRecord::kThreadName:
        writer_->RenameThread(thread, it.text);
        break;
      case RawRecord::kLaunch: {
        uint32_t kernel;
        if (!it.text.empty()) {
          kernel = writer_->String(it.text);
          auto pos = std::lower_bound(function_names_.begin(), function_names_.end(),
                                      std::make_pair(r.function, uint32_t{0}));
          if (pos != function_names_.end() && pos->first == r.function) pos->second = kernel;
          else function_names_.insert(pos, {r.function, kernel});
        } else if (auto k = name_of(r.function)) {
          kernel = *k;
        } else {
          kernel = writer_->String("<unknown kernel>");
          CountProblem();
        }
        LaunchShape sh;
        sh.kernel = kernel;
        sh.device = r.device;
        sh.stream = r.stream;
        for (int i = 0; i < 3; ++i) {
          sh.grid[i] = std::max<uint32_t>(r.grid[i], 1);
          sh.block[i] = std::max<uint32_t>(r.block[i], 1);
        }
        sh.shared_bytes = r.shared_bytes;
        writer_->AppendLaunch(thread, r.cpu_ns, writer_->Shape(sh), r.correlation);
        launch_thread_.push_back({r.correlation, thread});
        break;
      }
      case RawRecord::kSync: {
        Event e;
        e.kind = EventKind::kSync;
        e.thread = thread;
        e.cpu_ns = r.cpu_ns;
        e.sync = static_cast<SyncKind>(r.sub);
        e.device = r.device;
        e.stream = r.stream;
        e.handle = r.handle;
        writer_->Append(e);
        break;
      }
      case RawRecord::kMemOp: {
        Event e;
        e.kind = EventKind::kMemOp;
        e.thread = thread;
        e.cpu_ns = r.cpu_ns;
        e.mem = static_cast<MemKind>(r.sub);
        e.device = r.device;
        e.stream = r.stream;
        e.bytes = r.handle;
        e.correlation = r.correlation;
        writer_->Append(e);
        break;
      }
      case RawRecord::kNvtx: {
        if (IsThreadMark(it.text)) {
          if (auto name = ParseThreadMark(it.text)) {
            writer_->RenameThread(thread, *name);
            break;
          }
          CountProblem();
        }
        if (IsLockMark(it.text)) {
          if (auto lm = ParseLockMark(it.text)) {
            Event e;
            e.kind = EventKind::kLock;
            e.thread = thread;
            e.cpu_ns = r.cpu_ns;
            e.lock = lm->kind;
            e.handle = lm->lock;
            e.text = writer_->String(lm->name);
            writer_->Append(e);
            break;
          }
          CountProblem();
        }
        if (IsTunerMark(it.text)) {
          auto m = ParseTunerMark(it.text);
          if (m) {
            TunerEvent te = std::move(m->event);
            te.tuner_class = writer_->String(m->tuner_class);
            te.kernel = writer_->String(m->kernel);
            writer_->AppendTuner(thread, r.cpu_ns, std::move(te));
            break;
          }
          CountProblem();  // a malformed tuner mark is kept as a free mark
        }
        Event e;
        e.kind = EventKind::kNvtx;
        e.thread = thread;
        e.cpu_ns = r.cpu_ns;
        e.nvtx = static_cast<NvtxKind>(r.sub);
        e.text = writer_->String(it.text);
        e.handle = r.handle;
        writer_->Append(e);
        break;
      }
      default:
        CountProblem();
    }
  }
  // Kernel activity, matched to launches written so far; the rest waits for its launch.
  std::sort(launch_thread_.begin(), launch_thread_.end());
  {
    std::lock_guard<std::mutex> g(activity_mu_);
    pending_activity_.insert(pending_activity_.end(), activity_.begin(), activity_.end());
    activity_.clear();
  }
  std::vector<Event> still;
  const uint64_t now = items.empty() ? MonotonicNs() : items.back().cpu_ns;
  for (Event& e : pending_activity_) {
    auto it = std::lower_bound(launch_thread_.begin(), launch_thread_.end(),
                               std::make_pair(e.correlation, uint32_t{0}));
    if (it == launch_thread_.end() || it->first != e.correlation) {
      still.push_back(e);
      continue;
    }
    writer_->AppendActivity(it->second, now, e.correlation, e.gpu_start_ns, e.gpu_end_ns);
  }
  pending_activity_ = std::move(still);
  return writer_->Flush();
}

Result<void> Recorder::Stop(std::vector<ClockPair> end_clock_pairs, bool complete) {
  if (stopped_) return {};
  stopped_ = true;
  {
    std::lock_guard<std::mutex> g(stop_mu_);
    stop_.store(true);
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto r = DrainAll();
  Footer f;
  uint64_t lost = 0;
  {
    std::lock_guard<std::mutex> g(buffers_mu_);
    for (const auto& b : buffers_) lost += b->dropped();
  }
  f.cupti_dropped = dropped_.load();
  f.problems = problems_.load() + lost + pending_activity_.size();
  f.complete = complete && lost == 0;
  f.end_clock_pairs = std::move(end_clock_pairs);
  auto fin = writer_->Finish(f);
  if (!r) return r;
  return fin;
}

}  // namespace rerace::recorder
