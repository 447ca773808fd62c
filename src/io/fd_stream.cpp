#include "io/fd_stream.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "io/retry.h"

namespace neardup::io {

namespace {

// The stream's write function: a failure returns the bytes written before it (0 if none, never
// a negative count: fopencookie(3)), which marks the stream as failed; errno says why.
ssize_t write_all(void* cookie, const char* p, size_t n) {
  return static_cast<ssize_t>(write_fully(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), p, n));
}

int close_fd(void* cookie) {
  // On Linux the descriptor is closed even when close() reports EINTR: nothing to retry.
  const int rc = ::close(static_cast<int>(reinterpret_cast<intptr_t>(cookie)));
  return rc != 0 && errno == EINTR ? 0 : rc;
}

}  // namespace

size_t write_fully(int fd, const char* p, size_t n) noexcept {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = retry_eintr([&] { return ::write(fd, p + done, n - done); });
    if (w <= 0) {
      if (w == 0) errno = EIO;
      break;
    }
    done += static_cast<size_t>(w);
  }
  return done;
}

std::FILE* open_stream(int fd) {
  cookie_io_functions_t io{};
  io.write = write_all;
  io.close = close_fd;
  return ::fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), "w", io);
}

}  // namespace neardup::io
