// The part of the JSON word-text kernels that is the same for every instruction set: from a
// block's backslashes to the bytes they escape. Included by each json_text_*.cpp, compiled with
// its own flags.
#pragma once

#include <bit>

#include "kernels/json_text_kernels.h"

namespace neardup::internal {
namespace {

constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
constexpr uint64_t kOddBits = ~kEvenBits;

// The escapes a JSON string may hold, besides \u.
inline bool separator_escape(uint8_t c) noexcept {
  return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
}

// The bytes escaped by the backslashes `bs` of a block: those right after a run of backslashes of
// odd length (in a run, backslashes pair up from its start). `carry` is 1 when the block's first
// byte is escaped by a run ending the block before; it is updated for the next block. A run's
// start bit added to the run carries to the byte after it; from an even start that byte lies at
// an odd position exactly when the run is odd, and the other way round from an odd start (the
// way simdjson's stage 1 finds escaped quotes, Langdale and Lemire 2019).
inline uint64_t escaped_bytes(uint64_t bs, uint64_t& carry) noexcept {
  const uint64_t b = bs & ~carry;  // an escaped backslash starts no escape
  const uint64_t starts = b & ~(b << 1);
  const uint64_t after_even = (b + (starts & kEvenBits)) & ~b;
  const uint64_t after_odd = (b + (starts & kOddBits)) & ~b;
  const uint64_t escaped = (after_even & kOddBits) | (after_odd & kEvenBits) | carry;
  // A run that reaches the block's last byte escapes the next block's first when it is odd.
  carry = (b >> 63) & static_cast<uint64_t>(std::countl_one(b) & 1);
  return escaped;
}

// A block of a string's contents, from its masks of backslashes, bytes below 0x20 and quotes:
// the bytes escaped, and the closing quote if it is in this block (the first quote not escaped).
// Every mask comes back cut before the closing quote: what follows it is not the string's.
struct StringBlock {
  uint64_t backslashes, controls, escaped, closing;
};
inline StringBlock string_block(uint64_t bs, uint64_t ctl, uint64_t quotes, uint64_t& carry) noexcept {
  StringBlock b{bs, ctl, (bs | carry) != 0 ? escaped_bytes(bs, carry) : 0, 0};
  b.closing = quotes & ~b.escaped;
  if (b.closing != 0) {
    const uint64_t mine = (b.closing & -b.closing) - 1;
    b.backslashes &= mine;
    b.controls &= mine;
    b.escaped &= mine;
  }
  return b;
}

// string_block of the 64-byte block that starts `left` bytes before the end of the contents read
// (the vector kernels load whole blocks: the bytes past the end are not the string's).
inline StringBlock string_block_within(uint64_t bs, uint64_t ctl, uint64_t quotes, size_t left, uint64_t& carry) noexcept {
  if (left < 64) {
    const uint64_t own = (uint64_t{1} << left) - 1;
    bs &= own;
    ctl &= own;
    quotes &= own;
  }
  return string_block(bs, ctl, quotes, carry);
}

}  // namespace
}  // namespace neardup::internal
