#include "rerace/sim/sync.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rerace/testing/sim_run.h"

namespace rerace::sim {
namespace {

using rerace::testing::RunRandom;

TEST(Mutex, ExcludesAcrossEveryInterleavingTried) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    auto inside = std::make_shared<int>(0);
    auto total = std::make_shared<int>(0);
    RunResult r = RunRandom(seed, [inside, total](Scheduler& s) {
      auto m = std::make_shared<Mutex>(s, "m");
      auto x = std::make_shared<Shared<int>>(s, "x", 0);
      for (int t = 0; t < 3; ++t) {
        s.Spawn("worker", [m, x, inside, total] {
          for (int i = 0; i < 3; ++i) {
            LockGuard g(*m);
            Check(++*inside == 1, "two threads inside the critical section");
            x->Write(x->Read() + 1);
            --*inside;
            ++*total;
          }
        });
      }
    });
    ASSERT_FALSE(r.failed()) << "seed " << seed << "\n" << r.Report();
    ASSERT_EQ(*total, 9);
  }
}

TEST(Mutex, UnlockByNonOwnerFails) {
  RunResult r = RunRandom(1, [](Scheduler& s) {
    auto m = std::make_shared<Mutex>(s, "m");
    s.Spawn("stranger", [m] { m->Unlock(); });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.failure->message.find("unlocks mutex m held by nobody"), std::string::npos);
}

TEST(Mutex, DeadlockReportListsWhatEachThreadWaitsFor) {
  bool found = false;
  for (uint64_t seed = 0; seed < 50 && !found; ++seed) {
    RunResult r = RunRandom(seed, [](Scheduler& s) {
      auto a = std::make_shared<Mutex>(s, "A");
      auto b = std::make_shared<Mutex>(s, "B");
      s.Spawn("ab", [a, b] {
        LockGuard ga(*a);
        LockGuard gb(*b);
      });
      s.Spawn("ba", [a, b] {
        LockGuard gb(*b);
        LockGuard ga(*a);
      });
    });
    if (!r.failed()) continue;
    found = true;
    EXPECT_EQ(r.failure->kind, FailureKind::kDeadlock);
    ASSERT_EQ(r.failure->waits.size(), 2u);
    EXPECT_EQ(r.failure->waits[0], "thread 0 (ab) waits to lock B, held by thread 1 (ba)");
    EXPECT_EQ(r.failure->waits[1], "thread 1 (ba) waits to lock A, held by thread 0 (ab)");
  }
  EXPECT_TRUE(found);
}

TEST(CondVar, ProducerConsumerHandsOverEveryItem) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto got = std::make_shared<std::vector<int>>();
    RunResult r = RunRandom(seed, [got](Scheduler& s) {
      auto m = std::make_shared<Mutex>(s, "m");
      auto cv = std::make_shared<CondVar>(s, "cv");
      auto queue = std::make_shared<std::vector<int>>();
      s.Spawn("producer", [m, cv, queue] {
        for (int i = 0; i < 3; ++i) {
          LockGuard g(*m);
          queue->push_back(i);
          cv->NotifyOne();
        }
      });
      s.Spawn("consumer", [m, cv, queue, got] {
        for (int i = 0; i < 3; ++i) {
          LockGuard g(*m);
          while (queue->empty()) cv->Wait(*m);
          got->push_back(queue->front());
          queue->erase(queue->begin());
        }
      });
    });
    ASSERT_FALSE(r.failed()) << "seed " << seed << "\n" << r.Report();
    ASSERT_EQ(*got, (std::vector<int>{0, 1, 2}));
  }
}

TEST(CondVar, WaitWithoutNotifyIsADeadlock) {
  RunResult r = RunRandom(1, [](Scheduler& s) {
    auto m = std::make_shared<Mutex>(s, "m");
    auto cv = std::make_shared<CondVar>(s, "ready");
    s.Spawn("waiter", [m, cv] {
      LockGuard g(*m);
      cv->Wait(*m);
    });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_EQ(r.failure->kind, FailureKind::kDeadlock);
  EXPECT_EQ(r.failure->waits.at(0), "thread 0 (waiter) waits for a notify on ready");
}

TEST(Future, GetBlocksUntilSetAndCarriesTime) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto seen = std::make_shared<int>(0);
    RunResult r = RunRandom(seed, [seen](Scheduler& s) {
      auto p = std::make_shared<Promise<int>>(s, "answer");
      auto f = std::make_shared<Future<int>>(p->GetFuture());
      s.Spawn("getter", [f, seen] { *seen = f->Get(); });
      s.Spawn("setter", [&s, p] {
        s.SleepFor(500);
        p->SetValue(42);
      });
    });
    ASSERT_FALSE(r.failed()) << r.Report();
    EXPECT_EQ(*seen, 42);
    EXPECT_EQ(r.threads[0].clock, 500u) << "seed " << seed;
  }
}

TEST(Future, SettingTwiceFails) {
  RunResult r = RunRandom(1, [](Scheduler& s) {
    auto p = std::make_shared<Promise<int>>(s, "once");
    s.Spawn("setter", [p] {
      p->SetValue(1);
      p->SetValue(2);
    });
  });
  ASSERT_TRUE(r.failed());
  EXPECT_NE(r.failure->message.find("promise fulfilled twice: once"), std::string::npos);
}

TEST(ThreadLocal, EachThreadSeesItsOwnValue) {
  auto tls_out = std::make_shared<std::vector<int>>(3, -1);
  RunResult r = RunRandom(9, [tls_out](Scheduler& s) {
    auto tls = std::make_shared<ThreadLocal<int>>(s, 0);
    for (int t = 0; t < 3; ++t) {
      s.Spawn("t", [&s, tls, tls_out, t] {
        for (int i = 0; i <= t; ++i) {
          ++tls->Get();
          s.Point({Access::kYield, 0, "between"});
        }
        (*tls_out)[static_cast<size_t>(t)] = tls->Get();
      });
    }
  });
  ASSERT_FALSE(r.failed());
  EXPECT_EQ(*tls_out, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace rerace::sim
