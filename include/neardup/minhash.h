// k-permutation MinHash (Broder 1997) with 32-bit values.
//
// Permutation i is the multiply-shift hash h_i(x) = ((a_i * x) mod 2^64) >> 32 of the 32-bit
// key x = lo32(s) ^ hi32(s) of a 64-bit shingle hash s (universal, Dietzfelbinger et al. 1997);
// the odd 64-bit a_i are drawn in order a_0, a_1, ... from SplitMix64 seeded with `seed`. Until
// index format 2 an added 64-bit b_i made it multiply-add-shift (strongly universal); on real
// truth pairs the two estimate Jaccard alike (BENCHMARKS.md) and this one needs 6 vector
// instructions per 16 values instead of 8. Value i of the signature is the minimum of h_i over the set;
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
  std::vector<uint64_t> a_, a_hi_;
};

/// The MinHash estimate of Jaccard similarity: the fraction of equal signature values.
double estimate_jaccard(std::span<const SigValue> a, std::span<const SigValue> b) noexcept;

}  // namespace neardup
