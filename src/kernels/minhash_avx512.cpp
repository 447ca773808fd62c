// Compiled with -mavx512f/dq/bw/vl only; called only when the CPU has them.
//
// 16 permutations per vector of 32-bit lanes. Only bits 32..63 of a * x + b (mod 2^64) are
// kept, and with a = hi * 2^32 + lo:
//   (a * x + b) >> 32 = ((lo * x + b) >> 32) + hi * x   (mod 2^32),
// since hi * x * 2^32 changes only bits 32 and up, and carries out of bit 63 are dropped either
// way. lo * x + b needs 64-bit lanes (vpmuludq on the even and the odd permutations, whose upper
// halves are then interleaved by a shift and a blend); hi * x needs only its low 32 bits
// (vpmulld on 16 lanes). That is 9 instructions per 16 values instead of 14 with 64-bit lanes.
#include <immintrin.h>

#include <algorithm>

#include "kernels/minhash_generic-inl.h"

namespace neardup::internal {
namespace {

struct Avx512 {
  using T = __m512i;
  static constexpr size_t kLanes = 8;
  static T load(const uint64_t* p) { return _mm512_loadu_si512(p); }
  static T set1(uint64_t x) { return _mm512_set1_epi64(static_cast<long long>(x)); }
  static T mul32(T a, T b) { return _mm512_mul_epu32(a, b); }
  static T add(T a, T b) { return _mm512_add_epi64(a, b); }
  static T shl32(T a) { return _mm512_slli_epi64(a, 32); }
  static T shr32(T a) { return _mm512_srli_epi64(a, 32); }
  static T min(T a, T b) { return _mm512_min_epu64(a, b); }
  static void store32(T v, uint32_t* out) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi64_epi32(v));
  }
};

// The constants of 16 permutations q .. q+15, arranged for the 32-bit-lane form.
struct Group16 {
  __m512i lo_even, lo_odd;  // lo(a) of q, q+2, ..., q+14 and of q+1, ..., q+15, in 64-bit lanes
  __m512i b_even, b_odd;
  __m512i hi;               // hi(a) of q .. q+15, in 32-bit lanes
};

inline Group16 make_group(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b) {
  const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  const __m512i a0 = _mm512_loadu_si512(a), a1 = _mm512_loadu_si512(a + 8);
  const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 8);
  Group16 g;
  g.lo_even = _mm512_permutex2var_epi64(a0, even, a1);
  g.lo_odd = _mm512_permutex2var_epi64(a0, odd, a1);
  g.b_even = _mm512_permutex2var_epi64(b0, even, b1);
  g.b_odd = _mm512_permutex2var_epi64(b0, odd, b1);
  g.hi = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_loadu_si512(a_hi))),
                            _mm512_cvtepi64_epi32(_mm512_loadu_si512(a_hi + 8)), 1);
  return g;
}

// The 16 hashes of key x (broadcast to every 32-bit lane), in permutation order.
inline __m512i hash16(const Group16& g, __m512i x) {
  const __m512i te = _mm512_add_epi64(_mm512_mul_epu32(g.lo_even, x), g.b_even);
  const __m512i to = _mm512_add_epi64(_mm512_mul_epu32(g.lo_odd, x), g.b_odd);
  const __m512i r = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(te, 32), to);
  return _mm512_add_epi32(r, _mm512_mullo_epi32(g.hi, x));
}

}  // namespace

void minhash_avx512(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  constexpr size_t kGroups = 8;  // 128 permutations: 8 minima in registers while the keys stream by
  size_t p = 0;
  while (p + 16 <= num_perm) {
    const size_t groups = std::min(kGroups, (num_perm - p) / 16);
    Group16 g[kGroups];
    __m512i m[kGroups];
    for (size_t k = 0; k < groups; ++k) {
      g[k] = make_group(a + p + 16 * k, a_hi + p + 16 * k, b + p + 16 * k);
      m[k] = _mm512_set1_epi32(-1);
    }
    if (groups == kGroups) {
      for (size_t j = 0; j < n; ++j) {
        const __m512i x = _mm512_set1_epi32(static_cast<int>(keys[j]));
        for (size_t k = 0; k < kGroups; ++k) m[k] = _mm512_min_epu32(m[k], hash16(g[k], x));
      }
    } else {
      for (size_t j = 0; j < n; ++j) {
        const __m512i x = _mm512_set1_epi32(static_cast<int>(keys[j]));
        for (size_t k = 0; k < groups; ++k) m[k] = _mm512_min_epu32(m[k], hash16(g[k], x));
      }
    }
    for (size_t k = 0; k < groups; ++k) _mm512_storeu_si512(out + p + 16 * k, m[k]);
    p += 16 * groups;
  }
  if (p < num_perm) minhash_simd<Avx512>(a + p, a_hi + p, b + p, num_perm - p, keys, n, out + p);
}

}  // namespace neardup::internal
