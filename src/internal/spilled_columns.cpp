#include "internal/spilled_columns.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

#include "io/retry.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"

namespace neardup::internal {

namespace {

// A file in dir that no name refers to: O_TMPFILE where the file system has it, otherwise made
// with a name and unlinked at once.
int open_scratch(const std::string& dir) {
  const int fd = io::open_unnamed(dir);
  if (fd >= 0) return fd;
  std::string path = dir + "/neardup-spill-XXXXXX";
  const int named = ::mkostemp(path.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(path.c_str());
  return named;
}

// Calls io(p, left, at) (pread or pwrite) until all `left` bytes moved; false with errno set if
// one fails, or moves nothing (EIO: the file is shorter than written; ENOSPC: the disk took none).
template <class Io>
bool move_all(Io&& io, char* p, size_t left, off_t at, int none) {
  while (left > 0) {
    const ssize_t r = io::retry_eintr([&] { return io(p, left, at); });
    if (r <= 0) {
      if (r == 0) errno = none;
      return false;
    }
    p += r;
    at += r;
    left -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

SpilledColumns::SpilledColumns(const std::string& dir, size_t columns, std::string what)
    : dir_(dir), what_(std::move(what)), buffer_(columns), written_(columns, 0), map_(columns) {
  for (size_t c = 0; c < columns; ++c) {
    const int fd = open_scratch(dir);
    if (fd < 0)
      throw IoError(what_ + " spilled to " + dir_ + ": cannot make a temporary file there: " + std::strerror(errno) +
                    "; set TMPDIR to a writable directory on a disk with room, or raise --memory-limit");
    fd_.push_back(fd);
    buffer_[c].bytes = std::make_unique<std::byte[]>(kBufferBytes);
  }
}

SpilledColumns::~SpilledColumns() {
  for (const auto m : map_)
    if (!m.empty()) ::munmap(const_cast<std::byte*>(m.data()), m.size());
  for (const int fd : fd_) ::close(fd);
}

void SpilledColumns::append(size_t column, const void* p, size_t n) {
  Buffer& b = buffer_[column];
  const auto* from = static_cast<const std::byte*>(p);
  while (n > 0) {
    if (b.used == kBufferBytes) flush(column);
    const size_t take = std::min(n, kBufferBytes - b.used);
    std::memcpy(b.bytes.get() + b.used, from, take);
    b.used += take;
    from += take;
    n -= take;
  }
}

void SpilledColumns::flush(size_t column) {
  Buffer& b = buffer_[column];
  const int fd = fd_[column];
  if (!move_all([fd](char* p, size_t n, off_t at) { return ::pwrite(fd, p, n, at); }, reinterpret_cast<char*>(b.bytes.get()), b.used,
                static_cast<off_t>(written_[column]), ENOSPC))
    fail("cannot write to it", "free space there, set TMPDIR to a directory on a larger disk, or raise --memory-limit");
  written_[column] += b.used;
  b.used = 0;
}

void SpilledColumns::finish() {
  for (size_t c = 0; c < fd_.size(); ++c) flush(c);
}

void SpilledColumns::read(size_t column, uint64_t begin, size_t count, uint64_t* out) const {
  if ((begin + count) * sizeof(uint64_t) > written_[column]) throw UsageError("SpilledColumns::read: beyond the values written");
  const int fd = fd_[column];
  if (!move_all([fd](char* p, size_t n, off_t at) { return ::pread(fd, p, n, at); }, reinterpret_cast<char*>(out),
                count * sizeof(uint64_t), static_cast<off_t>(begin * sizeof(uint64_t)), EIO))
    fail("cannot read back from it", "the disk under it failed: set TMPDIR to a directory on another disk, or raise --memory-limit");
}

std::span<const std::byte> SpilledColumns::map(size_t column) {
  if (buffer_[column].used > 0) throw UsageError("SpilledColumns::map: before finish()");
  if (!map_[column].empty() || written_[column] == 0) return map_[column];
  void* p = ::mmap(nullptr, written_[column], PROT_READ, MAP_SHARED, fd_[column], 0);
  if (p == MAP_FAILED)
    fail("cannot map it into memory", "set TMPDIR to a directory on a local disk, or raise --memory-limit");
  map_[column] = {static_cast<const std::byte*>(p), written_[column]};
  return map_[column];
}

void SpilledColumns::drop_pages() const noexcept {
  for (const auto m : map_)
    if (!m.empty()) ::madvise(const_cast<std::byte*>(m.data()), m.size(), MADV_DONTNEED);
}

void SpilledColumns::drop_pages(size_t column, uint64_t from, uint64_t to) const noexcept {
  const auto m = map_[column];
  to = std::min<uint64_t>(to, m.size());
  if (from >= to) return;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  from -= from % page;  // the mapping starts at a page
  ::madvise(const_cast<std::byte*>(m.data()) + from, to - from, MADV_DONTNEED);
}

uint64_t SpilledColumns::bytes() const noexcept {
  uint64_t b = 0;
  for (const uint64_t w : written_) b += w;
  return b;
}

void SpilledColumns::fail(const char* what, const char* advice) const {
  throw IoError(what_ + " spilled to " + dir_ + ": " + what + ": " + std::strerror(errno) + "; " + advice);
}

}  // namespace neardup::internal
