// Shared by the libFuzzer targets: the input as a file for loaders that take a path, and a
// check that aborts (a finding) with what failed.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace neardup::fuzz {

// `bytes` in an anonymous memory file, opened by path as /proc/self/fd/N.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = ::memfd_create("neardup-fuzz", 0);
    FUZZ_CHECK(fd_ >= 0);
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      FUZZ_CHECK(w > 0);
      done += static_cast<size_t>(w);
    }
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_ = -1;
};

}  // namespace neardup::fuzz
