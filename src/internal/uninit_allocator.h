// An allocator whose value-initialisation leaves trivial values uninitialised: resize() of a
// std::vector<char, UninitAllocator<char>> grows it without writing zeros over the new bytes. For
// buffers that are filled by read() or a copy right after they grow (the line buffer of a large
// record: zero-filling a 64 MB buffer before reading into it was pure cost).
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace neardup::internal {

template <class T>
struct UninitAllocator : std::allocator<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() noexcept = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0 && std::is_trivially_default_constructible_v<U>)
      ::new (static_cast<void*>(p)) U;  // default-initialised: no zeros
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

}  // namespace neardup::internal
