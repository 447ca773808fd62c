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
  /// The top bits that choose a bucket, for about n hashes (1 to 12).
  static int top_bits(size_t n) noexcept;

 private:
  struct Part {
    std::unique_ptr<ShingleHash[]> hashes;  // in bucket order
    std::vector<uint32_t> start;            // bucket d holds hashes[start[d], start[d + 1])
  };
  int bits_;
  size_t buckets_;
  std::vector<Part> parts_;
};

}  // namespace neardup::internal
