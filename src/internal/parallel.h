// Minimal parallel loop on std::thread: items are handed out dynamically, so the work done by
// each item must not depend on which thread runs it (results are stored by item index).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace neardup::internal {

/// Calls fn(i, thread_index) for i in [0, n) on up to `threads` threads; rethrows the first
/// exception after every thread has stopped.
template <class Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  const size_t t = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), n));
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i, size_t{0});
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](size_t tid) {
    try {
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i, tid);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back(work, k);
  work(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

/// The number of hardware threads (at least 1).
inline int hardware_threads() noexcept {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace neardup::internal
