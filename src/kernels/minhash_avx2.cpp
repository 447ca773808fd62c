// Compiled with -mavx2 only; called only when the CPU has AVX2.
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

}  // namespace

void minhash_avx2(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                  const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  minhash_simd<Avx2>(a, a_hi, b, num_perm, keys, n, out);
}

}  // namespace neardup::internal
