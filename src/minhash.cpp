#include "neardup/minhash.h"

#include <string>

#include "internal/scratch.h"
#include "internal/hash.h"
#include "kernels/dispatch.h"
#include "kernels/minhash_kernels.h"
#include "neardup/error.h"

namespace neardup {

MinHasher::MinHasher(int num_perm, uint64_t seed) {
  if (num_perm < 1 || num_perm > 4096)
    throw UsageError("number of permutations must be between 1 and 4096, got " + std::to_string(num_perm));
  a_.resize(num_perm);
  a_hi_.resize(num_perm);
  uint64_t state = seed;
  for (int i = 0; i < num_perm; ++i) {
    a_[i] = internal::splitmix64(state) | 1;
    a_hi_[i] = a_[i] >> 32;
  }
}

void MinHasher::sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  sketch(shingles, out, active_isa());
}

void MinHasher::sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out, Isa isa) const {
  NEARDUP_ASSERT(out.size() == a_.size());
  thread_local std::vector<uint32_t> keys;
  keys.resize(shingles.size());
  for (size_t j = 0; j < shingles.size(); ++j)
    keys[j] = static_cast<uint32_t>(shingles[j] ^ (shingles[j] >> 32));
  const size_t p = a_.size();
  internal::kernels(isa).minhash(a_.data(), a_hi_.data(), p, keys.data(), keys.size(), out.data());
  internal::trim_scratch(keys);
}

std::vector<SigValue> MinHasher::sketch(std::span<const ShingleHash> shingles) const {
  std::vector<SigValue> out(a_.size());
  sketch(shingles, out);
  return out;
}

double estimate_jaccard(std::span<const SigValue> a, std::span<const SigValue> b) noexcept {
  const size_t k = a.size() < b.size() ? a.size() : b.size();
  if (k == 0) return 0.0;
  size_t eq = 0;
  for (size_t i = 0; i < k; ++i) eq += a[i] == b[i];
  return static_cast<double>(eq) / static_cast<double>(k);
}

}  // namespace neardup
