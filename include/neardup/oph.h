// One-permutation hashing (OPH) with densification: a MinHash signature of K values from a
// single hash per shingle, with the shape, the LSH banding and the estimator of k-permutation
// MinHash (minhash.h), so the rest of the pipeline and the index treat both alike.
//
// Binning. The shingle hash s (64 bits, already finalised, shingle.h) is its own permutation:
// bin(s) = (hi32(s) * K) >> 32 and value(s) = min(lo32(s), 0xFFFFFFFE); value j of the
// signature is the smallest value of the shingles in bin j. With K bins and f distinct shingles,
// a bin is empty with probability (1 - 1/K)^f.
//
// Densification. Each empty bin copies the value of a non-empty ("native") bin, chosen by a
// consistent random priority (Shrivastava 2017; the condition of Mai et al. 2020): rounds
// t = 0, 1, ... each fix a random permutation pi_t(i) = (a_t * i + b_t) mod K of the bins
// (a_t coprime to K; a_t, b_t from SplitMix64 seeded with the seed); empty bin j copies from
// the native bin pi_t^-1(j) of the first round t where that bin is native. Two documents that
// both leave bin j empty copy from the same bin when its first native pre-image is native in both,
// so a collision happens with probability J, the same as a k-permutation value, for every
// document size, including documents with fewer shingles than bins.
//
// The same assignment is computed two ways, chosen per document by cost: "pull" (each empty bin
// walks its pre-images, about e * K / m steps for e empty and m native bins) or "push" (each
// native bin throws to pi_t(i), round after round, about K * ln(e) steps, O(K log K) as in Mai
// et al. even for a one-shingle document). With up to 128 bins on a CPU with AVX512-VBMI the
// pull looks up 64 rounds of pre-images per instruction (vpermi2b) and wins at every density.
// Tests check that all of them agree bit for bit.
//
// An empty document (no shingle) has the all-0xFFFFFFFF signature, as in minhash.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "neardup/shingle.h"
#include "neardup/types.h"

namespace neardup {

enum class Densify : int;  // internal/testing.h

class OphHasher {
 public:
  /// num_bins (K) in [1, 4096]; `seed` seeds the densification rounds.
  OphHasher(int num_bins, uint64_t seed);

  int num_perm() const noexcept { return static_cast<int>(kk_); }

  /// Writes the densified signature of `shingles` (any order, repeats allowed) to out[0..K).
  void sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const;
  std::vector<SigValue> sketch(std::span<const ShingleHash> shingles) const;

  /// Bins left empty by `shingles` before densification (tests, statistics).
  int empty_bins(std::span<const ShingleHash> shingles) const;

  /// The two steps of sketch(), for a document hashed in pieces: bin_into() lowers each bin of
  /// `bins` (K values, all kEmptySigValue at first) to the smallest value of `shingles` in it;
  /// densify() then fills the bins left empty. Binning the pieces of a document in any order and
  /// densifying once gives sketch() of the whole.
  void bin_into(std::span<const ShingleHash> shingles, std::span<SigValue> bins) const;
  void densify(std::span<SigValue> bins) const;

 private:
  friend void oph_sketch_densified(const OphHasher&, std::span<const ShingleHash>, std::span<SigValue>, Densify);
  void sketch_with(std::span<const ShingleHash> shingles, std::span<SigValue> out, Densify how) const;
  void densify_with(std::span<SigValue> out, Densify how) const;
  void bin(std::span<const ShingleHash> shingles, std::span<SigValue> out) const;
  uint32_t pre_image(uint32_t j, size_t t) const noexcept;
  uint32_t image(uint32_t i, size_t t) const noexcept;
  uint32_t mod(uint64_t x) const noexcept;

  static constexpr size_t kTableRounds = 4;
  uint32_t kk_;  // K
  uint64_t fastmod_m_ = 0;
  std::vector<uint32_t> a_, a_inv_, b_;          // one per round
  std::vector<uint16_t> image_, pre_image_;     // the first kTableRounds rounds, K entries each
  static constexpr size_t kVbmiRounds = 256;
  size_t row_rounds_ = 0;          // kVbmiRounds, or fewer (a multiple of 64) when there are fewer rounds
  std::vector<uint8_t> pre_rows_;  // K <= 128: bin j's pre-images of rounds [0, row_rounds_) at j * row_rounds_
  std::vector<uint8_t> pre_cols_;  // the same by round: round t's pre-images of bins [0, 128) at t * 128 (0 past K)
};

}  // namespace neardup
