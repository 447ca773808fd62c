#include "kernels/dispatch.h"

#include "kernels/jaccard_kernels.h"
#include "kernels/minhash_kernels.h"
#include "kernels/oph_kernels.h"
#include "kernels/shingle_kernels.h"

namespace neardup::internal {
namespace {

constexpr Kernels kScalar{Isa::Scalar,
                          scan_text_scalar,
                          hash_ascii_words_scalar,
                          combine_shingles_scalar,
                          minhash_scalar,
                          simhash_count_scalar,
                          simhash_weigh_scalar,
                          simhash_close_pairs_scalar,
                          simhash_close_keys_scalar,
                          jaccard_block_scalar,
                          jaccard_block_scalar,
                          set_common_at_least_scalar,
                          common_bits_scalar,
                          unmarked_members_scalar,
                          dense_walk_scalar,
                          json_word_text_scalar,
                          nullptr,
                          false};

#if NEARDUP_X86_KERNELS
// AVX2 machines also have POPCNT and BMI1 (cpu.cpp checks), which the popcnt kernels use.
constexpr Kernels kAvx2{Isa::Avx2,
                        scan_text_avx2,
                        hash_ascii_words_avx2,
                        combine_shingles_avx2,
                        minhash_avx2,
                        simhash_count_avx2,
                        simhash_weigh_avx2,
                        simhash_close_pairs_popcnt,
                        simhash_close_keys_popcnt,
                        jaccard_block_avx2,
                        jaccard_block_avx2,
                        set_common_at_least_avx2,
                        common_bits_popcnt,
                        unmarked_members_scalar,
                        dense_walk_popcnt,
                        json_word_text_avx2,
                        oph_densify_avx2,
                        false};

// AVX-512 F/DQ/BW/VL. The text scan needs VBMI2 (compress of bytes), so it stays AVX2's here.
constexpr Kernels kAvx512{Isa::Avx512,
                          scan_text_avx2,
                          hash_ascii_words_avx512,
                          combine_shingles_avx512,
                          minhash_avx512,
                          simhash_count_avx512,
                          simhash_weigh_avx512,
                          simhash_close_pairs_popcnt,
                          simhash_close_keys_popcnt,
                          jaccard_block_avx512,
                          jaccard_block_avx2,
                          set_common_at_least_avx512,
                          common_bits_popcnt,
                          unmarked_members_avx512,
                          dense_walk_avx512,
                          json_word_text_avx512,
                          oph_densify_avx2,
                          false};

// AVX-512 with VBMI and VBMI2: the AVX-512 table with the byte-compress text scan and the OPH
// pull.
constexpr Kernels with_vbmi(Kernels k) {
  k.level = Isa::Avx512Vbmi;
  k.scan_text = scan_text_avx512;
  k.oph_densify = oph_densify_vbmi;
  k.oph_pull_vbmi = true;
  return k;
}
constexpr Kernels kAvx512Vbmi = with_vbmi(kAvx512);

#endif  // NEARDUP_X86_KERNELS

}  // namespace

const Kernels& kernels(Isa level) noexcept {
#if NEARDUP_X86_KERNELS
  switch (level) {
    case Isa::Avx512Vbmi: return kAvx512Vbmi;
    case Isa::Avx512: return kAvx512;
    case Isa::Avx2: return kAvx2;
    case Isa::Scalar: break;
  }
#else
  (void)level;  // built without the x86 kernels: the scalar ones serve every level
#endif
  return kScalar;
}

const Kernels& kernels() noexcept { return kernels(active_isa()); }

}  // namespace neardup::internal
