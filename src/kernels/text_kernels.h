// Text scanning kernels, one per instruction set; all compute the same function.
//
// Each processes `nblocks` 64-byte blocks of `in` (all readable), which are blocks
// `first_block`, ... of the text, and for each block b:
//   * writes lower[64 b + i] = byte i with A-Z mapped to a-z (lower points at block 0's copy);
//   * sets high[b] bit i when byte i is >= 0x80;
//   * with word bit i set when byte i is an ASCII letter or digit or a byte >= 0x80 (it may start
//     or continue a Unicode word; the exact rules decide later), appends to `starts` the position
//     of every byte that begins a maximal run of word bytes and to `ends` the position of every
//     byte that follows one. `carry` is the word bit of the byte before the first block (0 at
//     the start of the text) and is updated to that of the last byte.
// starts and ends need room for 32 * nblocks + 64 more entries; ns and ne are their counts.
// A run without a high byte is an ASCII word; one with a high byte is bordered by ASCII
// separators, and the exact Unicode scanner handles it (text.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "internal/hash.h"

namespace neardup::internal {

struct TextScan {
  uint8_t* lower;
  uint64_t* high;
  uint32_t* starts;
  uint32_t* ends;
  size_t ns = 0, ne = 0;
  uint64_t carry = 0;
  uint64_t any_high = 0;  // OR of every high mask written
};

void scan_text_scalar(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept;
void scan_text_avx2(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept;
/// Needs AVX512-VBMI2 as well as the AVX-512 subsets of Isa::Avx512 (text.cpp checks).
void scan_text_avx512(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept;

// out[i] = word_hash(lower[starts[i], ends[i]), seed) for i < count (internal/hash.h): the words
// of a stretch without high bytes. Reads 16 bytes from each start, so the caller pads.
void hash_ascii_words_scalar(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                             uint64_t seed, uint64_t* out) noexcept;
void hash_ascii_words_avx2(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                           uint64_t seed, uint64_t* out) noexcept;
void hash_ascii_words_avx512(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                             uint64_t seed, uint64_t* out) noexcept;

/// For the SIMD word hashes: hashes again the words of a group whose lanes are set in `longer`
/// (over 16 bytes, which the vector code does not cover), from their starts s and ends.
inline void hash_long_words(const uint8_t* lower, const uint32_t* s, const uint32_t* ends, unsigned longer,
                            uint64_t seed, uint64_t* out) noexcept {
  for (; longer != 0; longer &= longer - 1) {
    const auto l = static_cast<unsigned>(__builtin_ctz(longer));
    out[l] = word_hash(lower + s[l], ends[l] - s[l], seed);
  }
}

}  // namespace neardup::internal
