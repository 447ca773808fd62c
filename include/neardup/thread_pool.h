// A pool of worker threads the engine runs its parallel work on.
//
// Every stage that runs in parallel (the reading passes, the LSH buckets, the joins, the
// verification) takes its threads from a pool instead of starting threads of its own. A host
// that has threads already (a server, a Python process) hands its pool to the engine through
// RunTuning::pool or a ThreadPool::Use scope; otherwise the engine uses one pool shared by the
// process, made on first use with a worker per hardware thread.
//
// Work is never lost to a busy pool: the thread that asks for parallel work always takes part
// in it, and pool threads that are busy elsewhere simply do not join (unless a long task of
// theirs waits and lends a hand meanwhile: run_helper). So nested parallel work cannot deadlock,
// and a pool of one thread (or none free) runs everything on the caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace neardup {

/// Thrown by a run whose cancellation flag was set (Cancel): the caller asked it to stop.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

/// Cooperative cancellation of the work started on this thread: while a Cancel scope lives, the
/// parallel loops this thread starts (and those their items start, on any thread) check `flag`
/// before each item, as do the reading passes after each batch (Cancel::check), and throw
/// Interrupted once it is set. A Python caller sets it on Ctrl-C, so that a long run stops
/// within a batch of work and leaves no output behind.
class Cancel {
 public:
  explicit Cancel(const std::atomic<bool>* flag) noexcept;
  ~Cancel();
  Cancel(const Cancel&) = delete;
  Cancel& operator=(const Cancel&) = delete;
  /// Throws Interrupted if this thread's flag is set.
  static void check();
  /// This thread's flag (null: none).
  static const std::atomic<bool>* flag() noexcept;

 private:
  const std::atomic<bool>* previous_;
};

class ThreadPool {
 public:
  /// `workers` threads (0: one per hardware thread). The caller of parallel_for() takes part as
  /// well, so a loop can run on workers + 1 threads.
  explicit ThreadPool(int workers = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Its worker threads (0 in a child process forked from one that had them).
  int workers() const noexcept;

  /// Calls fn(i, slot) for every i in [0, n) on the calling thread and up to threads - 1 of the
  /// pool's workers; slot < threads numbers the thread that runs it (for per-thread state).
  /// Items are handed out one at a time, so results must be stored by item, not by slot.
  /// Returns when every item is done; rethrows the first exception (the items not yet started
  /// are then skipped).
  void parallel_for(size_t n, int threads, const std::function<void(size_t i, size_t slot)>& fn);

  /// Queues a task for a worker. The caller must make sure the task's data outlives it (the
  /// pass runner waits for its tasks, or does their work itself, before it returns).
  void submit(std::function<void()> task);

  /// Whether a parallel_for() of this pool waits for helpers that no worker has taken yet.
  bool has_helpers();
  /// Takes part in one such loop on the calling thread (as a worker would); false if there was
  /// none. For a thread that runs a long task of the pool and would otherwise wait in it: a
  /// reading pass's worker waiting for records, while another worker's parallel loop (a record
  /// of tens of MB parsed and shingled in pieces) gets no help from a pool whose workers are all
  /// inside that pass.
  bool run_helper();

  /// While the returned watch lives, `wake` is called (on the thread that queues them, with no
  /// lock of the pool held) each time a parallel_for() queues helpers: a thread that waits on a
  /// condition of its own inside a long task of the pool is woken to run them (run_helper).
  class HelperWatch {
   public:
    HelperWatch(HelperWatch&&) = delete;
    ~HelperWatch();

   private:
    friend class ThreadPool;
    HelperWatch(ThreadPool& pool, uint64_t id) noexcept : pool_(pool), id_(id) {}
    ThreadPool& pool_;
    uint64_t id_;
  };
  [[nodiscard]] HelperWatch watch_helpers(std::function<void()> wake);

  /// The pool of this thread: the one a Use scope installed, the pool a worker belongs to, or
  /// the process's shared pool.
  static ThreadPool& current();
  /// The process's shared pool (made on first use).
  static ThreadPool& shared();
  /// The process's pool of 2 threads for work that waits on a device (an output's direct
  /// writes), kept off the shared pool's workers, which compute (made on first use).
  static ThreadPool& io();

  /// Makes `pool` the current pool of this thread for the scope's lifetime (null: no change).
  class Use {
   public:
    explicit Use(ThreadPool* pool) noexcept;
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    ThreadPool* previous_;
    bool active_;
  };

 private:
  void run_worker();
  /// A pool for the life of the process, safe across fork(); Pool returns it.
  template <ThreadPool& (*Pool)()>
  static ThreadPool* process_pool(int workers);

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::deque<std::function<void()>> helpers_;  // parallel_for's helpers, taken before tasks_
  std::vector<std::pair<uint64_t, std::function<void()>>> watchers_;  // watch_helpers()
  uint64_t next_watch_ = 0;
  bool stopping_ = false;
  std::atomic<bool> forked_{false};  // in a child process: the workers did not survive fork()
  std::vector<std::thread> threads_;
};

}  // namespace neardup
