// The SIMD MinHash kernel, written once over a vector type V (DESIGN.md, habit 3) and included
// by one .cpp per instruction set, each compiled with its own flags. V provides, on lanes of
// 64 bits: kLanes, load(const uint64_t*), set1(uint64_t), mul32(a, b) (low 32 x low 32 -> 64),
// add, shl32, shr32, min (of values below 2^32) and store32(v, uint32_t* out) (the low halves).
// Every lane computes exactly what minhash_scalar computes: (a * x + b) >> 32 mod 2^64, with
// a * x = lo(a) * x + (hi(a) * x << 32).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/minhash_kernels.h"

namespace neardup::internal {

template <class V>
inline typename V::T minhash_hash(typename V::T a, typename V::T a_hi, typename V::T b, typename V::T x) {
  const auto lo = V::mul32(a, x);
  const auto hi = V::shl32(V::mul32(a_hi, x));
  return V::shr32(V::add(V::add(lo, hi), b));
}

template <class V>
void minhash_simd(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                  const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  constexpr size_t L = V::kLanes;
  constexpr int kGroups = 8;  // 8 accumulators stay in registers while the keys stream by
  const auto init = V::set1(0xFFFFFFFFull);
  size_t p = 0;
  for (; p + kGroups * L <= num_perm; p += kGroups * L) {
    typename V::T m[kGroups];
    for (int g = 0; g < kGroups; ++g) m[g] = init;
    for (size_t j = 0; j < n; ++j) {
      const auto x = V::set1(keys[j]);
      for (int g = 0; g < kGroups; ++g) {
        const size_t q = p + g * L;
        m[g] = V::min(m[g], minhash_hash<V>(V::load(a + q), V::load(a_hi + q), V::load(b + q), x));
      }
    }
    for (int g = 0; g < kGroups; ++g) V::store32(m[g], out + p + g * L);
  }
  for (; p + L <= num_perm; p += L) {
    auto m = init;
    const auto va = V::load(a + p), vh = V::load(a_hi + p), vb = V::load(b + p);
    for (size_t j = 0; j < n; ++j) m = V::min(m, minhash_hash<V>(va, vh, vb, V::set1(keys[j])));
    V::store32(m, out + p);
  }
  if (p < num_perm) minhash_scalar(a + p, a_hi + p, b + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
