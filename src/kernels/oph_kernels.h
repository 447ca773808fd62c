// OPH densification kernels (oph.cpp): the pull of empty bins, vectorised.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

/// The pull of OphHasher for K <= 128 bins over the first `rounds` rounds (a multiple of 64):
/// for each empty bin j = empty[x], the pre-image pre[j * rounds + t] of the first round t whose
/// pre-image is native (native[i] = 0xFF, else 0, for i < 128) goes to from[x], or
/// 0xFFFFFFFF when none of these rounds has one. 64 rounds per step: one load of the bin's
/// pre-images and one two-table byte permutation (vpermi2b) that looks them all up.
/// Needs AVX512-VBMI as well as the AVX-512 subsets of Isa::Avx512 (oph.cpp checks).
void oph_pull_vbmi(const uint8_t* pre, size_t rounds, const uint8_t* native, const uint32_t* empty, uint32_t count,
                   uint32_t* from) noexcept;

}  // namespace neardup::internal
