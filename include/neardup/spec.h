// One way to spell a pipeline (docs/architecture.md, "Habits": one spelling): a one-line spec,
//   words:5 oph:128 lsh:21x6 verify:0.8
// builds the whole pipeline and prints back identically. Tokens, separated by spaces:
//   words:K | chars:N        shingles of K words or N characters (default words:5)
//   oph:P                    one-permutation hashing with densification, P bins (oph.h; the
//                            default, oph:128): the signature shape, LSH and verification of minhash
//   minhash:P                k-permutation MinHash with P permutations
//   bottomk:N                bottom-k MinHash with N values per fingerprint, all pairs found by an
//                            exact prefix-filter join instead of LSH (allpairs.h)
//   simhash:K                64-bit SimHash, every pair within Hamming distance K found with
//                            Manku's permuted tables (simhash.h); without a verify token, pairs
//                            are kept by the estimate 1 - d/64 >= 1 - K/64, that is all of them
//   weights:W                SimHash feature weights: set, tf or logtf (printed if not set)
//   lsh:BxR                  B bands of R rows (oph, minhash; default: chosen from the threshold)
//   verify:T | estimate:T    keep pairs with exact (or estimated) Jaccard >= T (default verify:0.8)
//   seed:S                   the seed of every hash (decimal or 0x hex; printed only if not default)
// to_string() always prints the resolved lsh:BxR, so a printed spec reproduces the run exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "neardup/bottomk.h"
#include "neardup/lsh_index.h"
#include "neardup/minhash.h"
#include "neardup/oph.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"
#include "neardup/verify.h"

namespace neardup {

inline constexpr double kDefaultThreshold = 0.8;

/// Exact: no sketch; every pair with J >= t by the exact set-similarity join (setjoin.h).
enum class SketchMethod { MinHash, BottomK, SimHash, Oph, Exact };

/// Methods whose sketch is a signature of num_perm values, banded by LSH (minhash, oph).
constexpr bool uses_signatures(SketchMethod m) noexcept { return m == SketchMethod::MinHash || m == SketchMethod::Oph; }

inline constexpr int kDefaultHamming = 3;

struct PipelineSpec {
  ShingleOptions shingle;
  SketchMethod method = SketchMethod::Oph;
  int num_perm = kDefaultNumPerm;          ///< minhash, oph
  int sketch_size = kDefaultSketchSize;    ///< bottomk
  int hamming = kDefaultHamming;           ///< simhash: the largest Hamming distance
  SimHashWeights weights = SimHashWeights::Set;  ///< simhash
  LshParams lsh;  ///< {0, 0}: chosen from the threshold by choose_lsh_params
  double threshold = kDefaultThreshold;
  VerifyMode verify = VerifyMode::Exact;

  /// Parses a spec; throws UsageError naming the bad token.
  static PipelineSpec parse(std::string_view text);
  /// Checks ranges and fills lsh from the threshold when unset. Throws UsageError.
  PipelineSpec resolved() const;
  std::string to_string() const;
};

/// The signature hasher of a minhash or oph spec: num_perm values per document.
class SignatureHasher {
 public:
  /// Throws UsageError if the spec's method does not use signatures.
  explicit SignatureHasher(const PipelineSpec& spec);
  int num_perm() const noexcept { return num_perm_; }
  void sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const;
  /// sketch() in pieces: `acc` starts all kEmptySigValue; add() takes the pieces' shingles in
  /// any order; finish() makes acc the signature of them all (OPH's bins are densified once).
  void add(std::span<const ShingleHash> shingles, std::span<SigValue> acc) const;
  void finish(std::span<SigValue> acc) const;

 private:
  int num_perm_;
  std::optional<MinHasher> minhash_;
  std::optional<OphHasher> oph_;
};

}  // namespace neardup
