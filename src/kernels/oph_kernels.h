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

/// The whole densification of OphHasher for k <= 128 bins o[0, k) (kEmptySigValue marks an empty
/// bin), with the pull over the first `rounds` rounds, taken round by round: `cols` holds round
/// t's pre-images of bins 0-127 at cols[t * 128]. Every empty bin is looked up at once in each
/// round (two two-table byte permutations, vpermi2b, of the native flags), so that a short text
/// (93 empty bins of 128) takes about as many steps as rounds until its last bin is decided
/// (about 17), not one per empty bin; the bins then take their sources' values 16 at a time.
/// Returns false, leaving o as it was, when an empty bin has no native pre-image in these
/// rounds (the caller goes on from the rounds after them); a dense bin set or an empty document
/// is left as it is. Needs AVX512-VBMI as oph_pull_vbmi.
bool oph_densify_vbmi(uint32_t* o, uint32_t k, const uint8_t* cols, size_t rounds) noexcept;

/// The same with AVX2: each round's pre-images of all 128 bins looked up 32 at a time in the
/// 128-bit set of native bins by two in-lane byte shuffles; the values then taken eight bins to
/// a gather.
bool oph_densify_avx2(uint32_t* o, uint32_t k, const uint8_t* cols, size_t rounds) noexcept;

}  // namespace neardup::internal
