// Shingle combination kernels, one per instruction set; all compute the same values
// (shingle.h, docs/format.md): for every window i of k token hashes (n >= k),
//   out[i] = fmix64(c ^ XOR_{j < k} rotl(t[i + j], (j * kShingleRotation) mod 64)).
// The scalar kernel rolls the XOR (four operations per shingle whatever k is); the AVX2 one
// computes four windows at a time directly for k <= 16, the AVX-512 one (AVX512F + DQ for the
// 64-bit multiply) eight for k <= 8; both fall back to the scalar kernel for longer shingles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

void combine_shingles_scalar(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept;
void combine_shingles_avx2(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept;
void combine_shingles_avx512(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept;

}  // namespace neardup::internal
