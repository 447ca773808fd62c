#include "internal/hash.h"
#include "kernels/text_scan-inl.h"

namespace neardup::internal {

void scan_text_scalar(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& out) noexcept {
  scan_blocks(in, first_block, nblocks, out, [](const uint8_t* p, uint8_t* lower, uint64_t& word, uint64_t& high) {
    uint64_t w = 0, h = 0;
    for (unsigned i = 0; i < 64; ++i) {
      const uint8_t c = p[i];
      const bool upper = static_cast<uint8_t>(c - 'A') < 26;
      const uint8_t l = upper ? static_cast<uint8_t>(c + 32) : c;
      lower[i] = l;
      const bool is_word = static_cast<uint8_t>(l - 'a') < 26 || static_cast<uint8_t>(c - '0') < 10 || c >= 0x80;
      w |= static_cast<uint64_t>(is_word) << i;
      h |= static_cast<uint64_t>(c >= 0x80) << i;
    }
    word = w;
    high = h;
  });
}

void hash_ascii_words_scalar(const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count,
                             uint64_t seed, uint64_t* out) noexcept {
  for (size_t i = 0; i < count; ++i) {
    const size_t s = starts[i], len = ends[i] - s;
    out[i] = len <= 16 ? word_hash_padded16(lower + s, len, seed) : word_hash(lower + s, len, seed);
  }
}

}  // namespace neardup::internal
