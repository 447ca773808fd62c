// The SIMD MinHash kernel, written once over a vector type V (docs/architecture.md, "Habits":
// kernels written once) and included by one .cpp per instruction set, each compiled with its own
// flags. V provides, on lanes of 64 bits: kLanes, load(const uint64_t*), set1(uint64_t), mul32(a,
// b) (low 32 x low 32 -> 64), add, shl32, shr32, min (of values below 2^32) and store32(v,
// uint32_t* out) (the low halves). Every lane computes exactly what minhash_scalar computes: (a * x
// mod 2^64) >> 32, with a * x = lo(a) * x + (hi(a) * x << 32).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/minhash_kernels.h"

namespace neardup::internal {

template <class V>
inline typename V::T minhash_hash(typename V::T a, typename V::T a_hi, typename V::T x) {
  const auto lo = V::mul32(a, x);
  const auto hi = V::shl32(V::mul32(a_hi, x));
  return V::shr32(V::add(lo, hi));
}

template <class V>
void minhash_simd(const uint64_t* a, const uint64_t* a_hi, size_t num_perm,
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
        m[g] = V::min(m[g], minhash_hash<V>(V::load(a + q), V::load(a_hi + q), x));
      }
    }
    for (int g = 0; g < kGroups; ++g) V::store32(m[g], out + p + g * L);
  }
  for (; p + L <= num_perm; p += L) {
    auto m = init;
    const auto va = V::load(a + p), vh = V::load(a_hi + p);
    for (size_t j = 0; j < n; ++j) m = V::min(m, minhash_hash<V>(va, vh, V::set1(keys[j])));
    V::store32(m, out + p);
  }
  if (p < num_perm) minhash_scalar(a + p, a_hi + p, num_perm - p, keys, n, out + p);
}

// The 32-bit-lane form (minhash_avx512.cpp explains the identity), written once over a lane
// policy L: kPerms values per vector; Group, the constants of kPerms permutations, from
// make(a, a_hi); hash(group, x) the kPerms hashes of key x (broadcast(key)); ones(),
// min(u, v) and store(out, v) on 32-bit lanes. The permutations past the last full group go
// to minhash_simd<V>.
template <class L, class V>
void minhash_lanes32(const uint64_t* a, const uint64_t* a_hi, size_t num_perm,
                     const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  constexpr size_t kGroups = 8;  // 8 minima in registers while the keys stream by
  constexpr size_t P = L::kPerms;
  size_t p = 0;
  while (p + P <= num_perm) {
    const size_t groups = std::min(kGroups, (num_perm - p) / P);
    typename L::Group g[kGroups];
    typename L::T m[kGroups];
    for (size_t k = 0; k < groups; ++k) {
      g[k] = L::make(a + p + P * k, a_hi + p + P * k);
      m[k] = L::ones();
    }
    if (groups == kGroups) {  // a constant trip count: the minima stay in registers
      for (size_t j = 0; j < n; ++j) {
        const auto x = L::broadcast(keys[j]);
        for (size_t k = 0; k < kGroups; ++k) m[k] = L::min(m[k], L::hash(g[k], x));
      }
    } else {
      for (size_t j = 0; j < n; ++j) {
        const auto x = L::broadcast(keys[j]);
        for (size_t k = 0; k < groups; ++k) m[k] = L::min(m[k], L::hash(g[k], x));
      }
    }
    for (size_t k = 0; k < groups; ++k) L::store(out + p + P * k, m[k]);
    p += P * groups;
  }
  if (p < num_perm) minhash_simd<V>(a + p, a_hi + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
