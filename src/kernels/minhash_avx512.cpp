// Compiled with -mavx512f/dq/bw/vl only; called only when the CPU has them.
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

}  // namespace

void minhash_avx512(const uint64_t* a, const uint64_t* a_hi, const uint64_t* b, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  minhash_simd<Avx512>(a, a_hi, b, num_perm, keys, n, out);
}

}  // namespace neardup::internal
