// Compiled with AVX-512 F/BW/DQ/VL; called only when the CPU has them.
#include <immintrin.h>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"

namespace neardup::internal {
namespace {

// 16 x 16 all-pairs equality: a is compared with the 16 rotations of b, the results OR-ed into
// one mask register.
struct Avx512Block {
  static constexpr size_t kWidth = 16;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    const __m512i va = _mm512_loadu_si512(a);
    const __m512i vb = _mm512_loadu_si512(b);
    __mmask16 m = _mm512_cmpeq_epi32_mask(va, vb);
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 1));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 2));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 3));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 4));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 5));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 6));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 7));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 8));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 9));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 10));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 11));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 12));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 13));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 14));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 15));
    return m != 0;
  }
};

}  // namespace

long jaccard_block_avx512(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx512Block>(a, la, b, lb, smax);
}

}  // namespace neardup::internal
