// Compiled with -mavx2 only; called only when the CPU has AVX2.
//
// 8 permutations per vector of 32-bit lanes, by the identity of minhash_avx512.cpp:
//   (a * x + b) >> 32 = ((lo * x + b) >> 32) + hi * x   (mod 2^32).
#include <immintrin.h>

#include <algorithm>

#include "kernels/minhash_generic-inl.h"

namespace neardup::internal {
namespace {

struct Avx2 {
  using T = __m256i;
  static constexpr size_t kLanes = 4;
  static T load(const uint64_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static T set1(uint64_t x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }
  static T mul32(T a, T b) { return _mm256_mul_epu32(a, b); }
  static T add(T a, T b) { return _mm256_add_epi64(a, b); }
  static T shl32(T a) { return _mm256_slli_epi64(a, 32); }
  static T shr32(T a) { return _mm256_srli_epi64(a, 32); }
  // Values are below 2^32 (high halves zero), so an unsigned 32-bit min is the 64-bit min.
  static T min(T a, T b) { return _mm256_min_epu32(a, b); }
  static void store32(T v, uint32_t* out) {
    // Gather the low halves of the four lanes into the low 128 bits.
    const __m256i packed = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  }
};

// The constants of 8 permutations q .. q+7, arranged for the 32-bit-lane form (kept in L1:
// AVX2 has too few registers to hold them).
struct alignas(32) Group8 {
  uint64_t lo_even[4], lo_odd[4];  // lo(a) of q, q+2, q+4, q+6 and of q+1, ..., q+7
  uint64_t b_even[4], b_odd[4];
  uint32_t hi[8];                  // hi(a) of q .. q+7
};

inline __m256i load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }

inline __m256i hash8(const Group8& g, __m256i x) {
  const __m256i te = _mm256_add_epi64(_mm256_mul_epu32(load(g.lo_even), x), load(g.b_even));
  const __m256i to = _mm256_add_epi64(_mm256_mul_epu32(load(g.lo_odd), x), load(g.b_odd));
  const __m256i r = _mm256_blend_epi32(_mm256_srli_epi64(te, 32), to, 0xAA);
  return _mm256_add_epi32(r, _mm256_mullo_epi32(load(g.hi), x));
}

}  // namespace

void minhash_avx2(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                  const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  constexpr size_t kGroups = 8;  // 64 permutations: 8 minima in registers while the keys stream by
  size_t p = 0;
  while (p + 8 <= num_perm) {
    const size_t groups = std::min(kGroups, (num_perm - p) / 8);
    Group8 g[kGroups];
    __m256i m[kGroups];
    for (size_t k = 0; k < groups; ++k) {
      const size_t q = p + 8 * k;
      for (size_t i = 0; i < 4; ++i) {
        g[k].lo_even[i] = a[q + 2 * i] & 0xFFFFFFFFu;
        g[k].lo_odd[i] = a[q + 2 * i + 1] & 0xFFFFFFFFu;
        g[k].b_even[i] = b[q + 2 * i];
        g[k].b_odd[i] = b[q + 2 * i + 1];
      }
      for (size_t i = 0; i < 8; ++i) g[k].hi[i] = static_cast<uint32_t>(a_hi[q + i]);
      m[k] = _mm256_set1_epi32(-1);
    }
    if (groups == kGroups) {
      for (size_t j = 0; j < n; ++j) {
        const __m256i x = _mm256_set1_epi32(static_cast<int>(keys[j]));
        for (size_t k = 0; k < kGroups; ++k) m[k] = _mm256_min_epu32(m[k], hash8(g[k], x));
      }
    } else {
      for (size_t j = 0; j < n; ++j) {
        const __m256i x = _mm256_set1_epi32(static_cast<int>(keys[j]));
        for (size_t k = 0; k < groups; ++k) m[k] = _mm256_min_epu32(m[k], hash8(g[k], x));
      }
    }
    for (size_t k = 0; k < groups; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + p + 8 * k), m[k]);
    p += 8 * groups;
  }
  if (p < num_perm) minhash_simd<Avx2>(a + p, a_hi + p, b + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
