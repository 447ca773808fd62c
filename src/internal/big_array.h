// Large scratch arrays (keys to sort, inverted lists): uninitialised, and from 2 MiB on mapped
// straight from the kernel and advised onto transparent huge pages, so that the first write
// takes one page fault per 2 MiB instead of one per 4 KiB, and no zero fill runs before it.
// A std::vector of the same size spends more time in page faults and memset than in the sort.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <span>
#include <new>
#include <type_traits>
#include <utility>

#include "neardup/cpu.h"

namespace neardup::internal {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// `bytes` rounded up to whole 2 MiB huge pages.
inline size_t huge_pages_of(size_t bytes) noexcept { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }

/// Anonymous memory of huge_pages_of(bytes), mapped at a 2 MiB boundary (an over-sized mapping
/// trimmed at both ends), where the kernel can back whole huge pages, and advised onto them
/// (advice only: may fail); MAP_FAILED if there is no room. Unmap with munmap(p, huge_pages_of(bytes)).
inline void* map_huge_pages(size_t bytes) noexcept {
  const size_t len = huge_pages_of(bytes);
  void* raw = mmap(nullptr, len + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const auto r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t a = (r + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (a > r) munmap(raw, a - r);
  munmap(reinterpret_cast<void*>(a + len), r + kHugePageBytes - a);  // a <= r + 2 MiB - 4 KiB: never empty
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(a), len, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(a);
}

template <class T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  BigArray() = default;
  /// n elements, uninitialised.
  explicit BigArray(size_t n) : size_(n) {
    const size_t bytes = n * sizeof(T);
    if (bytes == 0) return;
    if (bytes < kHugePageBytes) {
      data_ = static_cast<T*>(std::malloc(bytes));
      if (!data_) throw std::bad_alloc();
      return;
    }
    void* p = map_huge_pages(bytes);
    if (p == MAP_FAILED) throw std::bad_alloc();
    map_ = p;
    map_len_ = huge_pages_of(bytes);
    data_ = static_cast<T*>(p);
  }
  BigArray(const BigArray&) = delete;
  BigArray& operator=(const BigArray&) = delete;
  BigArray(BigArray&& o) noexcept { swap(o); }
  BigArray& operator=(BigArray&& o) noexcept {
    BigArray(std::move(o)).swap(*this);
    return *this;
  }
  ~BigArray() {
    if (map_)
      munmap(map_, map_len_);
    else
      std::free(data_);
  }
  void swap(BigArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(map_, o.map_);
    std::swap(map_len_, o.map_len_);
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_len_ = 0;
};

/// How an array is read: in any order, or in order (written once at its end, read from start to
/// end), which needs no huge pages to spare the TLB and asks for them only where the machine's
/// page faults are dear (neardup::huge_pages_for_sequential_arrays).
enum class Access { Random, Sequential };

/// An array that grows at its end without ever copying: kernel memory mapped in 2 MiB steps and
/// grown by mremap, which moves page tables, not bytes. A std::vector that doubles holds the old
/// and the new buffer at once (three times the data at the peak) and copies everything; this
/// holds the data and at most 2 MiB more. For per-document arrays of the first pass, whose final
/// size is not known in advance.
template <class T>
class GrowArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  GrowArray() = default;
  explicit GrowArray(Access access) noexcept : access_(access) {}
  GrowArray(const GrowArray&) = delete;
  GrowArray& operator=(const GrowArray&) = delete;
  GrowArray(GrowArray&& o) noexcept { swap(o); }
  GrowArray& operator=(GrowArray&& o) noexcept {
    GrowArray(std::move(o)).swap(*this);
    return *this;
  }
  ~GrowArray() {
    if (data_) munmap(data_, bytes_);
  }
  void swap(GrowArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
    std::swap(access_, o.access_);
    std::swap(huge_from_start_, o.huge_from_start_);
  }

  /// The array will hold about n elements: where that is past 2 MiB, it asks for huge pages
  /// (where its access does) from its first 2 MiB on, not from its second. Before the first push.
  void expect(size_t n) noexcept { huge_from_start_ = n * sizeof(T) > kStep; }

  void push_back(const T& x) {
    if ((size_ + 1) * sizeof(T) > bytes_) grow((size_ + 1) * sizeof(T));
    data_[size_++] = x;
  }
  void append(const T* p, size_t n) {
    if ((size_ + n) * sizeof(T) > bytes_) grow((size_ + n) * sizeof(T));
    std::copy(p, p + n, data_ + size_);
    size_ += n;
  }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  operator std::span<const T>() const noexcept { return {data_, size_}; }

 private:
  static constexpr size_t kStep = size_t{2} << 20;
  void grow(size_t need) {
    size_t bytes = std::max(bytes_ + bytes_ / 4, need);  // a quarter more (page tables only)
    bytes = (bytes + kStep - 1) & ~(kStep - 1);
    void* p = data_ ? mremap(data_, bytes_, bytes, MREMAP_MAYMOVE)
                    : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    // Huge pages once the array holds more than one, or is expected to: before, the first write
    // would fault in and zero a whole 2 MiB page for a few documents (21 band arrays: 42 MiB for
    // a small run). Expected, its first 2 MiB are not 512 faults of 4 KiB either: on a million
    // short documents the first pass's arrays took 12,500 of the run's 15,300 faults, at 11 us
    // each on a machine whose faults are dear (neardup::page_fault_microseconds).
    if ((bytes > kStep || huge_from_start_) && (access_ == Access::Random || huge_pages_for_sequential_arrays())) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: may fail
#endif
    data_ = static_cast<T*>(p);
    bytes_ = bytes;
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;
  Access access_ = Access::Random;
  bool huge_from_start_ = false;
};

}  // namespace neardup::internal
