#include "neardup/shingle.h"

#include <algorithm>

#include "internal/hash.h"
#include "internal/sorted_merge.h"
#include "neardup/error.h"
#include "neardup/text.h"

namespace neardup {

uint64_t combine_tokens(std::span<const uint64_t> token_hashes, uint64_t seed) noexcept {
  uint64_t acc = internal::fmix64(seed ^ (token_hashes.size() * internal::kGolden));
  for (uint64_t h : token_hashes) acc = internal::rotl64(acc ^ h, 29) * internal::kGolden;
  return internal::fmix64(acc);
}

namespace {

// combine_tokens for every window of K tokens, K fixed.
template <size_t K>
void combine_all(const uint64_t* t, size_t n, uint64_t seed, ShingleHash* out) noexcept {
  const uint64_t init = internal::fmix64(seed ^ (K * internal::kGolden));
  for (size_t i = 0; i + K <= n; ++i) {
    uint64_t acc = init;
    for (size_t j = 0; j < K; ++j) acc = internal::rotl64(acc ^ t[i + j], 29) * internal::kGolden;
    out[i] = internal::fmix64(acc);
  }
}

}  // namespace

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
  // K known at compile time for the common sizes: the combination unrolls, and consecutive
  // shingles, independent of each other, overlap in the pipeline.
  switch (k) {
    case 1: combine_all<1>(t, n, combine_seed_, out.data()); return;
    case 2: combine_all<2>(t, n, combine_seed_, out.data()); return;
    case 3: combine_all<3>(t, n, combine_seed_, out.data()); return;
    case 4: combine_all<4>(t, n, combine_seed_, out.data()); return;
    case 5: combine_all<5>(t, n, combine_seed_, out.data()); return;
    case 6: combine_all<6>(t, n, combine_seed_, out.data()); return;
    case 7: combine_all<7>(t, n, combine_seed_, out.data()); return;
    case 8: combine_all<8>(t, n, combine_seed_, out.data()); return;
    default:
      for (size_t i = 0; i + k <= n; ++i) out[i] = combine_tokens({t + i, k}, combine_seed_);
  }
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
  const auto inter = static_cast<size_t>(internal::count_common(a.data(), a.size(), b.data(), b.size()));
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

}  // namespace neardup
