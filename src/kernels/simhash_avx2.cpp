// AVX2 SimHash tallies. count: each 64-bit hash is broadcast, a byte shuffle puts byte q of it
// in the 8 lanes of bits 8q..8q+7, and a compare with the lane's bit gives -1 where the bit is
// set; subtracting counts it. weigh: the same with 32-bit lanes, 8 bits per register. The close
// pair scans are the scalar ones, compiled here for the POPCNT instruction.
#include <immintrin.h>

#include "kernels/simhash_close-inl.h"
#include "kernels/simhash_kernels.h"

namespace neardup::internal {
namespace {

void flush_bytes(__m256i lo, __m256i hi, uint64_t counts[64]) noexcept {
  alignas(32) uint8_t b[64];
  _mm256_store_si256(reinterpret_cast<__m256i*>(b), lo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(b + 32), hi);
  for (int i = 0; i < 64; ++i) counts[i] += b[i];
}

}  // namespace

void simhash_count_avx2(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept {
  const __m256i shuf_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i shuf_hi = _mm256_setr_epi8(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5,  //
                                           6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  for (size_t start = 0; start < n; start += 255) {
    const size_t end = n - start < 255 ? n : start + 255;
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (size_t i = start; i < end; ++i) {
      const __m256i v = _mm256_set1_epi64x(static_cast<long long>(h[i]));
      lo = _mm256_sub_epi8(lo, _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, shuf_lo), bit), bit));
      hi = _mm256_sub_epi8(hi, _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, shuf_hi), bit), bit));
    }
    flush_bytes(lo, hi, counts);
  }
}

void simhash_weigh_avx2(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  for (size_t start = 0; start < n; start += kWeighChunk) {
    const size_t end = n - start < kWeighChunk ? n : start + kWeighChunk;
    __m256i acc[8];
    for (auto& a : acc) a = _mm256_setzero_si256();
    for (size_t i = start; i < end; ++i) {
      const __m256i wv = _mm256_set1_epi32(static_cast<int>(w[i]));
      const uint64_t x = h[i];
      for (int q = 0; q < 8; ++q) {
        const __m256i byte = _mm256_set1_epi32(static_cast<int>((x >> (8 * q)) & 0xFF));
        const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(byte, bit), bit);
        acc[q] = _mm256_add_epi32(acc[q], _mm256_and_si256(set, wv));
      }
    }
    for (int q = 0; q < 8; ++q) {
      alignas(32) uint32_t s[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(s), acc[q]);
      for (int b = 0; b < 8; ++b) sums[8 * q + b] += s[b];
    }
  }
}

void simhash_close_pairs_popcnt(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a,
                                std::vector<uint32_t>& out_b) {
  close_pairs(e, n, k, out_a, out_b);
}

void simhash_close_keys_popcnt(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits) {
  close_keys(keys, n, q, k, hits);
}

}  // namespace neardup::internal
