// A byte buffer that grows in place where it can: a large one is mapped and grown with mremap,
// which moves its pages without copying them, so a buffer growing to hold a 50 MB line is
// neither copied nor faulted in again at each doubling, where a std::vector allocates anew,
// copies and touches fresh pages every time (and zero-fills them on resize). Smaller ones grow
// with realloc(). New bytes are left uninitialised: the buffer is filled by reads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include <sys/mman.h>

#include "internal/big_array.h"

namespace neardup::internal {

class ReallocBuffer {
 public:
  explicit ReallocBuffer(size_t n = 0) { resize(n); }
  ~ReallocBuffer() { let_go(); }
  ReallocBuffer(ReallocBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), mapped_(std::exchange(o.mapped_, 0)) {}
  ReallocBuffer& operator=(ReallocBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ReallocBuffer(const ReallocBuffer&) = delete;
  void swap(ReallocBuffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(mapped_, o.mapped_);
  }
  ReallocBuffer& operator=(const ReallocBuffer&) = delete;

  char* data() noexcept { return p_; }
  const char* data() const noexcept { return p_; }
  size_t size() const noexcept { return n_; }
  /// Grows or shrinks to n bytes, keeping the first min(n, size()) (throws std::bad_alloc).
  void resize(size_t n) {
    if (n == n_ && p_) return;
#if defined(__linux__)
    if (n >= kMapBytes || mapped_) return resize_mapped(n);
#endif
    void* q = std::realloc(p_, n ? n : 1);
    if (!q) throw std::bad_alloc();
    p_ = static_cast<char*>(q);
    n_ = n;
  }

  /// Buffers this large are mapped by the buffer itself and grown with mremap: glibc does so
  /// only above its mmap threshold (which a program may raise: the CLI's is 16 MiB), and below
  /// it realloc copies the block into fresh pages. A line of 50 MB read into a buffer doubling
  /// from 4 MiB had 12 MB copied into new pages on the way (14% of that record's CPU time).
  static constexpr size_t kMapBytes = size_t{8} << 20;

 private:
  void let_go() noexcept {
#if defined(__linux__)
    if (mapped_) {
      ::munmap(p_, huge_pages_of(mapped_));
      p_ = nullptr;
      return;
    }
#endif
    std::free(p_);
  }
#if defined(__linux__)
  // A mapped block of `mapped_` bytes (whole huge pages: map_huge_pages, a 4 KiB page fault costs
  // 2-12 us on a virtual machine, a huge page about 0.3 us per 4 KiB); below kMapBytes it goes
  // back to malloc.
  void resize_mapped(size_t n) {
    if (n < kMapBytes) {  // shrinking to a heap block
      char* q = static_cast<char*>(std::malloc(n ? n : 1));
      if (!q) throw std::bad_alloc();
      std::memcpy(q, p_, n);
      ::munmap(p_, huge_pages_of(mapped_));
      p_ = q;
      n_ = n;
      mapped_ = 0;
      return;
    }
    const size_t want = huge_pages_of(n);
    void* q = MAP_FAILED;
    if (mapped_) {
      const size_t had = huge_pages_of(mapped_);
      // In place if the range after it is free (or shrinking), keeping its advice; else its pages
      // are moved, not copied, onto a new aligned and advised range.
      q = ::mremap(p_, had, want, 0);
      if (q == MAP_FAILED) {
        void* to = map_huge_pages(want);
        if (to != MAP_FAILED) {
          q = ::mremap(p_, had, want, MREMAP_MAYMOVE | MREMAP_FIXED, to);
          if (q == MAP_FAILED) ::munmap(to, want);
        }
      }
    } else {
      q = map_huge_pages(want);
      if (q != MAP_FAILED && p_) std::memcpy(q, p_, std::min(n_, n));
    }
    if (q == MAP_FAILED) throw std::bad_alloc();
    if (!mapped_) std::free(p_);
    p_ = static_cast<char*>(q);
    n_ = n;
    mapped_ = n;
  }
#endif

  char* p_ = nullptr;
  size_t n_ = 0;
  size_t mapped_ = 0;  // the bytes mapped (0: a malloc block)
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
