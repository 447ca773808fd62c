// The part of the text scanning kernels that is the same for every instruction set: turning
// block masks into run boundaries. Included by each text_*.cpp, compiled with its own flags.
#pragma once

#include "kernels/text_kernels.h"

namespace neardup::internal {
namespace {

// Appends the positions of the set bits of `bits` (block b) to out, returns how many. Writes 16
// slots unconditionally: a branch on the count would mispredict about once a block.
inline size_t flatten(uint64_t bits, size_t b, uint32_t* out) noexcept {
  const auto base = static_cast<uint32_t>(b * 64);
  const auto cnt = static_cast<size_t>(__builtin_popcountll(bits));
  for (size_t i = 0; i < 16; ++i) {
    out[i] = base + static_cast<uint32_t>(__builtin_ctzll(bits | (1ULL << 63)));
    bits &= bits - 1;
  }
  for (size_t i = 16; i < cnt; ++i) {  // dense blocks only
    out[i] = base + static_cast<uint32_t>(__builtin_ctzll(bits));
    bits &= bits - 1;
  }
  return cnt;
}

struct ScalarFlatten {
  size_t operator()(uint64_t bits, size_t b, uint32_t* out) const noexcept { return flatten(bits, b, out); }
};

// Classify(in, lower, word, high) handles one block; Flatten(bits, block, out) lists positions.
template <class Classify, class Flatten = ScalarFlatten>
inline void scan_blocks(const uint8_t* in, size_t first_block, size_t nblocks, TextScan& s, Classify&& classify,
                        Flatten&& flatten_bits = {}) noexcept {
  uint64_t carry = s.carry, any_high = s.any_high;
  size_t ns = s.ns, ne = s.ne;
  for (size_t i = 0; i < nblocks; ++i) {
    const size_t b = first_block + i;
    uint64_t m, h;
    // Texts arrive cold (from the parser, one after another): fetching 16 blocks ahead is worth
    // 7-10% here (BENCHMARKS.md). A prefetch past the end of the text is harmless.
    __builtin_prefetch(in + 64 * i + 1024);
    classify(in + 64 * i, s.lower + 64 * b, m, h);
    s.high[b] = h;
    any_high |= h;
    const uint64_t shifted = (m << 1) | carry;
    carry = m >> 63;
    ns += flatten_bits(m & ~shifted, b, s.starts + ns);
    ne += flatten_bits(~m & shifted, b, s.ends + ne);
  }
  s.carry = carry;
  s.any_high = any_high;
  s.ns = ns;
  s.ne = ne;
}

}  // namespace
}  // namespace neardup::internal
