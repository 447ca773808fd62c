// MinHash kernels, one per instruction set; all compute the same function (minhash.h):
// out[i] = min over j of (uint32)((a[i] * keys[j]) >> 32), or 0xFFFFFFFF when n == 0.
// a_hi[i] = a[i] >> 32 is precomputed for the SIMD variants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

void minhash_scalar(const uint64_t* a, const uint64_t* a_hi, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept;
void minhash_avx2(const uint64_t* a, const uint64_t* a_hi, size_t num_perm,
                  const uint32_t* keys, size_t n, uint32_t* out) noexcept;
void minhash_avx512(const uint64_t* a, const uint64_t* a_hi, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept;

}  // namespace neardup::internal
