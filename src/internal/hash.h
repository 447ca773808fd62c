// The hash functions of neardup, specified and seeded (docs/architecture.md, "Habits": hashes
// specified). Their values are part of the file formats and are pinned by known-answer tests
// (tests/unit/shingle_test.cpp, minhash_test.cpp, checked again from their written definitions
// by tools/known_answers); changing any of them is a format change. Never std::hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

// Inlined (xxhash.h from Debian's libxxhash-dev is also a header-only library): a word hash is
// a few nanoseconds, and a call into the shared library would cost as much again.
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace neardup::internal {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// MurmurHash3's 64-bit finaliser: a bijection with full avalanche. Its two multipliers are
/// named for the vector kernels that compute it lane by lane.
inline constexpr uint64_t kFmixMul1 = 0xFF51AFD7ED558CCDULL;
inline constexpr uint64_t kFmixMul2 = 0xC4CEB9FE1A85EC53ULL;
constexpr uint64_t fmix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= kFmixMul1;
  x ^= x >> 33;
  x *= kFmixMul2;
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

/// Hash of a byte string in 128 bits: XXH3-128 with a seed, for telling whole texts apart where
/// equal hashes are taken for equal bytes (verification's copies). Kept in no file: not a format.
inline XXH128_hash_t hash_bytes128(const void* data, size_t len, uint64_t seed) noexcept {
  return XXH3_128bits_withSeed(data, len, seed);
}

/// The 128-bit product of a and b, folded: low half XOR high half.
inline uint64_t mum(uint64_t a, uint64_t b) noexcept {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// Constants of the word hash: the first 256 bits of the fraction of pi.
inline constexpr uint64_t kWordK0 = 0x243F6A8885A308D3ULL, kWordK1 = 0x13198A2E03707344ULL;
inline constexpr uint64_t kWordK2 = 0xA4093822299F31D0ULL, kWordK3 = 0x082EFA98EC4E6C89ULL;

inline uint64_t load_le64(const unsigned char* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // x86-64 is little-endian
}

/// The word hash (docs/format.md): the bytes in 16-byte chunks, the last zero-padded, each chunk
/// (a, b) as two little-endian 64-bit words: acc = seed, acc = mum(a ^ K0 ^ acc, b ^ K1) per
/// chunk, and the hash is mum(acc ^ K2, len ^ K3). Two multiplies for a word of up to 16 bytes.
/// The last chunk is read without a copy and without reading outside the word: from the word's
/// last 16 bytes when it has 16 or more, otherwise with loads that overlap (ORing equal bytes).
inline uint64_t word_hash(const void* data, size_t len, uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t acc = seed;
  size_t i = 0;
  for (; i + 16 <= len; i += 16) acc = mum(load_le64(p + i) ^ kWordK0 ^ acc, load_le64(p + i + 8) ^ kWordK1);
  if (const size_t r = len - i; r != 0) {  // the tail: 1 to 15 bytes, zero-padded to a chunk
    uint64_t a, b;
    if (len >= 16) {
      const unsigned __int128 last = load_le64(p + len - 16) | static_cast<unsigned __int128>(load_le64(p + len - 8)) << 64;
      const unsigned __int128 tail = last >> (8 * (16 - r));
      a = static_cast<uint64_t>(tail);
      b = static_cast<uint64_t>(tail >> 64);
    } else if (r > 8) {
      a = load_le64(p);
      b = load_le64(p + r - 8) >> (8 * (16 - r));
    } else if (r >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + r - 4, 4);
      a = lo | static_cast<uint64_t>(hi) << (8 * (r - 4));
      b = 0;
    } else {
      a = p[0] | static_cast<uint64_t>(p[r / 2]) << (8 * (r / 2)) | static_cast<uint64_t>(p[r - 1]) << (8 * (r - 1));
      b = 0;
    }
    acc = mum(a ^ kWordK0 ^ acc, b ^ kWordK1);
  }
  return mum(acc ^ kWordK2, static_cast<uint64_t>(len) ^ kWordK3);
}

/// word_hash for 1 <= len <= 16 without a branch or a copy: reads p[0, 16), so the caller pads.
inline uint64_t word_hash_padded16(const unsigned char* p, size_t len, uint64_t seed) noexcept {
  // Keep-masks for the two 8-byte halves, by length: shifts by 64 are avoided with a table.
  static constexpr uint64_t kLo[17] = {0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL,
                                       0xFFFFFFFFFFFFFFULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
  static constexpr uint64_t kHi[17] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFULL,
                                       0xFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFULL, ~0ULL};
  const uint64_t a = load_le64(p) & kLo[len], b = load_le64(p + 8) & kHi[len];
  return mum(mum(a ^ kWordK0 ^ seed, b ^ kWordK1) ^ kWordK2, static_cast<uint64_t>(len) ^ kWordK3);
}

}  // namespace neardup::internal
