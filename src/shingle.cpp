#include "neardup/shingle.h"

#include <algorithm>

#include "internal/hash.h"
#include "neardup/error.h"
#include "neardup/text.h"

namespace neardup {

uint64_t combine_tokens(std::span<const uint64_t> token_hashes, uint64_t seed) noexcept {
  uint64_t acc = internal::fmix64(seed ^ (token_hashes.size() * internal::kGolden));
  for (uint64_t h : token_hashes) acc = internal::rotl64(acc ^ h, 29) * internal::kGolden;
  return internal::fmix64(acc);
}

Shingler::Shingler(const ShingleOptions& options)
    : options_(options),
      // Word hashes use the seed itself; the combination a derived one, so that a 1-token shingle
      // is not its token hash.
      token_seed_(options.seed),
      combine_seed_(internal::fmix64(options.seed + 0x5348494E474C45ULL)) {
  if (options.k < 1 || options.k > 64)
    throw UsageError("shingle size must be between 1 and 64, got " + std::to_string(options.k));
}

void Shingler::shingles(std::string_view text, std::vector<ShingleHash>& out) {
  out.clear();
  tokens_.clear();
  if (options_.kind == ShingleKind::Words)
    hash_words(text, token_seed_, tokens_);
  else
    hash_chars(text, token_seed_, tokens_);
  const size_t n = tokens_.size();
  if (n == 0) return;
  const size_t k = static_cast<size_t>(options_.k);
  if (n <= k) {
    out.push_back(combine_tokens(tokens_, combine_seed_));
    return;
  }
  out.resize(n - k + 1);
  const uint64_t* t = tokens_.data();
  for (size_t i = 0; i + k <= n; ++i) out[i] = combine_tokens({t + i, k}, combine_seed_);
}

std::vector<ShingleHash> Shingler::shingle_set(std::string_view text) {
  std::vector<ShingleHash> out;
  shingles(text, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double jaccard(std::span<const ShingleHash> a, std::span<const ShingleHash> b) noexcept {
  if (a.empty() || b.empty()) return 0.0;
  size_t i = 0, j = 0, inter = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ++inter, ++i, ++j;
    }
  }
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

}  // namespace neardup
