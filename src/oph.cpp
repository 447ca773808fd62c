#include "neardup/oph.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <string>

#include "internal/hash.h"
#include "neardup/error.h"
#include "neardup/minhash.h"

namespace neardup {
namespace {

constexpr SigValue kLargestValue = 0xFFFFFFFEu;  // 0xFFFFFFFF marks an empty bin
// Distinguishes the densification stream from the MinHash coefficients of the same seed.
constexpr uint64_t kRoundsSalt = 0x6F70682D726F756EULL;  // "oph-roun"

// The inverse of a modulo m (gcd(a, m) = 1), by the extended Euclidean algorithm.
uint32_t inverse_mod(uint32_t a, uint32_t m) {
  int64_t t = 0, new_t = 1, r = m, new_r = a;
  while (new_r != 0) {
    const int64_t q = r / new_r;
    t = std::exchange(new_t, t - q * new_t);
    r = std::exchange(new_r, r - q * new_r);
  }
  NEARDUP_ASSERT(r == 1);
  return static_cast<uint32_t>(t < 0 ? t + m : t);
}

}  // namespace

OphHasher::OphHasher(int num_bins, uint64_t seed) : k_(num_bins) {
  if (num_bins < 1 || num_bins > 4096)
    throw UsageError("number of OPH bins must be between 1 and 4096, got " + std::to_string(num_bins));
  kk_ = static_cast<uint32_t>(num_bins);
  // Enough rounds that, with m >= 2 native bins, an empty bin is left unassigned with
  // probability below (1 - 2/K)^(16 K) ~ e^-32; the fallback after them is consistent anyway.
  const size_t rounds = 16 * static_cast<size_t>(num_bins) + 64;
  a_.resize(rounds);
  a_inv_.resize(rounds);
  b_.resize(rounds);
  uint64_t state = seed ^ kRoundsSalt;
  for (size_t t = 0; t < rounds; ++t) {
    uint32_t a = 1;
    if (kk_ > 1) {
      do a = static_cast<uint32_t>(internal::splitmix64(state) % kk_);
      while (a == 0 || std::gcd(a, kk_) != 1);
    }
    a_[t] = a;
    a_inv_[t] = kk_ > 1 ? inverse_mod(a, kk_) : 0;
    b_[t] = static_cast<uint32_t>(internal::splitmix64(state) % kk_);
  }
}

uint32_t OphHasher::image(uint32_t i, size_t t) const noexcept {
  return static_cast<uint32_t>((uint64_t{a_[t]} * i + b_[t]) % kk_);
}

uint32_t OphHasher::pre_image(uint32_t j, size_t t) const noexcept {
  return static_cast<uint32_t>(uint64_t{a_inv_[t]} * ((j + kk_ - b_[t]) % kk_) % kk_);
}

void OphHasher::bin(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  std::fill(out.begin(), out.end(), kEmptySigValue);
  const uint64_t k = kk_;
  SigValue* o = out.data();
  for (const ShingleHash s : shingles) {
    const auto j = static_cast<size_t>(((s >> 32) * k) >> 32);
    const SigValue v = std::min(static_cast<SigValue>(s), kLargestValue);
    o[j] = std::min(o[j], v);
  }
}

int OphHasher::empty_bins(std::span<const ShingleHash> shingles) const {
  std::vector<SigValue> out(kk_);
  bin(shingles, out);
  return static_cast<int>(std::count(out.begin(), out.end(), kEmptySigValue));
}

void OphHasher::sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out, Densify how) const {
  NEARDUP_ASSERT(out.size() == kk_);
  bin(shingles, out);
  thread_local std::vector<uint32_t> native, empty;
  native.clear();
  empty.clear();
  for (uint32_t j = 0; j < kk_; ++j) (out[j] == kEmptySigValue ? empty : native).push_back(j);
  if (empty.empty() || native.empty()) return;  // dense already, or an empty document
  if (native.size() == 1) {  // every priority order ends at the one native bin
    std::fill(out.begin(), out.end(), out[native[0]]);
    return;
  }
  const double e = static_cast<double>(empty.size()), m = static_cast<double>(native.size());
  if (how == Densify::Auto) how = e / m <= std::log(e) + 1.0 ? Densify::Pull : Densify::Push;
  const size_t rounds = a_.size();
  thread_local std::vector<uint8_t> is_native, done;
  is_native.assign(kk_, 0);
  for (const uint32_t i : native) is_native[i] = 1;
  done = is_native;
  size_t left = empty.size();
  if (how == Densify::Pull) {
    for (const uint32_t j : empty)
      for (size_t t = 0; t < rounds; ++t)
        if (const uint32_t i = pre_image(j, t); is_native[i]) {
          out[j] = out[i];
          done[j] = 1;
          --left;
          break;
        }
  } else {
    // Round by round, each native bin throws to its image; within a round the images are
    // distinct, so the first round that reaches an empty bin decides it, as in the pull.
    for (size_t t = 0; t < rounds && left > 0; ++t)
      for (const uint32_t i : native)
        if (const uint32_t j = image(i, t); !done[j]) {
          out[j] = out[i];
          done[j] = 1;
          --left;
        }
  }
  if (left == 0) return;
  // Past the last round (probability below e^-32 per bin): the next native bin, cyclically. The
  // priority of bin j is still one fixed order (the rounds' pre-images, then the cyclic order),
  // the same in every document, so the assignment stays consistent.
  for (const uint32_t j : empty) {
    if (done[j]) continue;
    uint32_t i = (j + 1) % kk_;
    while (!is_native[i]) i = (i + 1) % kk_;
    out[j] = out[i];
  }
}

std::vector<SigValue> OphHasher::sketch(std::span<const ShingleHash> shingles) const {
  std::vector<SigValue> out(kk_);
  sketch(shingles, out);
  return out;
}

}  // namespace neardup
