// SimHash (Charikar 2002) and Manku, Jain and Das Sarma's permuted tables (WWW 2007):
// a 64-bit fingerprint per document, and every pair within Hamming distance k found without
// comparing all pairs, in batch or online.
//
// The fingerprint: each feature (a shingle hash of shingle.h, 64 bits) votes with its weight
// for every bit: +w where its bit is 1, -w where it is 0; bit b of the SimHash is 1 when the
// tally of bit b is positive (a tie gives 0). Weights (--weights):
//   set    every distinct shingle votes once (the default: on real mail, repeated lines made tf
//          pair documents with Jaccard below 0.5 even at distance 0; docs/simhash.md);
//   tf     every occurrence of a shingle votes with weight 1 (the fastest: no distinct values);
//   logtf  every distinct shingle votes with round(256 (1 + ln tf)), tf its number of
//          occurrences, so repeated boilerplate counts less than linearly.
// A document without features has SimHash 0 and is never paired.
//
// The tables: the 64 bits are split into blocks; a table matches a subset of the blocks (its
// mask). Two fingerprints within distance k differ in at most k blocks, so some table matches
// them exactly on its mask as long as every choice of k blocks leaves one table whose mask
// avoids them all. Sorting by the masked bits puts such pairs next to each other (batch), and a
// query looks up one range per table (online). Two-level splits (Manku's Section 3.1.1) split
// the unmatched blocks of a first-level table again.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "neardup/cpu.h"
#include "neardup/types.h"

namespace neardup {

enum class SimHashWeights { Tf, Set, LogTf };

/// "tf", "set", "logtf".
const char* simhash_weights_name(SimHashWeights w) noexcept;

/// SimHash of one document's shingle hashes (repeats included, any order). Reuses its buffers;
/// one per thread.
class SimHasher {
 public:
  explicit SimHasher(SimHashWeights weights = SimHashWeights::Set) : weights_(weights) {}
  uint64_t operator()(std::span<const ShingleHash> shingles) { return hash(shingles, active_isa()); }
  /// With the kernel of `isa` (every kernel gives the same value).
  uint64_t hash(std::span<const ShingleHash> shingles, Isa isa);
  /// Set weights: the SimHash of a document whose distinct shingles are `set` (no repeats, any
  /// order), the same as hash() of its shingles.
  uint64_t of_set(std::span<const ShingleHash> set, Isa isa) const;
  SimHashWeights weights() const noexcept { return weights_; }
  /// The most scratch a SimHasher keeps between documents: its tables for the distinct shingles
  /// of documents of up to 2^18 shingles (none with tf weights).
  static size_t kept_scratch_bytes(SimHashWeights weights) noexcept;

 private:
  SimHashWeights weights_;
  struct Slot {
    ShingleHash key = 0;
    uint32_t stamp = 0;  // the generation (document) that filled it; 0 = never
    uint32_t slot = 0;   // its index in distinct_
  };
  static size_t probe(const Slot* t, size_t mask, uint32_t gen, ShingleHash x) noexcept;
  /// Documents of more shingles find their distinct ones by sorting (hash_sorted), not in the
  /// tables: a table of 4 x 2^18 slots is 16 MiB.
  static constexpr size_t kTableShingles = size_t{1} << 18;
  uint64_t hash_sorted(std::span<const ShingleHash> shingles, Isa isa);
  std::vector<Slot> table_;
  std::vector<ShingleHash> distinct_;
  std::vector<uint64_t> buckets_;  // the AVX-512 path's table (aligned to 64 bytes inside)
  std::vector<uint32_t> weight_, counts_;
  uint32_t generation_ = 0;
};

/// Set weights, a document's distinct shingles given in disjoint parts, in any order: the per-bit
/// tallies of each part added up, then the SimHash of the whole, the same as SimHasher::of_set()
/// of their union. A long text's set is tallied bucket by bucket, never held whole.
class SimHashTally {
 public:
  /// Adds one part (distinct shingles, none in another part).
  void add(std::span<const ShingleHash> part, Isa isa) noexcept;
  /// Adds the parts another tally has seen.
  void add(const SimHashTally& other) noexcept;
  uint64_t simhash() const noexcept;

 private:
  uint64_t sums_[64] = {};
  uint64_t size_ = 0;
};

/// The definition, bit by bit with 64-bit tallies (tests and documentation).
uint64_t simhash_reference(std::span<const ShingleHash> shingles, SimHashWeights weights);

inline int hamming_distance(uint64_t a, uint64_t b) noexcept { return __builtin_popcountll(a ^ b); }
/// The similarity neardup reports for two SimHashes d bits apart: 1 - d / 64.
inline double simhash_similarity(int d) noexcept { return 1.0 - d / 64.0; }

// ---- Permutations ----

/// The permutation of a table: the bits of `mask` gathered to the top, in order, then the
/// others. Two fingerprints match on the mask exactly when their permuted values share the top
/// popcount(mask) bits; the Hamming distance is unchanged. Portable (no BMI2): a table's mask is
/// a union of a few blocks, so the bits are gathered one stretch of set bits at a time.
class SimHashPermutation {
 public:
  explicit SimHashPermutation(uint64_t mask);
  uint64_t operator()(uint64_t x) const noexcept {
    const uint64_t top = gather(x, in_);
    const uint64_t rest = gather(x, out_);
    if (matched_ == 0) return rest;
    if (matched_ == 64) return top;
    return (top << (64 - matched_)) | rest;
  }
  int matched() const noexcept { return matched_; }

