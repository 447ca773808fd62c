// Text to tokens: the word definition of neardup.
//
// A word is a maximal run of Unicode code points whose General Category is a letter (L*), a mark
// (M*: accents, vowel signs of Indic and Thai scripts, which never split a word, as in Unicode
// Standard Annex #29) or a number (N*), lowercased with the simple (one code point to one code point) lowercase mapping.
// Every other code point, and every byte that is not part of a well-formed UTF-8 sequence
// (overlong forms, encoded surrogates and values above U+10FFFF are not well formed), separates
// words. Invalid UTF-8 is therefore never an error. Categories and case mappings are ICU's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/types.h"

namespace neardup {

/// The lowercased words of `text`, in order (UTF-8). For tests and inspection; the hot path
/// hashes words without materialising them (hash_words).
std::vector<std::string> split_words(std::string_view text);

/// Appends to `out` the hash of each word of `text`, in order:
/// `word_hash(utf8(lowercased word), seed)` (docs/format.md).
/// Finds words with a SIMD pass (the active instruction set, cpu.h) and bitmasks.
void hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
void hash_words(std::string_view text, uint64_t seed, HashVector& out);

/// Appends to `out` one hash per code point of the normalised text: the words of `text` joined by
/// a single space (U+0020). Code point c hashes to `fmix64(seed ^ (c * 0x9E3779B97F4A7C15))`.
/// Character n-grams of this sequence ignore case, punctuation and runs of white space.
/// Finds words with the SIMD pass of hash_words.
void hash_chars(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
void hash_chars(std::string_view text, uint64_t seed, HashVector& out);

/// Rewrites `text` for --normalize nfkc: NFKC with case folding, accents (non-spacing marks after
/// canonical decomposition) removed, so that NFC and NFD forms, full-width and ASCII letters,
/// "Cafe" and "café" give the same words. ICU's normaliser: shingling then runs at about a fifth
/// of its speed (26 against 138 MB/s of CPU per core on Debian licence files; BENCHMARKS.md).
void normalize_text(std::string_view text, std::string& out);

/// Word hashes from ICU's word break iterator (Unicode Standard Annex #29, with dictionaries for
/// Chinese, Japanese, Thai, Lao, Khmer and Burmese, which are written without spaces): each
/// segment that is a word, its word characters lowercased, hashed as hash_words hashes a word.
/// One per thread (it owns an ICU iterator).
class IcuWordBreaker {
 public:
  IcuWordBreaker();
  ~IcuWordBreaker();
  IcuWordBreaker(const IcuWordBreaker&) = delete;
  IcuWordBreaker& operator=(const IcuWordBreaker&) = delete;
  void hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
  void hash_words(std::string_view text, uint64_t seed, HashVector& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Bytes of `text` in scripts written without spaces between words (Han, kana, Thai, Lao,
/// Khmer, Myanmar, Tibetan), where the default word definition takes a whole run for one word.
uint64_t unspaced_script_bytes(std::string_view text);

/// True if code point `cp` is a word character (General Category L*, M* or N*).
bool is_word_codepoint(uint32_t cp) noexcept;
/// Simple lowercase mapping of `cp` (itself when it has none).
uint32_t simple_lower(uint32_t cp) noexcept;

}  // namespace neardup
