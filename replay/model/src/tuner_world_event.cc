// replay/model/src/tuner_world_event.cc: fix lock-key-event, the patch's `run` around the model's.
//
// replay/engine/python/rerace_real/fixes/lock_key_event.py: under one lock, a thread whose key is in
// self.cache goes straight into Autotuner.run; the first to miss it makes the key's event and
// runs Autotuner.run (tunes); the others wait for the event and look again. The owner deletes
// the event under the lock and sets it when its run ends, raised or not.
#include <optional>

#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay::detail {

void TunerWorld::CallWithKeyEvent(uint32_t thread, const TunerCall& c, uint32_t call) {
  TunerState& st = StateFor(thread, c);
  const auto key = static_cast<size_t>(KeyId(c, c.key));
  bool owner = false;
  for (;;) {
    st.key_lock.Lock("lock_key_event.py:41 run: with _lock");
    if (st.Cache().ReadWith([&](const std::vector<int32_t>& v) { return v[key] >= 0; },
                          "lock_key_event.py:42 run: if key in self.cache"))
      break;
    if (!st.events[key]) {  // the first to miss the key: this thread tunes it
      st.events[key] = std::make_unique<sim::Promise<int32_t>>(s_, c.kernel + " key event");
      owner = true;
      break;
    }
    sim::Future<int32_t> event = st.events[key]->GetFuture();
    st.key_lock.Unlock("lock_key_event.py:41 run: with _lock (end)");
    event.Get("lock_key_event.py:51 run: event.wait()");
  }
  st.key_lock.Unlock("lock_key_event.py:41 run: with _lock (end)");
  auto run = [&] {
    Locked(LockFor(Region::kRun), "lock around Autotuner.run", [&] {
      gpu_.Cpu(c.call_cpu_ns, true);
      model_.Run(*this, thread, c, call);
    });
  };
  if (!owner) {
    run();
    return;
  }
  std::optional<PyError> err;
  try {
    run();
  } catch (PyError& e) {
    err = std::move(e);
  }
  st.key_lock.Lock("lock_key_event.py:58 run: with _lock (finally)");
  std::unique_ptr<sim::Promise<int32_t>> event = std::move(st.events[key]);
  st.key_lock.Unlock("lock_key_event.py:58 run: with _lock (finally, end)");
  event->SetValue(0, "lock_key_event.py:60 run: event.set()");
  if (err) throw PyError(std::move(*err));
}

}  // namespace rerace::replay::detail
