#include <immintrin.h>

#include "internal/hash.h"
#include "kernels/text_scan-inl.h"

namespace neardup::internal {
namespace {

// Signed compares stand in for unsigned range checks: x + (0x80 - lo) < -128 + width (signed)
// exactly when lo <= x < lo + width, for every byte x.
inline __m256i in_range(__m256i x, char lo, char width) {
  const __m256i shifted = _mm256_add_epi8(x, _mm256_set1_epi8(static_cast<char>(0x80 - lo)));
  return _mm256_cmpgt_epi8(_mm256_set1_epi8(static_cast<char>(-128 + width)), shifted);
}

inline void half(const uint8_t* in, uint8_t* lower, uint32_t& word, uint32_t& high) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  const __m256i upper = in_range(x, 'A', 26);
  const __m256i l = _mm256_or_si256(x, _mm256_and_si256(upper, _mm256_set1_epi8(0x20)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lower), l);
  const __m256i alnum = _mm256_or_si256(in_range(l, 'a', 26), in_range(x, '0', 10));
  high = static_cast<uint32_t>(_mm256_movemask_epi8(x));
  word = static_cast<uint32_t>(_mm256_movemask_epi8(alnum)) | high;
}

// The positions of a mask's set bits, eight bytes of the mask at a time: each byte's bit
// positions come from a table (8 per entry, the unused ones past its count), widened to 32 bits,
// offset and stored whole; the output then moves on by the byte's count. No branch depends on
// the count, and a block costs 8 table steps however many words it has.
struct PositionTable {
  alignas(64) uint8_t pos[256][8] = {};
  constexpr PositionTable() {
    for (int v = 0; v < 256; ++v) {
      int k = 0;
      for (int i = 0; i < 8; ++i)
        if (v & (1 << i)) pos[v][k++] = static_cast<uint8_t>(i);
    }
  }
};
constexpr PositionTable kPositions;

struct TableFlatten {
  size_t operator()(uint64_t bits, size_t b, uint32_t* out) const noexcept {
    uint32_t* o = out;
    __m256i base = _mm256_set1_epi32(static_cast<int>(b * 64));
    const __m256i eight = _mm256_set1_epi32(8);
    for (int j = 0; j < 8; ++j) {
      const auto byte = static_cast<unsigned>((bits >> (8 * j)) & 0xFF);
      const __m256i p = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kPositions.pos[byte])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_add_epi32(p, base));
      o += __builtin_popcount(byte);
      base = _mm256_add_epi32(base, eight);
    }
    return static_cast<size_t>(o - out);
  }
};

}  // namespace

void scan_text_avx2(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept {
  scan_blocks(in, first_block, nblocks, out, [](const uint8_t* p, uint8_t* lower, uint64_t& word, uint64_t& high) {
    uint32_t w0, h0, w1, h1;
    half(p, lower, w0, h0);
    half(p + 32, lower + 32, w1, h1);
    word = w0 | (static_cast<uint64_t>(w1) << 32);
    high = h0 | (static_cast<uint64_t>(h1) << 32);
  }, TableFlatten{});
}

// mum (internal/hash.h) lane by lane, as in text_hash_avx512.cpp, 4 lanes.
namespace {

inline __m256i mum4(__m256i x, __m256i y) noexcept {
  const __m256i xh = _mm256_srli_epi64(x, 32), yh = _mm256_srli_epi64(y, 32);
  const __m256i ll = _mm256_mul_epu32(x, y), lh = _mm256_mul_epu32(x, yh);
  const __m256i hl = _mm256_mul_epu32(xh, y), hh = _mm256_mul_epu32(xh, yh);
  const __m256i low32 = _mm256_set1_epi64x(0xFFFFFFFF);
  const __m256i mid = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, low32)),
                                       _mm256_and_si256(hl, low32));
  const __m256i hi = _mm256_add_epi64(_mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32)),
                                      _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
  const __m256i lo = _mm256_blend_epi32(ll, _mm256_slli_epi64(mid, 32), 0xAA);
  return _mm256_xor_si256(lo, hi);
}

inline __m128i load16(const uint8_t* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

}  // namespace

void hash_ascii_words_avx2(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                           uint64_t seed, uint64_t* out) noexcept {
  const __m256i k0 = _mm256_set1_epi64x(static_cast<long long>(kWordK0 ^ seed));
  const __m256i k1 = _mm256_set1_epi64x(static_cast<long long>(kWordK1));
  const __m256i k2 = _mm256_set1_epi64x(static_cast<long long>(kWordK2));
  const __m256i k3 = _mm256_set1_epi64x(static_cast<long long>(kWordK3));
  const __m256i ones = _mm256_set1_epi64x(-1), c64 = _mm256_set1_epi64x(64), c16 = _mm256_set1_epi64x(16);
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m128i s32 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(starts + i));
    const __m256i len =
        _mm256_cvtepu32_epi64(_mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ends + i)), s32));
    alignas(16) uint32_t s[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(s), s32);
    // Words 0 and 2 in one register as (a, b) pairs, 1 and 3 in another: unpacking gives the
    // a and b halves in word order.
    const __m256i w02 = _mm256_inserti128_si256(_mm256_castsi128_si256(load16(lower + s[0])), load16(lower + s[2]), 1);
    const __m256i w13 = _mm256_inserti128_si256(_mm256_castsi128_si256(load16(lower + s[1])), load16(lower + s[3]), 1);
    // The bytes past the word are cleared: shifts of 64 bits or more give 0 (all kept). For b
    // the count is 8 len - 64, negative (so a shift of 0 bits: all kept) for a word of 8 bytes
    // or less, which the comparison then clears.
    const __m256i bits = _mm256_slli_epi64(len, 3);
    const __m256i a = _mm256_andnot_si256(_mm256_sllv_epi64(ones, bits), _mm256_unpacklo_epi64(w02, w13));
    const __m256i b_keep = _mm256_andnot_si256(_mm256_sllv_epi64(ones, _mm256_sub_epi64(bits, c64)),
                                               _mm256_cmpgt_epi64(len, _mm256_set1_epi64x(8)));
    const __m256i b = _mm256_and_si256(b_keep, _mm256_unpackhi_epi64(w02, w13));
    const __m256i h = mum4(_mm256_xor_si256(mum4(_mm256_xor_si256(a, k0), _mm256_xor_si256(b, k1)), k2), _mm256_xor_si256(len, k3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
    const auto longer = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(len, c16))));
    if (longer != 0) [[unlikely]]
      hash_long_words(lower, s, ends + i, longer, seed, out + i);
  }
  hash_ascii_words_scalar(lower, starts + i, ends + i, count - i, seed, out + i);
}

}  // namespace neardup::internal
