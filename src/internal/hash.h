// The hash functions of neardup, specified and seeded (DESIGN.md, habit 4). Their values are part
// of the file formats and are pinned by known-answer tests (tests/unit/hash_test.cpp); changing
// any of them is a format change. Never std::hash.
#pragma once

#include <cstddef>
#include <cstdint>

// Inlined (xxhash.h from Debian's libxxhash-dev is also a header-only library): a word hash is
// a few nanoseconds, and a call into the shared library would cost as much again.
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace neardup::internal {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// MurmurHash3's 64-bit finaliser: a bijection with full avalanche.
constexpr uint64_t fmix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

constexpr uint64_t rotl64(uint64_t x, int r) noexcept { return (x << r) | (x >> (64 - r)); }

/// SplitMix64 step: the generator for every derived parameter (MinHash coefficients, ...).
constexpr uint64_t splitmix64(uint64_t& state) noexcept {
  state += kGolden;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Hash of a byte string: XXH3-64 with a seed (xxHash 0.8, a published, stable algorithm).
inline uint64_t hash_bytes(const void* data, size_t len, uint64_t seed) noexcept {
  return XXH3_64bits_withSeed(data, len, seed);
}

}  // namespace neardup::internal
