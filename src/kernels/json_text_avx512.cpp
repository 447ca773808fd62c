#include <immintrin.h>

#include <bit>

#include "kernels/json_text-inl.h"

namespace neardup::internal {
namespace {

// Bytes that may follow a backslash besides 'u': " / \ b f n r t. A byte is one of them when the
// set of high nibbles listed for its low nibble holds its high nibble (two table lookups, as in
// the AVX2 kernel; each 128-bit lane holds the whole table).
inline uint64_t separator_escapes(__m512i x) noexcept {
  const __m512i by_low = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0x4 | 0x40 | static_cast<char>(0x80), 0, static_cast<char>(0x80), 0,
                                                              0x40, 0, 0, 0, 0, 0, 0x20, 0, 0x40, 0x4));
  const __m512i high_bit = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, static_cast<char>(128), 0, 0, 0, 0, 0, 0, 0, 0));
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i allowed = _mm512_shuffle_epi8(by_low, _mm512_and_si512(x, nibble));
  const __m512i bit = _mm512_shuffle_epi8(high_bit, _mm512_and_si512(_mm512_srli_epi16(x, 4), nibble));
  return _mm512_test_epi8_mask(allowed, bit);
}

}  // namespace

// The AVX2 kernel's steps on one 64-byte register: the masks come straight from the compares,
// and the escapes are blanked by a masked blend.
int json_word_text_avx512(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept {
  const __m512i backslash = _mm512_set1_epi8('\\'), quote = _mm512_set1_epi8('"'), control = _mm512_set1_epi8(0x1F),
                space = _mm512_set1_epi8(' '), u = _mm512_set1_epi8('u');
  uint64_t carry = 0, count = 0;
  for (size_t at = 0; at < avail; at += 64) {
    const __m512i x = _mm512_loadu_si512(in + at);
    const uint64_t carry_in = carry;
    const StringBlock b = string_block_within(_mm512_cmpeq_epi8_mask(x, backslash), _mm512_cmple_epu8_mask(x, control),
                                              _mm512_cmpeq_epi8_mask(x, quote), avail - at, carry);
    if ((b.backslashes | b.controls | b.escaped) == 0) {
      _mm512_storeu_si512(out + at, x);
    } else {
      if (b.controls != 0) return kJsonWordTextInvalid;
      if ((b.escaped & ~separator_escapes(x)) != 0) {
        if ((b.escaped & _mm512_cmpeq_epi8_mask(x, u)) == 0) return kJsonWordTextInvalid;
        // Where the word text stops: this block, or the backslash before it that escapes its first byte.
        *length = at - carry_in;
        *blanked += count - carry_in;
        return kJsonWordTextDecode;
      }
      const uint64_t blank = b.backslashes | b.escaped;
      count += static_cast<uint64_t>(std::popcount(blank));
      _mm512_storeu_si512(out + at, _mm512_mask_blend_epi8(blank, x, space));
    }
    if (b.closing != 0) {
      *length = at + static_cast<size_t>(std::countr_zero(b.closing));
      *blanked += count;
      return kJsonWordTextOk;
    }
  }
  *blanked += count;
  return kJsonWordTextOpen;  // no closing quote yet
}

}  // namespace neardup::internal
