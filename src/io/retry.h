// System calls retried when a signal interrupts them (EINTR). A handler installed without
// SA_RESTART, a stop and continue under a debugger, or a file system that allows interruption
// (NFS mounted intr, FUSE) can make any of these calls fail with EINTR having done nothing; that
// is not an error to report but a call to make again. A positioned read is also made again after
// a short one (pread_upto).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace neardup::io {

/// Calls fn() until it does not fail with EINTR; returns its last result (-1 with errno set on
/// another failure).
template <class F>
auto retry_eintr(F&& fn) {
  for (;;) {
    const auto r = fn();
    if (!(r == -1 && errno == EINTR)) return r;
  }
}

/// Reads up to `n` bytes of `fd` at `offset` into `to`, again after a signal or a short read:
/// fewer only where the file ends. Returns the bytes read, or -1 with errno set on a failure.
inline ssize_t pread_upto(int fd, char* to, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = retry_eintr([&] { return ::pread(fd, to + got, n - got, static_cast<off_t>(offset + got)); });
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace neardup::io
