#include <immintrin.h>

#include <bit>

#include "kernels/json_text-inl.h"

namespace neardup::internal {
namespace {

inline uint32_t mask_of(__m256i v) noexcept { return static_cast<uint32_t>(_mm256_movemask_epi8(v)); }
inline uint64_t mask_of(__m256i lo, __m256i hi) noexcept { return mask_of(lo) | (static_cast<uint64_t>(mask_of(hi)) << 32); }

// Bytes 0xFF where `bits` has a bit set, 0 elsewhere.
inline __m256i bytes_of(uint32_t bits) noexcept {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// Bytes that may follow a backslash besides 'u': " / \ b f n r t. A byte is one of them when the
// set of high nibbles listed for its low nibble holds its high nibble (two table lookups).
inline __m256i separator_escapes(__m256i x) noexcept {
  const __m256i by_low = _mm256_setr_epi8(0, 0, 0x4 | 0x40 | static_cast<char>(0x80), 0, static_cast<char>(0x80), 0, 0x40, 0, 0, 0, 0, 0,
                                          0x20, 0, 0x40, 0x4, 0, 0, 0x4 | 0x40 | static_cast<char>(0x80), 0, static_cast<char>(0x80),
                                          0, 0x40, 0, 0, 0, 0, 0, 0x20, 0, 0x40, 0x4);
  const __m256i high_bit = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, static_cast<char>(128), 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 8, 16,
                                            32, 64, static_cast<char>(128), 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i allowed = _mm256_shuffle_epi8(by_low, _mm256_and_si256(x, nibble));
  const __m256i bit = _mm256_shuffle_epi8(high_bit, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
  return _mm256_xor_si256(_mm256_cmpeq_epi8(_mm256_and_si256(allowed, bit), _mm256_setzero_si256()), _mm256_set1_epi8(-1));
}

}  // namespace

// Blocks without a backslash are copied as they are; in the others the escapes are checked and
// blanked with vector masks (a loop over them mispredicts its exit about once a block: source
// code has an escape every 10-30 bytes).
int json_word_text_avx2(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept {
  const __m256i backslash = _mm256_set1_epi8('\\'), quote = _mm256_set1_epi8('"'), control = _mm256_set1_epi8(0x1F),
                space = _mm256_set1_epi8(' ');
  uint64_t carry = 0, count = 0;
  for (size_t at = 0; at < avail; at += 64) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + at));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + at + 32));
    const uint64_t bs = mask_of(_mm256_cmpeq_epi8(x0, backslash), _mm256_cmpeq_epi8(x1, backslash));
    const uint64_t qs = mask_of(_mm256_cmpeq_epi8(x0, quote), _mm256_cmpeq_epi8(x1, quote));
    // x <= 0x1F (unsigned) exactly when min(x, 0x1F) == x.
    const uint64_t ctl = mask_of(_mm256_cmpeq_epi8(_mm256_min_epu8(x0, control), x0), _mm256_cmpeq_epi8(_mm256_min_epu8(x1, control), x1));
    const uint64_t carry_in = carry;
    const StringBlock b = string_block_within(bs, ctl, qs, avail - at, carry);
    if ((b.backslashes | b.controls | b.escaped) == 0) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at), x0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at + 32), x1);
    } else {
      if (b.controls != 0) return kJsonWordTextInvalid;
      if ((b.escaped & ~mask_of(separator_escapes(x0), separator_escapes(x1))) != 0) {
        const __m256i u = _mm256_set1_epi8('u');
        if ((b.escaped & mask_of(_mm256_cmpeq_epi8(x0, u), _mm256_cmpeq_epi8(x1, u))) == 0) return kJsonWordTextInvalid;
        // Where the word text stops: this block, or the backslash before it that escapes its first byte.
        *length = at - carry_in;
        *blanked += count - carry_in;
        return kJsonWordTextDecode;
      }
      const uint64_t blank = b.backslashes | b.escaped;
      count += static_cast<uint64_t>(std::popcount(blank));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at), _mm256_blendv_epi8(x0, space, bytes_of(static_cast<uint32_t>(blank))));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at + 32),
                          _mm256_blendv_epi8(x1, space, bytes_of(static_cast<uint32_t>(blank >> 32))));
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
