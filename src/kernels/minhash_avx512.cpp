// Compiled with -mavx512f/dq/bw/vl only; called only when the CPU has them.
//
// 16 permutations per vector of 32-bit lanes. Only bits 32..63 of a * x (mod 2^64) are kept,
// and with a = hi * 2^32 + lo:
//   (a * x) >> 32 = ((lo * x) >> 32) + hi * x   (mod 2^32),
// since hi * x * 2^32 changes only bits 32 and up, and carries out of bit 63 are dropped either
// way. lo * x needs 64-bit lanes (vpmuludq on the even and the odd permutations, whose upper
// halves are then gathered by one shufps); hi * x needs only its low 32 bits (vpmulld on 16
// lanes). That is 6 instructions per 16 values. shufps picks 32-bit lanes 1 and 3 of each
// 128-bit chunk of either vector, so the first vector holds the permutations 4c and 4c+1 of
// chunk c and the second 4c+2 and 4c+3: the result is in order.
#include <immintrin.h>

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

// 16 permutations per vector (minhash_lanes32's lane policy).
struct Lanes16 {
  using T = __m512i;
  static constexpr size_t kPerms = 16;
  // The constants of permutations q .. q+15.
  struct Group {
    __m512i lo_low, lo_high;  // lo(a) of q+{0,1,4,5,8,9,12,13} and q+{2,3,6,7,10,11,14,15}
    __m512i hi;               // hi(a) of q .. q+15, in 32-bit lanes
  };
  static Group make(const uint64_t* a, const uint64_t* a_hi) {
    const __m512i low = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
    const __m512i high = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    const __m512i a0 = _mm512_loadu_si512(a), a1 = _mm512_loadu_si512(a + 8);
    Group g;
    g.lo_low = _mm512_permutex2var_epi64(a0, low, a1);
    g.lo_high = _mm512_permutex2var_epi64(a0, high, a1);
    g.hi = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_loadu_si512(a_hi))),
                              _mm512_cvtepi64_epi32(_mm512_loadu_si512(a_hi + 8)), 1);
    return g;
  }
  // The 16 hashes of key x (in every 32-bit lane), in permutation order.
  static T hash(const Group& g, T x) {
    const __m512i tl = _mm512_mul_epu32(g.lo_low, x);
    const __m512i th = _mm512_mul_epu32(g.lo_high, x);
    const __m512i r = _mm512_castps_si512(
        _mm512_shuffle_ps(_mm512_castsi512_ps(tl), _mm512_castsi512_ps(th), 0xDD));
    return _mm512_add_epi32(r, _mm512_mullo_epi32(g.hi, x));
  }
  static T broadcast(uint32_t key) { return _mm512_set1_epi32(static_cast<int>(key)); }
  static T ones() { return _mm512_set1_epi32(-1); }
  static T min(T u, T v) { return _mm512_min_epu32(u, v); }
  static void store(uint32_t* out, T v) { _mm512_storeu_si512(out, v); }
};

}  // namespace

void minhash_avx512(const uint64_t* a, const uint64_t* a_hi, size_t num_perm, const uint32_t* keys, size_t n,
                    uint32_t* out) noexcept {
  minhash_lanes32<Lanes16, Avx512>(a, a_hi, num_perm, keys, n, out);
}

}  // namespace neardup::internal
