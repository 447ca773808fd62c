// Library functions that only tests, benchmarks and fuzzers call: the references the fast paths
// are compared with (byte-at-a-time scanners, brute-force joins) and the alternatives kept to be
// measured against. Not part of the public headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "neardup/allpairs.h"
#include "neardup/bottomk.h"
#include "neardup/oph.h"
#include "neardup/simhash.h"
#include "neardup/types.h"

namespace neardup {

/// Lines this long or longer go from the reader to their batch in the buffer they were read
/// into (16 MiB unless set): tests set it lower. Returns the previous value.
size_t set_large_line_bytes(size_t bytes) noexcept;

/// The n-th next attempt (n >= 1; 0: none) of a reader to map a window of a plain file fails, as
/// on a file system without mmap: the reader then goes on reading that file as a stream.
void fail_input_map_for_testing(size_t n) noexcept;

/// How many times a reader has asked the kernel for pages ahead of its reading (ask_for_pages),
/// in this process: what a test compares before and after a read instead of waiting to see.
uint64_t pages_asked_for_testing() noexcept;

/// MemoryMap::Auto's measured choice for this process: 0 not measured yet, 1 mapping is the
/// faster, 2 read(2) is. Sets it to `choice` unless that is negative; returns the previous one.
int map_choice_for_testing(int choice = -1) noexcept;

/// hash_words and hash_chars from the byte-at-a-time scanner: the references the SIMD paths are
/// tested against (text.h).
void hash_words_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
void hash_chars_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);

/// fingerprint_join by comparing every pair with the classical merge (the oracle; O(n^2)).
std::vector<ScoredPair> fingerprint_join_brute_force(const Fingerprints& fps, double alpha, int threads);
/// top_pairs by scoring every pair (the oracle; O(n^2)).
std::vector<ScoredPair> top_pairs_brute_force(const Fingerprints& fps, size_t m, PairScore score);
/// simhash_find_all by comparing every pair.
std::vector<HammingPair> simhash_find_all_brute_force(std::span<const uint64_t> fps, int k, std::span<const uint8_t> skip = {});

/// OPH densification strategies: Auto picks per document (what OphHasher::sketch does); Pull and
/// Push force one, to test that both give the same signature.
enum class Densify : int { Auto, Pull, Push };
void oph_sketch_densified(const OphHasher& hasher, std::span<const ShingleHash> shingles, std::span<SigValue> out, Densify how);

/// The reference design's design: a max-heap of the N smallest values, guarded against repeats by a 4N-slot
/// linear-probing table that is cleared and refilled from the heap when it is half full. Kept as
/// the benchmark reference; computes the same fingerprint as BottomKSelector.
class BottomKHeapTable {
 public:
  explicit BottomKHeapTable(int size);
  void reset() noexcept;
  void add(std::span<const ShingleHash> shingles) noexcept;
  void add_value(SigValue v) noexcept;
  void finish(std::vector<SigValue>& out);

 private:
  bool table_insert(SigValue v) noexcept;  // false if present
  void rebuild() noexcept;
  static constexpr SigValue kEmpty = 0xFFFFFFFFu;
  int n_;
  std::vector<SigValue> heap_;
  std::vector<SigValue> table_;
  uint32_t mask_;
  size_t used_ = 0;
  bool has_max_ = false;  // 0xFFFFFFFF (the table's empty marker) is in the heap
};

}  // namespace neardup
