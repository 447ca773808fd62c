// JSON string contents as word text, one kernel per instruction set; all compute the same function.
//
// For word shingles only the words of a text matter, and every JSON escape but \uXXXX stands for
// a character that separates words (\" \\ \/ \b \f \n \r \t). So the raw contents of a JSON
// string, with the two bytes of each such escape turned into spaces, have exactly the words of
// the decoded string: the text is tokenized without decoding it first (a decode stops at every
// escape, about one in 30 bytes of source code).
//
// json_word_text reads a JSON string's contents from `in` (the byte after its opening quote) up
// to its closing quote, the first quote no backslash escapes, which must come before in[avail].
// It copies the contents to out with both bytes of every escape set to ' ', and returns:
//   kJsonWordTextOk      with *length the contents' length (the closing quote at in[*length]) and
//                        the bytes turned into spaces added to *blanked (the decoded string is
//                        *length - *blanked / 2 bytes long: each escape decodes to one byte);
//   kJsonWordTextDecode  a \u escape: the string must be decoded;
//   kJsonWordTextInvalid a control character, an unknown escape, or no closing quote before
//                        in[avail]: not a valid JSON string (the full parser says why).
// out needs room for avail rounded up to 64 bytes; in is read 64 bytes at a time up to there
// too (JSON lines are padded).
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

enum JsonWordTextStatus : int { kJsonWordTextOk = 0, kJsonWordTextDecode = 1, kJsonWordTextInvalid = 2 };

int json_word_text_scalar(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;
int json_word_text_avx2(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;

}  // namespace neardup::internal
