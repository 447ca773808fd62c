// Shingles: a document becomes a set of 64-bit shingle hashes.
//
// Tokens are words (text.h) or, with ShingleKind::Chars, the code points of the normalised text.
// Each token is hashed once; a shingle of K consecutive tokens t1..tK is the combination
// `combine_tokens({h(t1),...,h(tK)}, seed)`, never a hash of the shingle's text.
// A document with 1..K-1 tokens has exactly one shingle (all its tokens); a document with no
// tokens has no shingle (an empty set, never paired with anything).
#pragma once

#include <memory>
#include <string>

#include "neardup/text.h"

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "neardup/types.h"

namespace neardup {

inline constexpr uint64_t kDefaultSeed = 0x6E65617264757021ULL;  // "neardup!"
inline constexpr int kDefaultShingle = 5;

enum class ShingleKind { Words, Chars };

/// Text rewritten before it is split (text.h: normalize_text).
enum class Normalization { None, Nfkc };
/// How words are found: the default definition (text.h), or ICU's dictionary word break.
enum class WordBreak { Simple, Icu };

struct ShingleOptions {
  ShingleKind kind = ShingleKind::Words;
  int k = kDefaultShingle;  ///< tokens per shingle (K words, or N characters)
  uint64_t seed = kDefaultSeed;
  Normalization normalize = Normalization::None;
  WordBreak word_break = WordBreak::Simple;  ///< Words only
};

inline constexpr unsigned kShingleRotation = 23;  ///< odd: 64 distinct rotations

/// Combines n token hashes h_0..h_{n-1} into one shingle hash (order-sensitive):
///   fmix64(seed ^ (n * 0x9E3779B97F4A7C15) ^ XOR_j rotl64(h_j, 23 j mod 64)).
/// A window of K tokens moving by one token updates the XOR in O(1) (rolling).
uint64_t combine_tokens(std::span<const uint64_t> token_hashes, uint64_t seed) noexcept;

/// The shingle set of shingle hashes: sorted, without repeats, allocated at its size.
std::vector<ShingleHash> sorted_set(std::span<const ShingleHash> hashes);
/// Gives back the room of a set made smaller (repeats dropped, pieces merged) when it is
/// more than a sixteenth of the set: sets are kept for verification.
void shrink_set(std::vector<ShingleHash>& set);

/// Turns texts into shingle hashes. Reuses its buffers: one Shingler per thread.
class Shingler {
 public:
  explicit Shingler(const ShingleOptions& options);

  /// Replaces `out` with the shingle hashes of `text` in order of occurrence, repeats included.
  void shingles(std::string_view text, std::vector<ShingleHash>& out);
  void shingles(std::string_view text, HashVector& out);
  /// The shingle set of `text`: sorted, distinct.
  std::vector<ShingleHash> shingle_set(std::string_view text);

  /// Whether shingles under `options` depend only on the sequence of the text's words, not on
  /// what separates them (no normalisation, no ICU word break): a JSON string's escapes may then
  /// be read as spaces (the JSONL reader's word text).
  static bool reads_words_only(const ShingleOptions& options) noexcept {
    return options.normalize == Normalization::None && options.word_break == WordBreak::Simple;
  }
  /// Whether shingles() of a text equals the shingles of its pieces cut after ASCII whitespace,
  /// joined by the k - 1 words before each cut (word shingles without normalisation or ICU).
  bool splits_at_spaces() const noexcept;
  /// Appends the word hashes of `text` to `tokens` (splits_at_spaces() only).
  void words(std::string_view text, HashVector& tokens) const;
  /// Replaces `out` with the shingles of consecutive word hashes (a window of k per shingle;
  /// one shingle of them all when there are k or fewer, none when there are none).
  void shingles_of_words(std::span<const uint64_t> tokens, HashVector& out) const;

  const ShingleOptions& options() const noexcept { return options_; }
  /// Frees scratch beyond kScratchKeepBytes per buffer (types.h).
  void trim() noexcept;
  /// Bytes of scratch held now.
  size_t scratch_bytes() const noexcept;

 private:
  template <class Out>
  void shingles_to(std::string_view text, Out& out);
  template <class Out>
  void shingles_of_words_to(std::span<const uint64_t> tokens, Out& out) const;

  ShingleOptions options_;
  uint64_t token_seed_;
  uint64_t combine_seed_;
  HashVector tokens_;
  std::string normalized_;
  HashVector shingles_;  // shingle_set's
  std::unique_ptr<IcuWordBreaker> icu_;
};

}  // namespace neardup
