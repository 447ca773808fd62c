#include "kernels/minhash_kernels.h"

namespace neardup::internal {

// The reference. Permutations outer, keys inner: each minimum stays in a register.
void minhash_scalar(const uint64_t* a, const uint64_t*, size_t num_perm,
                    const uint32_t* keys, size_t n, uint32_t* out) noexcept {
  for (size_t i = 0; i < num_perm; ++i) {
    uint32_t m = 0xFFFFFFFFu;
    const uint64_t ai = a[i];
    for (size_t j = 0; j < n; ++j) {
      const uint32_t v = static_cast<uint32_t>((ai * keys[j]) >> 32);
      m = v < m ? v : m;
    }
    out[i] = m;
  }
}

}  // namespace neardup::internal
