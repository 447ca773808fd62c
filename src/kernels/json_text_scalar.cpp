#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/json_text-inl.h"

namespace neardup::internal {

// The reference: 64 bytes at a time like the vector kernels, each escape looked at in turn.
int json_word_text_scalar(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept {
  uint64_t carry = 0, count = 0;
  for (size_t at = 0; at < avail; at += 64) {
    const size_t own = std::min<size_t>(64, avail - at);
    std::memcpy(out + at, in + at, own);
    uint64_t bs = 0, ctl = 0, quote = 0;
    for (size_t i = 0; i < own; ++i) {
      bs |= static_cast<uint64_t>(in[at + i] == '\\') << i;
      ctl |= static_cast<uint64_t>(in[at + i] < 0x20) << i;
      quote |= static_cast<uint64_t>(in[at + i] == '"') << i;
    }
    const uint64_t carry_in = carry;
    const StringBlock b = string_block(bs, ctl, quote, carry);
    if (b.controls != 0) return kJsonWordTextInvalid;
    bool bad = false, u = false;  // a \u anywhere in the block takes precedence, as in the vector kernels
    for (uint64_t e = b.escaped; e != 0; e &= e - 1) {
      const uint8_t c = in[at + static_cast<size_t>(std::countr_zero(e))];
      bad |= !separator_escape(c);
      u |= c == 'u';
    }
    if (bad && !u) return kJsonWordTextInvalid;
    if (bad) {  // where the word text stops: this block, or the backslash before it that escapes its first byte
      *length = at - carry_in;
      *blanked += count - carry_in;
      return kJsonWordTextDecode;
    }
    const uint64_t blank = b.backslashes | b.escaped;
    count += static_cast<uint64_t>(std::popcount(blank));
    for (uint64_t x = blank; x != 0; x &= x - 1) out[at + static_cast<size_t>(std::countr_zero(x))] = ' ';
    if (b.closing != 0) {
      *length = at + static_cast<size_t>(std::countr_zero(b.closing));
      *blanked += count;
      return kJsonWordTextOk;
    }
  }
  *blanked += count;
  return kJsonWordTextOpen;  // no closing quote yet
}

}  // namespace neardup::internal
