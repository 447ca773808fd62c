#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/json_text-inl.h"

namespace neardup::internal {

// The reference: 64 bytes at a time like the vector kernels, each escape looked at in turn.
int json_word_text_scalar(const uint8_t* in, size_t n, uint8_t* out, uint64_t* blanked) noexcept {
  uint64_t carry = 0, count = 0;
  for (size_t at = 0; at < n; at += 64) {
    const size_t own = std::min<size_t>(64, n - at);
    std::memcpy(out + at, in + at, own);
    uint64_t bs = 0;
    for (size_t i = 0; i < own; ++i) {
      if (in[at + i] < 0x20) return kJsonWordTextInvalid;
      bs |= static_cast<uint64_t>(in[at + i] == '\\') << i;
    }
    if ((bs | carry) == 0) continue;
    const uint64_t escaped = escaped_bytes(bs, carry);
    if (own < 64 && (escaped >> own) != 0) return kJsonWordTextInvalid;
    bool bad = false, u = false;  // a \u anywhere in the block takes precedence, as in the vector kernels
    for (uint64_t e = escaped; e != 0; e &= e - 1) {
      const uint8_t c = in[at + static_cast<size_t>(std::countr_zero(e))];
      bad |= !separator_escape(c);
      u |= c == 'u';
    }
    if (bad) return u ? kJsonWordTextDecode : kJsonWordTextInvalid;
    const uint64_t blank = bs | escaped;
    count += static_cast<uint64_t>(std::popcount(blank));
    for (uint64_t x = blank; x != 0; x &= x - 1) out[at + static_cast<size_t>(std::countr_zero(x))] = ' ';
  }
  if (carry != 0) return kJsonWordTextInvalid;  // ends inside an escape
  *blanked += count;
  return kJsonWordTextOk;
}

}  // namespace neardup::internal
