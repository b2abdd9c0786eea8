// sim/src/classic_bugs.cc: the corpus. Each program is as small as its bug allows, padded
// with private work where the bug needs a narrow window.
#include "rerace/sim/classic_bugs.h"

#include <memory>

#include "rerace/sim/sync.h"

namespace rerace::sim {
namespace {

// Private work: `n` scheduling points that touch nothing shared.
void Work(int n) {
  Scheduler* s = Scheduler::Current();
  for (int i = 0; i < n; ++i) s->Point({Access::kYield, 0, "local work"});
}

// Two workers increment a counter with a separate read and write; main checks the total.
void LostUpdate(Scheduler& s) {
  s.Spawn("main", [&s] {
    auto counter = std::make_shared<Shared<int>>(s, "counter", 0);
    std::vector<ThreadId> workers;
    for (int i = 0; i < 2; ++i) {
      workers.push_back(s.Spawn("worker", [counter] {
        const int v = counter->Read("load counter");
        counter->Write(v + 1, "store counter + 1");
      }));
    }
    for (ThreadId w : workers) s.Join(w);
    Check(counter->Read("final load") == 2, "lost update: counter is not 2 after two increments");
  });
}

// Lazy initialization without a lock: both threads can see "not initialized" and initialize.
void CheckThenAct(Scheduler& s) {
  auto inited = std::make_shared<Shared<bool>>(s, "initialized", false);
  auto inits = std::make_shared<Shared<int>>(s, "init_count", 0);
  for (int i = 0; i < 2; ++i) {
    s.Spawn("initializer", [inited, inits] {
      if (!inited->Read("check initialized")) {
        Work(2);
        const int n = inits->Read("load init_count");
        Check(n == 0, "initialized twice: a second thread passed the check before the first set it");
        inits->Write(n + 1, "count init");
        inited->Write(true, "set initialized");
      }
    });
  }
}

// Two threads take two locks in opposite orders.
void AbbaDeadlock(Scheduler& s) {
  auto a = std::make_shared<Mutex>(s, "A");
  auto b = std::make_shared<Mutex>(s, "B");
  s.Spawn("ab", [a, b] {
    a->Lock("lock A");
    Work(1);
    b->Lock("lock B");
    b->Unlock();
    a->Unlock();
  });
  s.Spawn("ba", [a, b] {
    b->Lock("lock B");
    Work(1);
    a->Lock("lock A");
    a->Unlock();
    b->Unlock();
  });
}

// The consumer is started before the producer publishes what it uses.
void UseBeforeInit(Scheduler& s) {
  s.Spawn("main", [&s] {
    auto ptr = std::make_shared<Shared<const int*>>(s, "config", nullptr);
    static const int kConfig = 42;
    s.Spawn("consumer", [ptr] {
      const int* p = ptr->Read("load config");
      Check(p != nullptr, "use before initialization: config is still null");
    });
    Work(1);
    ptr->Write(&kConfig, "publish config");
  });
}

// Depth 2: the checker must read `a` after the writer set it, and `b` before the writer set it.
// The writer has a long stretch of private work between the two writes, the checker before
// its reads, so both orders are needed together.
void OrderingDepth2(Scheduler& s) {
  auto a = std::make_shared<Shared<int>>(s, "a", 0);
  auto b = std::make_shared<Shared<int>>(s, "b", 0);
  s.Spawn("writer", [a, b] {
    Work(20);
    a->Write(1, "set a");
    b->Write(1, "set b");
  });
  s.Spawn("checker", [a, b] {
    Work(5);
    const int va = a->Read("load a");
    const int vb = b->Read("load b");
    Check(!(va == 1 && vb == 0), "ordering bug: saw a set but b not yet set");
  });
}

// Depth 3: as depth 2, and a third thread's write must also come after the checker's read.
void OrderingDepth3(Scheduler& s) {
  auto a = std::make_shared<Shared<int>>(s, "a", 0);
  auto b = std::make_shared<Shared<int>>(s, "b", 0);
  auto c = std::make_shared<Shared<int>>(s, "c", 0);
  s.Spawn("writer", [a, b] {
    Work(20);
    a->Write(1, "set a");
    b->Write(1, "set b");
  });
  s.Spawn("late", [c] {
    c->Write(1, "set c");
  });
  s.Spawn("checker", [a, b, c] {
    Work(5);
    const int va = a->Read("load a");
    const int vb = b->Read("load b");
    const int vc = c->Read("load c");
    Check(!(va == 1 && vb == 0 && vc == 0), "ordering bug: saw a set, b and c not yet set");
  });
}

}  // namespace

const std::vector<ClassicBug>& ClassicBugs() {
  static const std::vector<ClassicBug> bugs = {
      {"lost-update", "two unsynchronized read-increment-write sequences lose an update", 2,
       FailureKind::kCheck, &LostUpdate},
      {"check-then-act", "lazy initialization without a lock runs twice", 2, FailureKind::kCheck,
       &CheckThenAct},
      {"abba-deadlock", "two threads take locks A and B in opposite orders", 2,
       FailureKind::kDeadlock, &AbbaDeadlock},
      {"use-before-init", "a thread reads a pointer before it is published", 1,
       FailureKind::kCheck, &UseBeforeInit},
      {"ordering-depth2", "a check needs two orderings between writer and checker", 2,
       FailureKind::kCheck, &OrderingDepth2},
      {"ordering-depth3", "a check needs three orderings among three threads", 3,
       FailureKind::kCheck, &OrderingDepth3},
  };
  return bugs;
}

const ClassicBug* FindClassicBug(std::string_view name) {
  for (const ClassicBug& b : ClassicBugs())
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace rerace::sim
