// The exact join's small loops (SetJoin), written once and included by the .cpp of each
// instruction set (docs/architecture.md, "Habits": kernels written once): compiled with POPCNT,
// std::popcount is one instruction; the AVX-512 probe runs the same loop on its tail.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace neardup::internal {

// common_bits (jaccard_kernels.h).
inline long common_bits_loop(const uint32_t* index, const uint64_t* bits, size_t n, const uint64_t* map) noexcept {
  long c = 0;
  for (size_t k = 0; k < n; ++k) c += std::popcount(bits[k] & map[index[k]]);
  return c;
}

// unmarked_members (jaccard_kernels.h) over members[k, n), appending to found[j, ...): the new j.
inline size_t unmarked_members_loop(const uint32_t* members, size_t k, size_t n, uint32_t x, uint32_t* mark, uint32_t* found,
                                    size_t j) noexcept {
  for (; k < n; ++k) {
    const uint32_t y = members[k];
    if (y == x || mark[y] == x) continue;
    mark[y] = x;
    found[j++] = static_cast<uint32_t>(k);
  }
  return j;
}

// dense_walk (jaccard_kernels.h), one word: appends the places of the members of `fresh` (bits of
// word w of the list's bitmap) to places[j, ...): the new j.
inline size_t dense_walk_emit(const uint64_t* bits, const uint32_t* before, size_t w, uint64_t fresh, uint32_t* places, size_t j) noexcept {
  for (; fresh != 0; fresh &= fresh - 1) {
    const uint64_t below = (uint64_t{1} << std::countr_zero(fresh)) - 1;
    places[j++] = before[w] + static_cast<uint32_t>(std::popcount(bits[w] & below));
  }
  return j;
}

// dense_walk over word w, whose members in the walk's range are `in`.
inline size_t dense_walk_word(const uint64_t* bits, const uint32_t* before, size_t w, uint64_t in, uint64_t* met, uint32_t* places,
                              size_t j) noexcept {
  const uint64_t fresh = in & ~met[w];
  met[w] |= in;
  return fresh == 0 ? j : dense_walk_emit(bits, before, w, fresh, places, j);
}

// The bits of the first and the last word of a walk over [lo, hi) (lo < hi) that lie in it.
inline uint64_t dense_walk_first_mask(uint32_t lo) noexcept { return ~((uint64_t{1} << (lo & 63)) - 1); }
inline uint64_t dense_walk_last_mask(uint32_t hi) noexcept { return (hi & 63) == 0 ? ~uint64_t{0} : (uint64_t{1} << (hi & 63)) - 1; }

// dense_walk over the words [w, end) of a walk, whole: the new j.
inline size_t dense_walk_words(const uint64_t* bits, const uint32_t* before, size_t w, size_t end, uint64_t* met, uint32_t* places,
                               size_t j) noexcept {
  for (; w < end; ++w) j = dense_walk_word(bits, before, w, bits[w], met, places, j);
  return j;
}

// dense_walk (jaccard_kernels.h), a word at a time; `middle` walks the whole words between the
// first and the last.
template <class Middle>
size_t dense_walk_loop(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places,
                       Middle&& middle) noexcept {
  if (lo >= hi) return 0;
  const size_t first = lo >> 6, last = (hi - 1) >> 6;
  if (first == last) return dense_walk_word(bits, before, first, bits[first] & dense_walk_first_mask(lo) & dense_walk_last_mask(hi), met, places, 0);
  size_t j = dense_walk_word(bits, before, first, bits[first] & dense_walk_first_mask(lo), met, places, 0);
  j = middle(first + 1, last, j);
  return dense_walk_word(bits, before, last, bits[last] & dense_walk_last_mask(hi), met, places, j);
}

// dense_walk a word at a time throughout (the scalar and popcnt kernels).
inline size_t dense_walk_by_words(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met,
                                  uint32_t* places) noexcept {
  return dense_walk_loop(bits, before, lo, hi, met, places,
                         [&](size_t w, size_t end, size_t j) { return dense_walk_words(bits, before, w, end, met, places, j); });
}

}  // namespace neardup::internal
