// The set of a long text's shingle hashes, made from its pieces' hashes in two radix passes.
//
// Each piece's hashes are split by their top bits into buckets as they are made (add(), on any
// thread); set() then sorts each bucket across all pieces by its next bits and drops repeats,
// buckets in parallel, and joins the buckets in order. A bucket holds a few thousand hashes, so
// its sort runs in the cache, and every hash is moved three times in all, where sorting each piece
// and merging the sorted pieces pairwise moved it once per level of merging (a 38 MB text:
// 36 pieces, six levels) into freshly allocated arrays, the last levels on one thread.
//
// Made for parts of up to a few MB (pieces of about 1 MiB of text): a part is scattered into up
// to 4,096 buckets at once, and its pages must stay within the TLB. One large array sorts faster
// with sorted_set (shingle.h), whose first pass keeps to 256 buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "neardup/types.h"

namespace neardup::internal {

class HashPartition {
 public:
  /// Room for `parts` pieces of hashes, about `expected` hashes in all (it sets the number of
  /// buckets: a bucket's sort should fit in the cache).
  HashPartition(size_t parts, size_t expected);
  /// Piece `part`'s hashes (each part once; parts may be added on different threads at once).
  void add(size_t part, std::span<const ShingleHash> hashes);
  /// The distinct hashes of every part, sorted, on up to `threads` threads; the parts are spent.
  std::vector<ShingleHash> sorted_set(int threads);
  /// Calls fn(slot, hashes) with each bucket's distinct hashes, sorted (together, the set of
  /// sorted_set(), in no particular order of buckets), on up to `threads` threads (slot <
  /// threads: the calling thread's); the parts are spent. For a use that needs the set's hashes
  /// only once (a SimHash tally), without the set's array: half of a long text's peak.
  void for_each_distinct(int threads, const std::function<void(size_t slot, std::span<const ShingleHash> hashes)>& fn);
  /// The top bits that choose a bucket, for about n hashes (1 to 12).
  static int top_bits(size_t n) noexcept;

 private:
  struct Part {
    std::unique_ptr<ShingleHash[]> hashes;  // in bucket order
    std::vector<uint32_t> start;            // bucket d holds hashes[start[d], start[d + 1])
  };
  // f(run, length) for each part's run of bucket d.
  template <class F>
  void each_run(size_t d, F&& f) {
    for (Part& p : parts_)
      if (!p.start.empty() && p.start[d + 1] > p.start[d]) f(p.hashes.get() + p.start[d], size_t{p.start[d + 1] - p.start[d]});
  }
  // f(d, slot) for every bucket d, buckets in chunks handed out dynamically to up to `threads`.
  template <class F>
  void each_bucket(int threads, F&& f);
  // Each bucket, sorted and without repeats in the thread's scratch, to on_bucket(d, slot,
  // distinct hashes) (sorted_set and for_each_distinct).
  template <class OnBucket>
  void distinct_buckets(int threads, OnBucket&& on_bucket);
  int bits_;
  size_t buckets_;
  std::vector<Part> parts_;
};

}  // namespace neardup::internal
