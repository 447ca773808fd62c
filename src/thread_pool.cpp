#include "neardup/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>

#include "internal/parallel.h"
#include "internal/start_thread.h"

#include <pthread.h>

namespace neardup {
namespace {

thread_local ThreadPool* tls_pool = nullptr;
thread_local const std::atomic<bool>* tls_cancel = nullptr;

// One parallel loop: shared with the helper tasks, which may start after the loop is over (the
// pool was busy) and must then find it finished rather than freed.
struct Loop {
  size_t n = 0;
  const std::function<void(size_t, size_t)>* fn = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<size_t> slots{1};  // the caller is slot 0
  std::mutex mu;
  std::condition_variable idle;
  size_t running = 0;  // helpers inside the loop
  bool closed = false; // no helper may enter once the caller has seen every item claimed
  std::exception_ptr error;

  void work(size_t slot) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        (*fn)(i, slot);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        next.store(n, std::memory_order_relaxed);
      }
    }
  }
};

}  // namespace

ThreadPool::ThreadPool(int workers) {
  const int n = workers > 0 ? workers : internal::hardware_threads();
  threads_.reserve(static_cast<size_t>(n));
  try {
    for (int i = 0; i < n; ++i) threads_.push_back(internal::start_thread([this] { run_worker(); }));
  } catch (...) {  // no thread (no memory for its stack, ulimit -u): those started stop first
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run_worker() {
  tls_pool = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !tasks_.empty() || !helpers_.empty(); });
      if (tasks_.empty() && helpers_.empty()) return;  // stopping, and nothing left
      std::deque<std::function<void()>>& from = helpers_.empty() ? tasks_ : helpers_;
      task = std::move(from.front());
      from.pop_front();
    }
    task();
  }
}

bool ThreadPool::run_helper() {
  std::function<void()> task;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (helpers_.empty()) return false;
    task = std::move(helpers_.front());
    helpers_.pop_front();
  }
  task();
  return true;
}

bool ThreadPool::has_helpers() {
  std::lock_guard<std::mutex> lock(mu_);
  return !helpers_.empty();
}

ThreadPool::HelperWatch ThreadPool::watch_helpers(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.emplace_back(next_watch_, std::move(wake));
  return HelperWatch(*this, next_watch_++);
}

ThreadPool::HelperWatch::~HelperWatch() {
  std::lock_guard<std::mutex> lock(pool_.mu_);
  std::erase_if(pool_.watchers_, [&](const auto& w) { return w.first == id_; });
}

void ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (forked_) return;  // a forked child has none of the workers: the caller does the work
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

int ThreadPool::workers() const noexcept { return forked_ ? 0 : static_cast<int>(threads_.size()); }

void ThreadPool::parallel_for(size_t n, int threads, const std::function<void(size_t, size_t)>& fn_in) {
  // Under a Cancel scope, each item first checks the flag, and runs under the same scope (its
  // nested loops check it too, on whichever thread runs them).
  const std::atomic<bool>* cancel = tls_cancel;
  std::function<void(size_t, size_t)> checked;
  if (cancel)
    checked = [&fn_in, cancel](size_t i, size_t slot) {
      if (cancel->load(std::memory_order_relaxed)) throw Interrupted();
      const Cancel scope(cancel);
      fn_in(i, slot);
    };
  const std::function<void(size_t, size_t)>& fn = cancel ? checked : fn_in;
  const size_t helpers =
      std::min({static_cast<size_t>(std::max(threads, 1)) - 1, static_cast<size_t>(workers()), n > 0 ? n - 1 : 0});
  if (helpers == 0) {
    for (size_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  auto loop = std::make_shared<Loop>();
  loop->n = n;
  loop->fn = &fn;
  std::unique_lock<std::mutex> queue(mu_);
  for (size_t h = 0; h < helpers; ++h) {
    helpers_.push_back([loop] {
      {
        std::lock_guard<std::mutex> lock(loop->mu);
        if (loop->closed) return;  // the loop is over; `fn` may be gone
        ++loop->running;
      }
      loop->work(loop->slots.fetch_add(1, std::memory_order_relaxed));
      {
        std::lock_guard<std::mutex> lock(loop->mu);
        --loop->running;
      }
      loop->idle.notify_all();
    });
  }
  std::vector<std::function<void()>> wake;
  for (const auto& w : watchers_) wake.push_back(w.second);
  queue.unlock();
  for (size_t h = 0; h < helpers; ++h) wake_.notify_one();
  for (const auto& f : wake) f();
  loop->work(0);
  std::unique_lock<std::mutex> lock(loop->mu);
  loop->closed = true;
  loop->idle.wait(lock, [&] { return loop->running == 0; });
  if (loop->error) std::rethrow_exception(loop->error);
}

// The process's pools are never destroyed: a worker must not be joined during the exit of a
// process whose other threads may still use it. Across fork() (Python's multiprocessing), a
// pool's mutex is held so that the child gets it unlocked, and the child, which has none of the
// workers, runs every loop on the calling thread (and a task given to submit() is the caller's).
template <ThreadPool& (*Pool)()>
ThreadPool* ThreadPool::process_pool(int workers) {
  auto* p = new ThreadPool(workers);
  ::pthread_atfork([] { Pool().mu_.lock(); }, [] { Pool().mu_.unlock(); },
                   [] {
                     ThreadPool& s = Pool();
                     s.forked_ = true;
                     s.tasks_.clear();
                     s.helpers_.clear();
                     s.mu_.unlock();
                   });
  return p;
}

ThreadPool& ThreadPool::shared() {
  static ThreadPool* const pool = process_pool<&ThreadPool::shared>(0);
  return *pool;
}

ThreadPool& ThreadPool::io() {
  static ThreadPool* const pool = process_pool<&ThreadPool::io>(2);
  return *pool;
}

ThreadPool& ThreadPool::current() { return tls_pool ? *tls_pool : shared(); }

Cancel::Cancel(const std::atomic<bool>* flag) noexcept : previous_(tls_cancel) { tls_cancel = flag; }
Cancel::~Cancel() { tls_cancel = previous_; }
void Cancel::check() {
  if (tls_cancel && tls_cancel->load(std::memory_order_relaxed)) throw Interrupted();
}
const std::atomic<bool>* Cancel::flag() noexcept { return tls_cancel; }

ThreadPool::Use::Use(ThreadPool* pool) noexcept : previous_(tls_pool), active_(pool != nullptr) {
  if (active_) tls_pool = pool;
}

ThreadPool::Use::~Use() {
  if (active_) tls_pool = previous_;
}

}  // namespace neardup
