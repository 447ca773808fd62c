// Large scratch arrays (keys to sort, inverted lists): uninitialised, and from 2 MiB on mapped
// straight from the kernel and advised onto transparent huge pages, so that the first write
// takes one page fault per 2 MiB instead of one per 4 KiB, and no zero fill runs before it.
// A std::vector of the same size spends more time in page faults and memset than in the sort.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace neardup::internal {

template <class T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  BigArray() = default;
  /// n elements, uninitialised.
  explicit BigArray(size_t n) : size_(n) {
    const size_t bytes = n * sizeof(T);
    if (bytes == 0) return;
    if (bytes < kHugePage) {
      data_ = static_cast<T*>(std::malloc(bytes));
      if (!data_) throw std::bad_alloc();
      return;
    }
    // Room to start on a 2 MiB boundary, where the kernel can back whole huge pages.
    map_len_ = bytes + kHugePage;
    void* p = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    map_ = p;
    const auto aligned = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
    data_ = reinterpret_cast<T*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(data_, (bytes + kHugePage - 1) & ~(kHugePage - 1), MADV_HUGEPAGE);  // advice only: may fail
#endif
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

}  // namespace neardup::internal
