// Parallel loops on the current thread pool (neardup/thread_pool.h): items are handed out
// dynamically, so the work done by each item must not depend on which thread runs it (results
// are stored by item index).
#pragma once

#include <cstddef>
#include <utility>
#include <thread>

#include "neardup/thread_pool.h"

namespace neardup::internal {

/// Calls fn(i, slot) for i in [0, n) on up to `threads` threads of the current pool (the
/// caller included); slot < threads. Rethrows the first exception after every thread stopped.
template <class Fn>
void parallel_for(size_t n, int threads, Fn&& fn) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i, size_t{0});
    return;
  }
  ThreadPool::current().parallel_for(n, threads, [&fn](size_t i, size_t slot) { fn(i, slot); });
}

/// The number of hardware threads (at least 1).
inline int hardware_threads() noexcept {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

/// A thread count as the library's options take it: 0 (or less) means every hardware thread.
inline int resolve_threads(int threads) noexcept { return threads > 0 ? threads : hardware_threads(); }

/// [lo, hi) of part p of n items cut into `parts` parts.
inline std::pair<size_t, size_t> part_range(size_t n, size_t p, size_t parts) noexcept { return {n * p / parts, n * (p + 1) / parts}; }

}  // namespace neardup::internal
