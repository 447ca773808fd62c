// A stdio stream over a file descriptor whose writes survive interruptions and short counts.
#pragma once

#include <cstddef>
#include <cstdio>

namespace neardup::io {

/// A stream writing to `fd` (fopencookie): a write interrupted by a signal (EINTR) is made again
/// and one cut short goes on from where it stopped, where glibc's own stream (fdopen) reports
/// EINTR as an error. fclose() closes `fd`. Null (errno set) if it cannot be made.
std::FILE* open_stream(int fd);

/// Writes all n bytes to `fd`, again after EINTR and on after a short count; returns how many
/// were written (fewer than n only on a failure, errno saying why; EIO for a write of 0 bytes).
size_t write_fully(int fd, const char* p, size_t n) noexcept;

}  // namespace neardup::io
