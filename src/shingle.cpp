#include "neardup/shingle.h"

#include <algorithm>
#include <bit>

#include "internal/scratch.h"
#include "internal/hash.h"
#include "internal/radix_sort.h"
#include "internal/sorted_merge.h"
#include "kernels/dispatch.h"
#include "kernels/shingle_kernels.h"
#include "internal/option_text.h"
#include "neardup/cpu.h"
#include "neardup/error.h"
#include "neardup/text.h"

namespace neardup {

uint64_t combine_tokens(std::span<const uint64_t> token_hashes, uint64_t seed) noexcept {
  uint64_t y = 0;
  for (size_t j = 0; j < token_hashes.size(); ++j) y ^= std::rotl(token_hashes[j], static_cast<int>((j * kShingleRotation) & 63));
  return internal::fmix64(y ^ seed ^ (token_hashes.size() * internal::kGolden));
}

namespace {

// combine_tokens for every window of k tokens (n >= k), with the kernel of the CPU.
void combine_all(const uint64_t* t, size_t n, size_t k, uint64_t seed, ShingleHash* out) noexcept {
  const uint64_t c = seed ^ (k * internal::kGolden);
  internal::kernels().combine_shingles(t, n, k, c, out);
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
  if (options.word_break == WordBreak::Icu) {
    if (options.kind != ShingleKind::Words) throw UsageError("ICU word break applies to word shingles, not " NEARDUP_OPT("chars"));
    icu_ = std::make_unique<IcuWordBreaker>();
  }
}

void Shingler::shingles(std::string_view text, std::vector<ShingleHash>& out) {
  out.clear();
  tokens_.clear();
  if (options_.normalize == Normalization::Nfkc) {
    normalize_text(text, normalized_);
    text = normalized_;
  }
  if (icu_)
    icu_->hash_words(text, token_seed_, tokens_);
  else if (options_.kind == ShingleKind::Words)
    hash_words(text, token_seed_, tokens_);
  else
    hash_chars(text, token_seed_, tokens_);
  shingles_of_words(tokens_, out);
}

bool Shingler::splits_at_spaces() const noexcept {
  return options_.kind == ShingleKind::Words && !icu_ && options_.normalize != Normalization::Nfkc;
}

void Shingler::words(std::string_view text, std::vector<uint64_t>& tokens) const {
  NEARDUP_ASSERT(splits_at_spaces());
  hash_words(text, token_seed_, tokens);
}

void Shingler::shingles_of_words(std::span<const uint64_t> t, std::vector<ShingleHash>& out) const {
  out.clear();
  const size_t n = t.size(), k = static_cast<size_t>(options_.k);
  if (n == 0) return;
  if (n <= k) {
    out.push_back(combine_tokens(t, combine_seed_));
    return;
  }
  out.resize(n - k + 1);
  combine_all(t.data(), n, k, combine_seed_, out.data());
}

std::vector<ShingleHash> Shingler::shingle_set(std::string_view text) {
  std::vector<ShingleHash> out;
  shingles(text, out);
  make_set(out);
  return out;
}

void Shingler::trim() noexcept {
  internal::trim_scratch(tokens_);
  internal::trim_scratch(normalized_);
}

size_t Shingler::scratch_bytes() const noexcept { return tokens_.capacity() * sizeof(uint64_t) + normalized_.capacity(); }

void make_set(std::vector<ShingleHash>& out) {
  // Radix sort from about 160 hashes on, with digits growing with n (measured here per hash:
  // std::sort 30-40 ns from 200 to 2,000 hashes, this 19-23 ns; 8-bit digits below about 800,
  // 11-bit to 50K, 16-bit above). Only the high 32 bits are radix sorted, half the passes of all
  // 64: the hashes are uniform, so hashes sharing their high half are rare (n / 2^32 of them,
  // apart from repeated shingles) and the runs of equal high halves are then sorted in place, as
  // the repeats are dropped (1.4-1.7x faster than sorting all 64 bits).
  const size_t n = out.size();
  if (n < 160) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return;
  }
  thread_local std::vector<ShingleHash> tmp;
  tmp.resize(n);
  internal::radix_sort_by_bits(out.data(), tmp.data(), n, 32, 64, [](ShingleHash x) { return x; },
                               n >= 50000 ? 16 : n >= 800 ? 11 : 8);
  internal::trim_scratch(tmp);
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    const uint64_t hi = out[i] >> 32;
    size_t j = i + 1;
    while (j < n && (out[j] >> 32) == hi) ++j;
    if (j - i > 1) std::sort(out.begin() + static_cast<ptrdiff_t>(i), out.begin() + static_cast<ptrdiff_t>(j));
    for (size_t k = i; k < j; ++k)
      if (w == 0 || out[w - 1] != out[k]) out[w++] = out[k];
    i = j;
  }
  out.resize(w);
}

double jaccard(std::span<const ShingleHash> a, std::span<const ShingleHash> b) noexcept {
  if (a.empty() || b.empty()) return 0.0;
  const auto inter = static_cast<size_t>(internal::count_common(a.data(), a.size(), b.data(), b.size()));
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

}  // namespace neardup
