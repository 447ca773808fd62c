#include <bit>

#include "internal/hash.h"
#include "kernels/shingle_kernels.h"
#include "neardup/shingle.h"

namespace neardup::internal {

void combine_shingles_scalar(const uint64_t* t, size_t n, size_t k, uint64_t c, uint64_t* out) noexcept {
  const int r = static_cast<int>(kShingleRotation & 63);
  const int newest = static_cast<int>(((k - 1) * kShingleRotation) & 63);
  uint64_t y = 0;
  for (size_t j = 0; j < k; ++j) y ^= std::rotl(t[j], static_cast<int>((j * kShingleRotation) & 63));
  out[0] = fmix64(y ^ c);
  // The window loses its oldest token (rotation 0), turns back by one step and gains the newest.
  for (size_t i = 1; i + k <= n; ++i) {
    y = std::rotr(y ^ t[i - 1], r) ^ std::rotl(t[i + k - 1], newest);
    out[i] = fmix64(y ^ c);
  }
}

}  // namespace neardup::internal