 private:
  struct Runs {
    int count = 0;
    uint8_t shift[32];
    uint8_t len[32];
    uint64_t low[32];  // (1 << len) - 1
  };
  static Runs runs_of(uint64_t mask) noexcept;
  static uint64_t gather(uint64_t x, const Runs& r) noexcept {
    uint64_t out = 0;
    int pos = 0;
    for (int i = 0; i < r.count; ++i) {
      out |= ((x >> r.shift[i]) & r.low[i]) << pos;
      pos += r.len[i];
    }
    return out;
  }
  int matched_;
  Runs in_, out_;
};

// ---- Table plans ----

/// What a plan minimises: per-query work of an online index, or the total work of one batch
/// find-all over all the fingerprints.
enum class SimHashWorkload { Online, Batch };

struct SimHashPlan {
  int k = 3;                    ///< the largest Hamming distance found
  uint64_t docs = 0;            ///< the number of fingerprints planned for
  std::vector<uint64_t> masks;  ///< per table: the bits it matches
  std::string layout;           ///< e.g. "5 blocks (13,13,13,13,12), match 2" or "4x4 two-level"
  double expected_candidates = 0;  ///< per query, summed over the tables: sum of docs / 2^matched
  double batch_pairs = 0;          ///< batch: pairs compared, summed over tables (docs^2 / 2^(m+1))
  uint64_t bytes = 0;              ///< memory of the tables: 12 bytes per fingerprint per table
  double cost = 0;                 ///< the planner's work estimate (arbitrary units)

  size_t tables() const noexcept { return masks.size(); }
  /// One line per table: its number and matched bits.
  std::string describe() const;
};

/// The plan of least expected work for distance k (0..16) and `docs` fingerprints whose tables
/// fit in `memory_bytes` (0: no limit). Considers one-level splits into b blocks matching b - k
/// of them, and two-level splits; throws UsageError if none fits.
SimHashPlan plan_simhash_tables(int k, uint64_t docs, SimHashWorkload workload = SimHashWorkload::Online,
                                uint64_t memory_bytes = 0);
/// The one-level plan of b blocks (b > k), for tests and benchmarks.
SimHashPlan simhash_blocks_plan(int k, int blocks, uint64_t docs);

// ---- Batch: every pair within distance k ----

struct HammingPair {
  DocId a = 0, b = 0;  ///< a < b
  int distance = 0;
  friend bool operator==(const HammingPair&, const HammingPair&) = default;
};

struct FindAllStats {
  uint64_t compared = 0;  ///< pairs of distinct fingerprints compared, over all tables
  uint64_t found = 0;     ///< pairs reported
};

/// Every pair (a, b), a < b, of fingerprints within plan.k of each other, once each, sorted by
/// (a, b). Documents with skip[d] != 0 (if given) take no part. Identical fingerprints are
/// grouped first, so a large group of copies costs its output only. Parallel over tables.
/// Bytes per fingerprint that simhash_find_all holds while it runs: the sorted (fingerprint,
/// document) entries of a table, their sort scratch, and the distinct values.
inline constexpr double kSimHashSearchBytesPerDocument = 44.0;

std::vector<HammingPair> simhash_find_all(std::span<const uint64_t> fps, const SimHashPlan& plan, int threads,
                                          std::span<const uint8_t> skip = {}, FindAllStats* stats = nullptr);

// ---- Online: insert and query one fingerprint at a time ----

/// Sorted tables, plus a small sorted delta per table merged into them once it passes 1/16 of
/// them, plus an unsorted tail of at most 4,096 recent inserts sorted into the deltas when full.
/// Queries are const and safe to run concurrently while no insert or merge runs.
class SimHashIndex {
 public:
  explicit SimHashIndex(SimHashPlan plan);

  void insert(uint64_t fp, DocId id);
  /// Merges the tail and the deltas into the sorted tables now.
  void merge();
  /// Every indexed (id, distance) within plan.k of fp, sorted by id, each id once. `compared`,
  /// if given, is increased by the number of table entries looked at.
  std::vector<std::pair<DocId, int>> query(uint64_t fp, uint64_t* compared = nullptr) const;
  size_t size() const noexcept { return fps_.size(); }
  const SimHashPlan& plan() const noexcept { return plan_; }

 private:
  struct Table {
    SimHashPermutation perm;
    std::vector<uint64_t> keys{};  ///< permuted fingerprints (matched bits on top), sorted
    std::vector<DocId> ids{};
    std::vector<uint64_t> delta_keys{};  ///< the same for the delta
    std::vector<DocId> delta_ids{};
  };
  void merge_into(size_t from, size_t to, bool into_delta);
  void absorb_tail();
  SimHashPlan plan_;
  std::vector<Table> tables_;
  std::vector<uint64_t> fps_;       ///< every fingerprint inserted, in insertion order
  std::vector<DocId> ids_;
  size_t merged_ = 0;               ///< fps_[0, merged_) are in the tables
  size_t sorted_ = 0;               ///< fps_[merged_, sorted_) in the deltas; the rest is the tail
};

}  // namespace neardup
