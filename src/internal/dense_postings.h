// The longest posting lists of a prefix index also as bitmaps over the members, for the exact
// join's probes (setjoin.cpp).
//
// In a dense family of near-copies (thousands of licence files of a few licences) even the
// prefixes, the rarest shingles of each set, are held by hundreds of members, and every member
// of the family probes the same lists: on the largest licence join (23,715 members) 199 ranks
// held by more than 1/64 of the members carried 97% of the 680 million postings the probes
// read, to find 25 million distinct candidates. A probe walks such a list as words of 64 members
// instead, taking only the members not yet met (a bitmap per probing thread, kernels'
// dense_walk): the walk over a list of m >= members / 64 postings reads at most m words, 8 at a
// time where AVX-512 tests them, where the postings' walk gathers the marks of 16 postings at a
// time (the probes' share of a licence dedup's CPU samples fell from 14% to 6%). The bitmaps,
// with a count per word of the list's members before it (a member's place in the list, for the
// positional filter), take 12 bytes per 64 members per dense list: at most 1.5 times the 8 bytes
// per posting that the list itself takes.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "internal/big_array.h"
#include "kernels/dispatch.h"

namespace neardup::internal {

class DensePostings {
 public:
  static constexpr uint32_t kSparse = UINT32_MAX;
  // Shorter lists are walked posting by posting whatever the join's size: a gather tests 16 of
  // their postings for about what a word of a bitmap costs, so they would gain nothing.
  static constexpr uint64_t kMinList = 64;

  DensePostings() = default;
  /// Indexes the lists [head[r], head[r + 1]) of `post_member` (ascending members below
  /// `members`) that hold at least kMinList and members / 64 members.
  void build(std::span<const uint64_t> head, const uint32_t* post_member, size_t members) {
    const size_t ranks = head.empty() ? 0 : head.size() - 1;
    const uint64_t min_list = std::max<uint64_t>(kMinList, members / 64);
    size_t rows = 0;
    for (size_t r = 0; r < ranks; ++r) rows += head[r + 1] - head[r] >= min_list;
    rows_ = rows;
    if (rows == 0) return;
    words_ = (members + 63) / 64;
    row_of_.assign(ranks, kSparse);
    bits_ = BigArray<uint64_t>(rows * words_);
    before_ = BigArray<uint32_t>(rows * words_);
    std::fill(bits_.begin(), bits_.end(), uint64_t{0});
    uint32_t row = 0;
    for (size_t r = 0; r < ranks; ++r) {
      if (head[r + 1] - head[r] < min_list) continue;
      row_of_[r] = row;
      uint64_t* b = bits_.data() + size_t{row++} * words_;
      for (uint64_t k = head[r]; k < head[r + 1]; ++k) b[post_member[k] >> 6] |= uint64_t{1} << (post_member[k] & 63);
      uint32_t* c = before_.data() + size_t{row - 1} * words_;
      uint32_t count = 0;
      for (size_t w = 0; w < words_; ++w) {
        c[w] = count;
        count += static_cast<uint32_t>(std::popcount(b[w]));
      }
    }
  }
  bool any() const noexcept { return rows_ > 0; }
  /// The bitmap row of a rank's list, or kSparse.
  uint32_t row(uint32_t rank) const noexcept { return rows_ == 0 ? kSparse : row_of_[rank]; }
  /// Words of a probe's bitmap of met members (all clear between probes).
  size_t words() const noexcept { return words_; }

  /// The places in a row's list of its members in [lo, hi) not yet in `met`, ascending, into
  /// `places` (room for the list's length); sets the bits of all the list's members in [lo, hi)
  /// in `met`. Returns how many places it wrote (kernels' dense_walk).
  size_t new_places(uint32_t row, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) const noexcept {
    return kernels().dense_walk(row_bits(row), row_before(row), lo, hi, met, places);
  }
  /// A row's bitmap, and per word the list's members in the words before it.
  const uint64_t* row_bits(uint32_t row) const noexcept { return bits_.data() + size_t{row} * words_; }
  const uint32_t* row_before(uint32_t row) const noexcept { return before_.data() + size_t{row} * words_; }

 private:
  std::vector<uint32_t> row_of_;  // per rank; empty when no list is dense
  BigArray<uint64_t> bits_;       // rows_ rows of words_ words
  BigArray<uint32_t> before_;     // per row and word, the list's members in the words before it
  size_t words_ = 0, rows_ = 0;
};

}  // namespace neardup::internal
