// k-permutation MinHash (seed 004) with 32-bit values.
//
// Permutation i is the multiply-add-shift hash h_i(x) = ((a_i * x + b_i) mod 2^64) >> 32 of the
// 32-bit key x = lo32(s) ^ hi32(s) of a 64-bit shingle hash s (strongly universal for 32-bit keys,
// Dietzfelbinger 1996); a_i (odd) and b_i are 64-bit, drawn in order a_0, b_0, a_1, b_1, ... from
// SplitMix64 seeded with `seed`. Value i of the signature is the minimum of h_i over the set;
// the signature of an empty set is all 0xFFFFFFFF. SIMD kernels (AVX2, AVX-512) match the scalar
// reference bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/cpu.h"
#include "neardup/shingle.h"
#include "neardup/types.h"

namespace neardup {

inline constexpr int kDefaultNumPerm = 128;
inline constexpr SigValue kEmptySigValue = 0xFFFFFFFFu;

class MinHasher {
 public:
  MinHasher(int num_perm, uint64_t seed);

  int num_perm() const noexcept { return static_cast<int>(a_.size()); }

  /// Writes the signature of `shingles` (any order, repeats allowed) to out[0..num_perm).
  void sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const;
  /// The same with an explicit kernel (tests and benchmarks).
  void sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out, Isa isa) const;
  std::vector<SigValue> sketch(std::span<const ShingleHash> shingles) const;

 private:
  std::vector<uint64_t> a_, a_hi_, b_;
};

/// The MinHash estimate of Jaccard similarity: the fraction of equal signature values.
double estimate_jaccard(std::span<const SigValue> a, std::span<const SigValue> b) noexcept;

}  // namespace neardup
