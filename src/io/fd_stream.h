// A stdio stream over a file descriptor whose writes survive interruptions and short counts.
#pragma once

#include <cstdio>

namespace neardup::io {

/// A stream writing to `fd` (fopencookie): a write interrupted by a signal (EINTR) is made again
/// and one cut short goes on from where it stopped, where glibc's own stream (fdopen) reports
/// EINTR as an error. fclose() closes `fd`. Null (errno set) if it cannot be made.
std::FILE* open_stream(int fd);

}  // namespace neardup::io
