// Compiled with -mavx2 only; called only when the CPU has AVX2.
//
// 8 permutations per vector of 32-bit lanes, by the identity of minhash_avx512.cpp:
//   (a * x) >> 32 = ((lo * x) >> 32) + hi * x   (mod 2^32).
#include <immintrin.h>

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

// 8 permutations per vector (minhash_lanes32's lane policy). The constants stay in L1: AVX2
// has too few registers to hold them.
struct Lanes8 {
  using T = __m256i;
  static constexpr size_t kPerms = 8;
  struct alignas(32) Group {
    // lo(a) of q+{0,1,4,5} and of q+{2,3,6,7}: shufps then gathers the upper halves in order
    // (minhash_avx512.cpp).
    uint64_t lo_low[4], lo_high[4];
    uint32_t hi[8];                  // hi(a) of q .. q+7
  };
  static Group make(const uint64_t* a, const uint64_t* a_hi) {
    Group g;
    constexpr size_t kLow[4] = {0, 1, 4, 5}, kHigh[4] = {2, 3, 6, 7};
    for (size_t i = 0; i < 4; ++i) {
      g.lo_low[i] = a[kLow[i]] & 0xFFFFFFFFu;
      g.lo_high[i] = a[kHigh[i]] & 0xFFFFFFFFu;
    }
    for (size_t i = 0; i < 8; ++i) g.hi[i] = static_cast<uint32_t>(a_hi[i]);
    return g;
  }
  static T load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
  static T hash(const Group& g, T x) {
    const __m256i tl = _mm256_mul_epu32(load(g.lo_low), x);
    const __m256i th = _mm256_mul_epu32(load(g.lo_high), x);
    const __m256i r = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(tl), _mm256_castsi256_ps(th), 0xDD));
    return _mm256_add_epi32(r, _mm256_mullo_epi32(load(g.hi), x));
  }
  static T broadcast(uint32_t key) { return _mm256_set1_epi32(static_cast<int>(key)); }
  static T ones() { return _mm256_set1_epi32(-1); }
  static T min(T u, T v) { return _mm256_min_epu32(u, v); }
  static void store(uint32_t* out, T v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v); }
};

}  // namespace

void minhash_avx2(const uint64_t* a, const uint64_t* a_hi, size_t num_perm, const uint32_t* keys, size_t n,
                  uint32_t* out) noexcept {
  minhash_lanes32<Lanes8, Avx2>(a, a_hi, num_perm, keys, n, out);
}

}  // namespace neardup::internal
