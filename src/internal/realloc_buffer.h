// A byte buffer that grows with realloc(). glibc moves a large block's pages with mremap, so a
// buffer growing to hold a 50 MB line is neither copied nor faulted in again at each doubling,
// where a std::vector allocates anew, copies and touches fresh pages every time (and zero-fills
// them on resize). New bytes are left uninitialised: the buffer is filled by reads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include <sys/mman.h>

namespace neardup::internal {

class ReallocBuffer {
 public:
  explicit ReallocBuffer(size_t n = 0) { resize(n); }
  ~ReallocBuffer() { std::free(p_); }
  ReallocBuffer(ReallocBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ReallocBuffer& operator=(ReallocBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  ReallocBuffer(const ReallocBuffer&) = delete;
  void swap(ReallocBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  ReallocBuffer& operator=(const ReallocBuffer&) = delete;

  char* data() noexcept { return p_; }
  const char* data() const noexcept { return p_; }
  size_t size() const noexcept { return n_; }
  /// Grows or shrinks to n bytes, keeping the first min(n, size()) (throws std::bad_alloc).
  void resize(size_t n) {
    if (n == n_ && p_) return;
    void* q = std::realloc(p_, n ? n : 1);
    if (!q) throw std::bad_alloc();
    p_ = static_cast<char*>(q);
    n_ = n;
    if (n >= kHugeAdviseBytes) advise_huge_pages(p_, n);
  }

  /// Buffers this large ask for transparent huge pages (madvise): a line of tens of MB is then
  /// faulted in 2 MiB at a time rather than 4 KiB (one 50 MB record: 176 -> 160 ms).
  static constexpr size_t kHugeAdviseBytes = size_t{16} << 20;
  /// Advises huge pages for the pages of [p, p + bytes) (advice only: may fail). The whole pages
  /// are advised, not only the 2 MiB-aligned part: advice on part of a mapping splits it, and
  /// glibc can then no longer grow the block in place with mremap (it copies it instead).
  static void advise_huge_pages(void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
    constexpr uintptr_t kPage = 4096;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + kPage - 1) & ~(kPage - 1);
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
  }

 private:
  char* p_ = nullptr;
  size_t n_ = 0;
};

/// Bytes appended to a ReallocBuffer. Growth leaves the new bytes uninitialised.
class ByteArray {
 public:
  char* data() noexcept { return buf_.data(); }
  const char* data() const noexcept { return buf_.data(); }
  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return buf_.size(); }
  void reserve(size_t n) {
    if (n > buf_.size()) buf_.resize(n);
  }
  void resize(size_t n) {
    reserve(n);
    size_ = n;
  }
  void append(std::string_view s) {
    if (size_ + s.size() > buf_.size()) reserve(std::max(buf_.size() * 2, size_ + s.size()));
    if (!s.empty()) std::memcpy(buf_.data() + size_, s.data(), s.size());
    size_ += s.size();
  }
  /// Empties it, keeping its room.
  void clear() noexcept { size_ = 0; }
  /// Lets the memory go.
  void release() {
    ReallocBuffer().swap(buf_);
    size_ = 0;
  }

 private:
  ReallocBuffer buf_;
  size_t size_ = 0;
};

}  // namespace neardup::internal
