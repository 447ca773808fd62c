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
//   kJsonWordTextDecode  a \u escape: the string must be decoded from in[*length] on, the start
//                        of the 64-byte block that holds the escape's 'u' (or the backslash
//                        before it, when it escapes the block's first byte); out holds the word
//                        text of in[0, *length), whose blanked bytes are added to *blanked;
//   kJsonWordTextInvalid a control character or an unknown escape: not a valid JSON string (the
//                        full parser says why);
//   kJsonWordTextOpen    no closing quote before in[avail], and nothing invalid before it: out
//                        holds the word text of in[0, avail) and its blanked bytes are added to
//                        *blanked. The string goes on past in[avail] (a caller reading a string
//                        in pieces cuts them after a byte that is not a backslash, so that no
//                        escape spans two), or, where in[avail] ends the line, is never closed.
// out needs room for avail rounded up to 64 bytes; in is read 64 bytes at a time up to there
// too (JSON lines are padded).
#pragma once

#include <cstddef>
#include <cstdint>

namespace neardup::internal {

enum JsonWordTextStatus : int { kJsonWordTextOk = 0, kJsonWordTextDecode = 1, kJsonWordTextInvalid = 2, kJsonWordTextOpen = 3 };

int json_word_text_scalar(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;
int json_word_text_avx2(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;
int json_word_text_avx512(const uint8_t* in, size_t avail, uint8_t* out, uint64_t* blanked, size_t* length) noexcept;

}  // namespace neardup::internal
