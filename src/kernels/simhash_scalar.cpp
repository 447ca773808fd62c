// The scalar twins of the SimHash tallies. count adds a byte of h at a time: a table spreads
// its 8 bits into the 8 byte lanes of a 64-bit word, so one add counts 8 bits; a chunk of 255
// features cannot overflow a lane.
#include <array>

#include "kernels/simhash_close-inl.h"
#include "kernels/simhash_kernels.h"

namespace neardup::internal {
namespace {

constexpr std::array<uint64_t, 256> make_spread() {
  std::array<uint64_t, 256> t{};
  for (unsigned v = 0; v < 256; ++v)
    for (unsigned b = 0; b < 8; ++b)
      if (v >> b & 1) t[v] |= uint64_t{1} << (8 * b);
  return t;
}
constexpr auto kSpread = make_spread();

}  // namespace

void simhash_count_scalar(const uint64_t* h, size_t n, uint64_t counts[64]) noexcept {
  for (size_t start = 0; start < n; start += 255) {
    const size_t end = n - start < 255 ? n : start + 255;
    uint64_t lanes[8] = {};
    for (size_t i = start; i < end; ++i) {
      const uint64_t x = h[i];
      for (int q = 0; q < 8; ++q) lanes[q] += kSpread[(x >> (8 * q)) & 0xFF];
    }
    for (int q = 0; q < 8; ++q)
      for (int b = 0; b < 8; ++b) counts[8 * q + b] += (lanes[q] >> (8 * b)) & 0xFF;
  }
}

void simhash_weigh_scalar(const uint64_t* h, const uint32_t* w, size_t n, uint64_t sums[64]) noexcept {
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = h[i];
    const uint64_t wi = w[i];
    for (int b = 0; b < 64; ++b) sums[b] += wi & (0 - ((x >> b) & 1));
  }
}

void simhash_close_pairs_scalar(const SimHashEntry* e, size_t n, int k, std::vector<uint32_t>& out_a,
                                std::vector<uint32_t>& out_b) {
  close_pairs(e, n, k, out_a, out_b);
}

void simhash_close_keys_scalar(const uint64_t* keys, size_t n, uint64_t q, int k, std::vector<uint32_t>& hits) {
  close_keys(keys, n, q, k, hits);
}

}  // namespace neardup::internal
