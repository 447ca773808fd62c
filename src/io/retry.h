// System calls retried when a signal interrupts them (EINTR). A handler installed without
// SA_RESTART, a stop and continue under a debugger, or a file system that allows interruption
// (NFS mounted intr, FUSE) can make any of these calls fail with EINTR having done nothing; that
// is not an error to report but a call to make again.
#pragma once

#include <cerrno>

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

}  // namespace neardup::io
