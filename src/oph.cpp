#include "neardup/oph.h"
#include "internal/testing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <string>

#include "internal/hash.h"
#include "kernels/dispatch.h"
#include "kernels/oph_kernels.h"
#include "neardup/cpu.h"
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

OphHasher::OphHasher(int num_bins, uint64_t seed) {
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
  fastmod_m_ = ~uint64_t{0} / kk_ + 1;
  // The first rounds, where nearly every empty bin of a dense document is decided, as tables.
  image_.resize(kTableRounds * kk_);
  pre_image_.resize(kTableRounds * kk_);
  for (size_t t = 0; t < kTableRounds; ++t)
    for (uint32_t i = 0; i < kk_; ++i) {
      const auto j = static_cast<uint32_t>((uint64_t{a_[t]} * i + b_[t]) % kk_);
      image_[t * kk_ + i] = static_cast<uint16_t>(j);
      pre_image_[t * kk_ + j] = static_cast<uint16_t>(i);
    }
  // Up to 128 bins: each bin's pre-images of the first kVbmiRounds rounds in a row of bytes, for
  // the vectorised pull; fewer (a multiple of 64) when there are fewer rounds (80 for K = 1).
  row_rounds_ = std::min(kVbmiRounds, rounds / 64 * 64);
  if (kk_ <= 128) {
    pre_rows_.resize(size_t{kk_} * row_rounds_);
    pre_cols_.assign(row_rounds_ * 128, 0);
    for (uint32_t j = 0; j < kk_; ++j)
      for (size_t t = 0; t < row_rounds_; ++t)
        pre_rows_[j * row_rounds_ + t] = pre_cols_[t * 128 + j] = static_cast<uint8_t>(pre_image(j, t));
  }
}

// x mod K without a division (Lemire, Kaser and Kurz 2019), for x < 2^32.
inline uint32_t OphHasher::mod(uint64_t x) const noexcept {
  const uint64_t low = fastmod_m_ * x;
  return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * kk_) >> 64);
}

uint32_t OphHasher::image(uint32_t i, size_t t) const noexcept {
  if (t < kTableRounds) return image_[t * kk_ + i];
  return mod(uint64_t{a_[t]} * i + b_[t]);
}

uint32_t OphHasher::pre_image(uint32_t j, size_t t) const noexcept {
  if (t < kTableRounds) return pre_image_[t * kk_ + j];
  return mod(uint64_t{a_inv_[t]} * mod(j + kk_ - b_[t]));
}

void OphHasher::bin(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  std::fill(out.begin(), out.end(), kEmptySigValue);
  bin_into(shingles, out);
}

void OphHasher::bin_into(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  NEARDUP_ASSERT(out.size() == kk_);
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

void OphHasher::sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  sketch_with(shingles, out, Densify::Auto);
}

void oph_sketch_densified(const OphHasher& hasher, std::span<const ShingleHash> shingles, std::span<SigValue> out, Densify how) {
  hasher.sketch_with(shingles, out, how);
}

void OphHasher::sketch_with(std::span<const ShingleHash> shingles, std::span<SigValue> out, Densify how) const {
  NEARDUP_ASSERT(out.size() == kk_);
  bin(shingles, out);
  densify_with(out, how);
}

void OphHasher::densify(std::span<SigValue> bins) const {
  NEARDUP_ASSERT(bins.size() == kk_);
  densify_with(bins, Densify::Auto);
}

