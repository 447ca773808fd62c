// The tokenizer and shingler on arbitrary bytes (valid UTF-8 or not): the SIMD word and
// character paths equal their byte-at-a-time twins for every instruction set this CPU has,
// the word hashes agree with split_words, and every sketch method takes the shingles.
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "internal/testing.h"
#include "neardup/bottomk.h"
#include "neardup/cpu.h"
#include "neardup/minhash.h"
#include "neardup/oph.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"
#include "neardup/text.h"

using namespace neardup;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int k = 1 + data[0] % 9;
  const uint64_t seed = 0x9E3779B97F4A7C15ull * (1 + data[0] / 9);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::vector<uint64_t> exact_words, exact_chars, words, chars;
  hash_words_exact(text, seed, exact_words);
  hash_chars_exact(text, seed, exact_chars);
  FUZZ_CHECK(exact_words.size() == split_words(text).size());
  for (int isa = 0; isa <= static_cast<int>(detected_isa()); ++isa) {
    force_isa(static_cast<Isa>(isa));
    words.clear();
    chars.clear();
    hash_words(text, seed, words);
    hash_chars(text, seed, chars);
    FUZZ_CHECK(words == exact_words);
    FUZZ_CHECK(chars == exact_chars);
  }
  reset_isa();

  for (const ShingleKind kind : {ShingleKind::Words, ShingleKind::Chars}) {
    Shingler shingler({kind, k, seed});
    std::vector<ShingleHash> sh;
    shingler.shingles(text, sh);
    const auto set = shingler.shingle_set(text);
    FUZZ_CHECK(set.size() <= sh.size());
    FUZZ_CHECK(sh.empty() == (kind == ShingleKind::Words ? exact_words.empty() : exact_chars.empty()));
    const MinHasher mh(16, seed);
    std::vector<SigValue> sig(16), sig2(16);
    mh.sketch(sh, sig);
    mh.sketch(set, sig2);
    FUZZ_CHECK(sig == sig2);  // repeats do not change a minimum
    const OphHasher oph(16, seed);
    oph.sketch(sh, sig);
    oph.sketch(set, sig2);
    FUZZ_CHECK(sig == sig2);
    SimHasher simhash(SimHashWeights::Set);
    FUZZ_CHECK(simhash(sh) == simhash_reference(sh, SimHashWeights::Set));
    const auto fp = bottomk_fingerprint(sh, 8);
    FUZZ_CHECK(fp.size() <= 8 && fp.size() <= set.size());
  }
  return 0;
}
