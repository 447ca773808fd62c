// SHA-1 (FIPS 180-4), only to reproduce datasketch's default hash function bit for bit: the
// first four bytes of the digest, little-endian. Not used for anything that needs security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace neardup::python {

inline uint32_t rotl32(uint32_t x, int r) noexcept { return (x << r) | (x >> (32 - r)); }

// One 64-byte block into the state.
inline void sha1_block(uint32_t h[5], const unsigned char* p) noexcept {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) | (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
  for (int i = 16; i < 80; ++i) w[i] = rotl32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999u;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1u;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6u;
    }
    const uint32_t t = rotl32(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl32(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

/// The first 32 bits of SHA-1(data), read little-endian: datasketch's sha1_hash32.
inline uint32_t sha1_hash32(const void* data, size_t n) noexcept {
  uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t left = n;
  for (; left >= 64; left -= 64, p += 64) sha1_block(h, p);
  // The padding: 0x80, zeros, then the length in bits, big-endian, in the last 8 bytes.
  unsigned char tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  const size_t blocks = left + 9 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) sha1_block(h, tail + 64 * b);
  // The digest is h[0] big-endian first; its first four bytes read little-endian are h[0]
  // with its bytes reversed.
  return __builtin_bswap32(h[0]);
}

}  // namespace neardup::python
