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
  }

 private:
  char* p_ = nullptr;
  size_t n_ = 0;
};

/// Bytes appended to a ReallocBuffer, or a buffer taken over whole (adopt): a large record read
/// into one is handed on without a copy. Growth leaves the new bytes uninitialised.
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
  /// Takes `b` over, its first `size` bytes the content.
  void adopt(ReallocBuffer&& b, size_t size) noexcept {
    buf_ = std::move(b);
    size_ = size;
  }
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
