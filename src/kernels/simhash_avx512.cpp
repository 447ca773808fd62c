// AVX-512BW SimHash tallies: the hash itself is the mask. count adds 1 to the 64 byte lanes of
// one register under the 64-bit mask (two registers, alternating, to halve the dependency
// chain); weigh adds the weight to 16 32-bit lanes under each 16-bit quarter of the hash.
#include <immintrin.h>

#include "kernels/simhash_kernels.h"

namespace neardup::internal {
namespace {

void flush_bytes(__m512i acc, uint64_t counts[64]) noexcept {
  alignas(64) uint8_t b[64];
  _mm512_store_si512(b, acc);
  for (int i = 0; i < 64; ++i) counts[i] += b[i];
}

}  // namespace

void simhash_count_avx512(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept {
  const __m512i one = _mm512_set1_epi8(1);
  // Two accumulators, each taking at most 255 features per chunk.
  for (size_t start = 0; start < n; start += 510) {
    const size_t end = n - start < 510 ? n : start + 510;
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    size_t i = start;
    for (; i + 2 <= end; i += 2) {
      a = _mm512_mask_add_epi8(a, _cvtu64_mask64(h[i]), a, one);
      b = _mm512_mask_add_epi8(b, _cvtu64_mask64(h[i + 1]), b, one);
    }
    if (i < end) a = _mm512_mask_add_epi8(a, _cvtu64_mask64(h[i]), a, one);
    flush_bytes(a, counts);
    flush_bytes(b, counts);
  }
}

void simhash_weigh_avx512(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept {
  for (size_t start = 0; start < n; start += kWeighChunk) {
    const size_t end = n - start < kWeighChunk ? n : start + kWeighChunk;
    __m512i acc[4];
    for (auto& a : acc) a = _mm512_setzero_si512();
    for (size_t i = start; i < end; ++i) {
      const __m512i wv = _mm512_set1_epi32(static_cast<int>(w[i]));
      const uint64_t x = h[i];
      for (int q = 0; q < 4; ++q)
        acc[q] = _mm512_mask_add_epi32(acc[q], static_cast<__mmask16>(x >> (16 * q)), acc[q], wv);
    }
    for (int q = 0; q < 4; ++q) {
      alignas(64) uint32_t s[16];
      _mm512_store_si512(s, acc[q]);
      for (int b = 0; b < 16; ++b) sums[16 * q + b] += s[b];
    }
  }
}

}  // namespace neardup::internal

namespace neardup::internal {

size_t simhash_distinct_avx512(const uint64_t* xs, size_t n, uint64_t* table, size_t bucket_mask,
                               uint64_t* out) noexcept {
  size_t nd = 0;
  bool zero_seen = false;
  for (size_t j = 0; j < n; ++j) {
    const uint64_t x = xs[j];
    if (x == 0) [[unlikely]] {  // 0 marks an empty slot, so the value 0 is tracked apart
      if (!zero_seen) out[nd++] = 0;
      zero_seen = true;
      continue;
    }
    const __m512i vx = _mm512_set1_epi64(static_cast<long long>(x));
    size_t b = static_cast<size_t>(x ^ (x >> 29)) & bucket_mask;
    for (;;) {
      uint64_t* line = table + 8 * b;
      const __m512i v = _mm512_load_si512(line);
      const unsigned hit = _cvtmask8_u32(_mm512_cmpeq_epi64_mask(v, vx));
      const unsigned empty = _cvtmask8_u32(_mm512_testn_epi64_mask(v, v));
      if (__builtin_expect((hit | empty) != 0, 1)) {
        // Slots fill in order, so a match comes before the first empty slot: the lowest of the
        // two masks is where x is, or where it goes. Storing it again is harmless. The whole
        // line is stored: a later load of it is then served from this store, where after an
        // 8-byte store it would wait for the store to reach the cache (about 1.4x as slow).
        const unsigned at = (hit | empty) & (0u - (hit | empty));
        _mm512_store_si512(line, _mm512_mask_mov_epi64(v, static_cast<__mmask8>(at), vx));
        out[nd] = x;
        nd += hit == 0;
        break;
      }
      b = (b + 1) & bucket_mask;  // a full bucket without x: the next one
    }
  }
  return nd;
}

}  // namespace neardup::internal
