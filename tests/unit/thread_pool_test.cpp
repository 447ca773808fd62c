// The thread pool: every item once, nested and with fewer workers than asked; the first exception
// rethrown; helpers for loops the workers cannot join; pipelines on a starved pool; a forked
// child without the workers; cancellation (Cancel) of loops and reading passes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "internal/pass_runner.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/pipeline.h"
#include "neardup/stages.h"
#include "neardup/thread_pool.h"
#include "test_util.h"

namespace neardup {
namespace {

TEST(ThreadPool, EveryItemOnceNestedAndWithFewerWorkersThanAsked) {
  for (const int workers : {1, 3}) {
    ThreadPool pool(workers);
    const ThreadPool::Use use(&pool);
    std::vector<std::atomic<int>> hits(1000);
    std::atomic<size_t> max_slot{0};
    pool.parallel_for(100, 8, [&](size_t i, size_t slot) {
      size_t m = max_slot.load();
      while (slot > m && !max_slot.compare_exchange_weak(m, slot)) {
      }
      // Nested: a loop inside a loop item runs on whatever threads are free, the caller always.
      ThreadPool::current().parallel_for(10, 4, [&](size_t j, size_t) { hits[i * 10 + j]++; });
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_LE(max_slot.load(), static_cast<size_t>(workers));  // slot < the threads that took part
  }
}

TEST(ThreadPool, FirstExceptionIsRethrownAndThePoolStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(1000, 3,
                                 [](size_t i, size_t) {
                                   if (i == 17) throw FormatError("item 17");
                                 }),
               FormatError);
  std::atomic<int> n{0};
  pool.parallel_for(50, 3, [&](size_t, size_t) { n++; });
  EXPECT_EQ(n.load(), 50);
}

namespace {

// Two parties meet: each arrives and waits for the other, up to 5 s; true if both came. A loop
// whose two items meet this way needs two threads in it at once.
struct Meeting {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  bool arrive() {
    std::unique_lock<std::mutex> lock(mu);
    ++arrived;
    cv.notify_all();
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return arrived >= 2; });
  }
};

}  // namespace

// A thread inside a long task of the pool (its only worker here) takes part in a parallel loop
// that another thread started: it asks has_helpers() and then runs one with run_helper(), as a
// waiting worker of a reading pass does, and the loop's two items meet. Were has_helpers() never
// to say yes, the worker would not help, and the items would not meet.
TEST(ThreadPool, RunHelperTakesPartInALoopTheWorkersCannotJoin) {
  ThreadPool pool(1);
  std::atomic<bool> started{false}, stop{false}, ended{false};
  std::atomic<int> helped{0};
  pool.submit([&] {
    started = true;
    while (!stop.load())
      if (pool.has_helpers() && pool.run_helper()) helped++;
      else std::this_thread::yield();
    ended = true;
  });
  while (!started.load()) std::this_thread::yield();  // the worker is inside the task
  EXPECT_FALSE(pool.run_helper());                     // none queued
  Meeting m;
  std::atomic<int> met{0};
  pool.parallel_for(2, 2, [&](size_t, size_t) { met += m.arrive() ? 1 : 0; });
  stop = true;
  while (!ended.load()) std::this_thread::yield();
  EXPECT_EQ(met.load(), 2);
  EXPECT_EQ(helped.load(), 1);
  EXPECT_FALSE(pool.has_helpers());
}

// The workers of a reading pass are tasks of the pool that wait for batches: one that waits
// helps the parallel loop of another (as a record of tens of MB is parsed and shingled), here
// while the reading thread cannot go on (its progress report waits for the loop).
TEST(ThreadPool, AReadingPassWorkerHelpsAnotherWorkersLoop) {
  test::TempDir d;
  test::write_file(d.file("a.jsonl"), "{\"id\": \"a\", \"text\": \"one two three\"}\n");
  io::InputSet in({d.file("a.jsonl")}, io::InputFormat::Auto);
  ThreadPool pool(2);
  const ThreadPool::Use use(&pool);
  io::ReaderOptions ro;
  io::RecordReader reader(in, ro);
  Meeting m;
  std::atomic<int> met{0};
  std::atomic<bool> looped{false};
  internal::Pass pass;
  pass.reader = &ro;
  pass.process = [&](internal::Batch&, size_t, std::string_view, size_t) {
    ThreadPool::current().parallel_for(2, 2, [&](size_t, size_t) { met += m.arrive() ? 1 : 0; });
    looped = true;
  };
  pass.consume = [](internal::Batch&, size_t, DocId) {};
  const ProgressFn progress = [&](const Progress&) {
    for (int i = 0; i < 5000 && !looped.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  pass.progress = &progress;
  internal::run_pass(reader, in, 2, pass);
  EXPECT_EQ(met.load(), 2);
}

// A pipeline given a pool of one worker, or a pool whose workers are all busy, still finishes
// with the same result: the calling thread does the work the pool cannot take.
TEST(ThreadPool, PipelineFinishesOnAStarvedPool) {
  static const std::vector<io::Document> docs = test::sample_documents();
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.7");
  o.tuning.threads = 4;
  Pipeline reference(docs, o);
  reference.run(Pipeline::Mode::Dedup);

  ThreadPool pool(1);
  std::mutex block;
  std::unique_lock<std::mutex> held(block);
  pool.submit([&] { std::lock_guard<std::mutex> wait(block); });  // its only worker is busy
  o.tuning.pool = &pool;
  Pipeline starved(docs, o);
  starved.run(Pipeline::Mode::Dedup);
  held.unlock();
  EXPECT_EQ(starved.clustering().keeper, reference.clustering().keeper);
  EXPECT_EQ(starved.stats().removed, reference.stats().removed);
}

// A child forked from a process whose shared pool has workers (Python's multiprocessing does
// this) has none of them: its parallel work runs on the calling thread, with the same result.
TEST(ThreadPool, ForkedChildRunsWithoutTheWorkers) {
  const std::vector<std::string_view> texts = {"a b c d e f", "a b c d e g", "x y z w v u", "a b c d e f"};
  const PipelineSpec spec = PipelineSpec::parse("words:2 oph:64 verify:0.5");
  const Sketches parent = sketch_documents(texts, spec, 4);
  std::atomic<int> ran{0};
  ThreadPool::shared().parallel_for(64, 4, [&](size_t, size_t) { ran++; });  // the shared pool is running
  ASSERT_EQ(ran.load(), 64);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const Sketches child = sketch_documents(texts, spec, 4);
    const bool same = child.signatures == parent.signatures && find_candidates(child, nullptr, 4) == find_candidates(parent);
    std::atomic<int> n{0};
    ThreadPool::shared().parallel_for(64, 4, [&](size_t, size_t) { n++; });
    ::_exit(same && n.load() == 64 && ThreadPool::shared().workers() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(ThreadPool::shared().workers(), 0);
}

// Under a Cancel scope whose flag is set, a parallel loop stops with Interrupted before its next
// item, also in loops nested in its items, on whichever thread runs them; without the scope, or
// with the flag clear, every item runs.
TEST(ThreadPool, CancelStopsLoopsAtTheirNextItem) {
  ThreadPool pool(3);
  std::atomic<bool> flag{false};
  std::atomic<int> ran{0};
  {
    const Cancel scope(&flag);
    pool.parallel_for(100, 4, [&](size_t, size_t) { ran++; });
    EXPECT_EQ(ran.load(), 100);
    ran = 0;
    EXPECT_THROW(pool.parallel_for(100000, 4,
                                   [&](size_t i, size_t) {
                                     if (++ran == 10) flag = true;
                                     if (i % 7 == 0) pool.parallel_for(4, 2, [&](size_t, size_t) {});
                                   }),
                 Interrupted);
    EXPECT_LT(ran.load(), 100000);
    EXPECT_THROW(Cancel::check(), Interrupted);
  }
  EXPECT_NO_THROW(Cancel::check());  // the scope is gone
  ran = 0;
  pool.parallel_for(50, 4, [&](size_t, size_t) { ran++; });
  EXPECT_EQ(ran.load(), 50);
}

// A pipeline asked to stop raises Interrupted, and the same pipeline's inputs run whole again.
TEST(ThreadPool, CancelledPipelineStopsAndAnotherRunsWhole) {
  const std::vector<io::Document> docs = test::sample_documents();
  RunOptions o;
  o.spec = PipelineSpec::parse("words:3 oph:128 verify:0.7");
  o.tuning.threads = 2;
  std::atomic<bool> flag{true};
  {
    const Cancel scope(&flag);
    Pipeline p(docs, o);
    EXPECT_THROW(p.run(Pipeline::Mode::Dedup), Interrupted);
  }
  Pipeline whole(docs, o);
  whole.run(Pipeline::Mode::Dedup);
  EXPECT_EQ(whole.stats().documents, docs.size());
}

}  // namespace
}  // namespace neardup
