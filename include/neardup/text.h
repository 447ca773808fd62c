// Text to tokens: the word definition of neardup.
//
// A word is a maximal run of Unicode code points whose General Category is a letter (L*) or a
// number (N*), lowercased with the simple (one code point to one code point) lowercase mapping.
// Every other code point, and every byte that is not part of a well-formed UTF-8 sequence
// (overlong forms, encoded surrogates and values above U+10FFFF are not well formed), separates
// words. Invalid UTF-8 is therefore never an error. Categories and case mappings are ICU's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace neardup {

/// The lowercased words of `text`, in order (UTF-8). For tests and inspection; the hot path
/// hashes words without materialising them (hash_words).
std::vector<std::string> split_words(std::string_view text);

/// Appends to `out` the hash of each word of `text`, in order:
/// `word_hash(utf8(lowercased word), seed)` (docs/format.md).
/// Finds words with a SIMD pass (the active instruction set, cpu.h) and bitmasks.
void hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
/// The same, from the byte-at-a-time scanner: the reference hash_words is tested against.
void hash_words_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);

/// Appends to `out` one hash per code point of the normalised text: the words of `text` joined by
/// a single space (U+0020). Code point c hashes to `fmix64(seed ^ (c * 0x9E3779B97F4A7C15))`.
/// Character n-grams of this sequence ignore case, punctuation and runs of white space.
/// Finds words with the SIMD pass of hash_words.
void hash_chars(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);
/// The same, from the byte-at-a-time scanner: the reference hash_chars is tested against.
void hash_chars_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out);

/// True if code point `cp` is a word character (General Category L* or N*).
bool is_word_codepoint(uint32_t cp) noexcept;
/// Simple lowercase mapping of `cp` (itself when it has none).
uint32_t simple_lower(uint32_t cp) noexcept;

}  // namespace neardup