void OphHasher::densify_with(std::span<SigValue> out, Densify how) const {
  const uint32_t k = kk_;
  SigValue* o = out.data();
#if NEARDUP_X86_KERNELS
  // Up to 128 bins, the whole densification in one kernel (kernels/oph_kernels.h): a short
  // text leaves most bins empty (41 shingles in 128 bins: 93), and the scalar classification
  // of the bins below cost more than the vectorised pull itself.
  if (const auto densify = internal::kernels().oph_densify;
      how == Densify::Auto && !pre_cols_.empty() && densify != nullptr && densify(o, k, pre_cols_.data(), row_rounds_))
    return;
#endif
  uint32_t e = 0;
  for (uint32_t j = 0; j < k; ++j) e += o[j] == kEmptySigValue;
  if (e == 0 || e == k) return;  // dense already, or an empty document
  // Scratch per thread: the native and empty bins, and per bin whether it is native / decided.
  struct Scratch {
    std::vector<uint32_t> native, empty, from;
    std::vector<uint8_t> is_native, done;
  };
  thread_local Scratch sc;
  sc.native.resize(k);
  sc.empty.resize(k);
  sc.is_native.resize(k);
  uint32_t* nat = sc.native.data();
  uint32_t* emp = sc.empty.data();
  uint8_t* is_nat = sc.is_native.data();
  uint32_t m = 0, ne = 0;
  for (uint32_t j = 0; j < k; ++j) {
    const bool empty = o[j] == kEmptySigValue;
    nat[m] = j;
    emp[ne] = j;
    m += !empty;
    ne += empty;
    is_nat[j] = !empty;
  }
  if (m == 1) {  // every priority order ends at the one native bin
    std::fill(out.begin(), out.end(), o[nat[0]]);
    return;
  }
  const size_t rounds = a_.size();
  sc.done.assign(sc.is_native.begin(), sc.is_native.end());
  uint8_t* done = sc.done.data();
  size_t left = e;
  // The pull of bin j from round `first` on.
  const auto pull = [&](uint32_t j, size_t first) {
    for (size_t t = first; t < rounds; ++t)
      if (const uint32_t i = pre_image(j, t); is_nat[i]) {
        o[j] = o[i];
        done[j] = 1;
        --left;
        return;
      }
  };
#if NEARDUP_X86_KERNELS
  if (how == Densify::Auto && !pre_rows_.empty() && internal::kernels().oph_pull_vbmi) {
    // The pull, 64 rounds per step (kernels/oph_kernels.h); the rare bin without a native
    // pre-image in the first row_rounds_ rounds goes on from there.
    alignas(64) uint8_t native[128] = {};
    for (uint32_t j = 0; j < k; ++j) native[j] = is_nat[j] ? 0xFF : 0;
    sc.from.resize(e);
    internal::oph_pull_vbmi(pre_rows_.data(), row_rounds_, native, emp, e, sc.from.data());
    for (uint32_t x = 0; x < e; ++x) {
      const uint32_t j = emp[x], i = sc.from[x];
      if (i != 0xFFFFFFFFu) {
        o[j] = o[i];
        done[j] = 1;
        --left;
      } else {
        pull(j, row_rounds_);
      }
    }
  } else
#endif
  if (how != Densify::Push &&
             (how == Densify::Pull || static_cast<double>(e) / m <= std::log(static_cast<double>(e)) + 1.0)) {
    for (uint32_t x = 0; x < e; ++x) pull(emp[x], 0);
  } else {
    // Round by round, each native bin throws to its image; within a round the images are
    // distinct, so the first round that reaches an empty bin decides it, as in the pull.
    for (size_t t = 0; t < rounds && left > 0; ++t)
      for (uint32_t x = 0; x < m; ++x)
        if (const uint32_t i = nat[x], j = image(i, t); !done[j]) {
          o[j] = o[i];
          done[j] = 1;
          --left;
        }
  }
  if (left == 0) return;
  // Past the last round (probability below e^-32 per bin): the next native bin, cyclically. The
  // priority of bin j is still one fixed order (the rounds' pre-images, then the cyclic order),
  // the same in every document, so the assignment stays consistent.
  for (uint32_t x = 0; x < e; ++x) {
    const uint32_t j = emp[x];
    if (done[j]) continue;
    uint32_t i = (j + 1) % k;
    while (!is_nat[i]) i = (i + 1) % k;
    o[j] = o[i];
  }
}

std::vector<SigValue> OphHasher::sketch(std::span<const ShingleHash> shingles) const {
  std::vector<SigValue> out(kk_);
  sketch(shingles, out);
  return out;
}

}  // namespace neardup
