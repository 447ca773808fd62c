// SHA-1 (FIPS 180-4), only to reproduce datasketch's default hash function bit for bit: the
// first four bytes of the digest, little-endian. Not used for anything that needs security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include <immintrin.h>

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

// The same with the SHA extensions (Intel SHA-NI, on AMD since Zen), on N independent blocks
// at once: each sha1rnds4 does four rounds of one block, and its latency is hidden by the other
// blocks' (one block's 20 rnds4 form a dependent chain). sha1msg1 / sha1msg2 / sha1nexte extend
// the message schedule; group g holds words W[4g..4g+3] in msg[g % 4], the schedule running one
// to three groups ahead (what it computes past the last group is never used).
template <int N>
__attribute__((target("sha,ssse3,sse4.1"))) inline void sha1_blocks_ni(uint32_t* const* h, const unsigned char* const* p) noexcept {
  const __m128i mask = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
  __m128i abcd[N], save_abcd[N], save_e[N], e[N][2], msg[N][4];
  for (int l = 0; l < N; ++l) {
    abcd[l] = save_abcd[l] = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h[l])), 0x1B);
    e[l][0] = save_e[l] = _mm_set_epi32(static_cast<int>(h[l][4]), 0, 0, 0);
    for (int i = 0; i < 4; ++i) msg[l][i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p[l] + 16 * i)), mask);
    e[l][0] = _mm_add_epi32(e[l][0], msg[l][0]);  // rounds 0-3 take W[0..3] as they are
  }
  for (int g = 0; g < 20; ++g) {
    const int c = g % 4, cur = g % 2, next = 1 - cur;
    for (int l = 0; l < N; ++l) {
      if (g > 0) e[l][cur] = _mm_sha1nexte_epu32(e[l][cur], msg[l][c]);
      e[l][next] = abcd[l];
      if (g >= 3 && g < 19) msg[l][(c + 1) % 4] = _mm_sha1msg2_epu32(msg[l][(c + 1) % 4], msg[l][c]);
      switch (g / 5) {
        case 0: abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l][cur], 0); break;
        case 1: abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l][cur], 1); break;
        case 2: abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l][cur], 2); break;
        default: abcd[l] = _mm_sha1rnds4_epu32(abcd[l], e[l][cur], 3); break;
      }
      if (g >= 1 && g < 17) msg[l][(c + 3) % 4] = _mm_sha1msg1_epu32(msg[l][(c + 3) % 4], msg[l][c]);
      if (g >= 2 && g < 18) msg[l][(c + 2) % 4] = _mm_xor_si128(msg[l][(c + 2) % 4], msg[l][c]);
    }
  }
  for (int l = 0; l < N; ++l) {
    const __m128i e_final = _mm_sha1nexte_epu32(e[l][0], save_e[l]);  // group 19 left its E in e[.][0]
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h[l]), _mm_shuffle_epi32(_mm_add_epi32(abcd[l], save_abcd[l]), 0x1B));
    h[l][4] = static_cast<uint32_t>(_mm_extract_epi32(e_final, 3));
  }
}

inline void sha1_block_ni(uint32_t h[5], const unsigned char* p) noexcept {
  uint32_t* hs[1] = {h};
  const unsigned char* ps[1] = {p};
  sha1_blocks_ni<1>(hs, ps);
}

// Sixteen single-block messages at once in the lanes of AVX-512 registers (multi-buffer SHA-1):
// the scalar rounds, each lane a message, ternary logic for the round functions. Returns only
// the first word of each digest, which is all sha1_hash32 needs. `blocks` holds 16 padded blocks
// of 64 bytes, one after the other.
__attribute__((target("avx512f,avx512bw"))) inline void sha1_first_words_x16(const unsigned char* blocks, uint32_t* out) noexcept {
  const __m512i lane_offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                  _mm512_set1_epi32(64));
  const __m512i bswap = _mm512_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6,
                                        7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9,
                                        10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
  __m512i w[16];
  for (int t = 0; t < 16; ++t)
    w[t] = _mm512_shuffle_epi8(_mm512_i32gather_epi32(lane_offsets, blocks + 4 * t, 1), bswap);
  __m512i a = _mm512_set1_epi32(0x67452301), b = _mm512_set1_epi32(static_cast<int>(0xEFCDAB89u)),
          c = _mm512_set1_epi32(static_cast<int>(0x98BADCFEu)), d = _mm512_set1_epi32(0x10325476),
          e = _mm512_set1_epi32(static_cast<int>(0xC3D2E1F0u));
  for (int t = 0; t < 80; ++t) {
    if (t >= 16) {
      const __m512i x = _mm512_ternarylogic_epi32(w[(t - 3) & 15], w[(t - 8) & 15], w[(t - 14) & 15], 0x96);
      w[t & 15] = _mm512_rol_epi32(_mm512_xor_si512(x, w[t & 15]), 1);
    }
    __m512i f, k;
    if (t < 20) {
      f = _mm512_ternarylogic_epi32(b, c, d, 0xCA);  // choose
      k = _mm512_set1_epi32(0x5A827999);
    } else if (t < 40) {
      f = _mm512_ternarylogic_epi32(b, c, d, 0x96);  // parity
      k = _mm512_set1_epi32(0x6ED9EBA1);
    } else if (t < 60) {
      f = _mm512_ternarylogic_epi32(b, c, d, 0xE8);  // majority
      k = _mm512_set1_epi32(static_cast<int>(0x8F1BBCDCu));
    } else {
      f = _mm512_ternarylogic_epi32(b, c, d, 0x96);
      k = _mm512_set1_epi32(static_cast<int>(0xCA62C1D6u));
    }
    const __m512i temp = _mm512_add_epi32(_mm512_add_epi32(_mm512_rol_epi32(a, 5), f),
                                          _mm512_add_epi32(_mm512_add_epi32(e, k), w[t & 15]));
    e = d;
    d = c;
    c = _mm512_rol_epi32(b, 30);
    b = a;
    a = temp;
  }
  // h0 = 0x67452301 + a; its bytes reversed are the digest's first four bytes read little-endian.
  const __m512i h0 = _mm512_add_epi32(a, _mm512_set1_epi32(0x67452301));
  _mm512_storeu_si512(out, _mm512_shuffle_epi8(h0, bswap));
}

inline bool cpu_has_avx512bw() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }();
  return has;
}

inline bool cpu_has_sha() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sha") != 0;
  }();
  return has;
}

/// The first 32 bits of SHA-1(data), read little-endian: datasketch's sha1_hash32.
inline uint32_t sha1_hash32(const void* data, size_t n) noexcept {
  uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t left = n;
  void (*block)(uint32_t*, const unsigned char*) noexcept = cpu_has_sha() ? sha1_block_ni : sha1_block;
  for (; left >= 64; left -= 64, p += 64) block(h, p);
  // The padding: 0x80, zeros, then the length in bits, big-endian, in the last 8 bytes.
  unsigned char tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  const size_t blocks = left + 9 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) block(h, tail + 64 * b);
  // The digest is h[0] big-endian first; its first four bytes read little-endian are h[0]
  // with its bytes reversed.
  return __builtin_bswap32(h[0]);
}

}  // namespace neardup::python

namespace neardup::python {

// The values of one block (up to 55 bytes: word shingles) padded into blocks and hashed
// kLanes at a time by kernel(blocks, first_words); longer values one by one.
template <int kLanes, class View, class Kernel>
void sha1_hash32_batched(const View* values, size_t n, uint32_t* out, Kernel&& kernel) noexcept {
  alignas(64) unsigned char blocks[kLanes * 64];
  alignas(64) uint32_t first[kLanes];
  size_t idx[kLanes];
  int filled = 0;
  auto flush = [&] {
    std::memset(blocks + 64 * filled, 0, 64 * static_cast<size_t>(kLanes - filled));  // unused lanes: any block
    kernel(blocks, first);
    for (int l = 0; l < filled; ++l) out[idx[l]] = first[l];
    filled = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    const size_t len = values[i].size();
    if (len > 55) {
      out[i] = sha1_hash32(values[i].data(), len);
      continue;
    }
    // The padding of a one-block message: 0x80, zeros, the length in bits, big-endian.
    unsigned char* b = blocks + 64 * filled;
    std::memcpy(b, values[i].data(), len);
    b[len] = 0x80;
    std::memset(b + len + 1, 0, 55 - len);
    const uint64_t bits = __builtin_bswap64(static_cast<uint64_t>(len) * 8);
    std::memcpy(b + 56, &bits, 8);
    idx[filled++] = i;
    if (filled == kLanes) flush();
  }
  if (filled) flush();
}

/// sha1_hash32 of every value: sixteen at a time in AVX-512 lanes, or eight interleaved with the
/// SHA extensions, or one by one.
template <class View>
void sha1_hash32_many(const View* values, size_t n, uint32_t* out) noexcept {
  if (cpu_has_avx512bw()) return sha1_hash32_batched<16>(values, n, out, sha1_first_words_x16);
  if (cpu_has_sha()) {
    return sha1_hash32_batched<8>(values, n, out, [](const unsigned char* blocks, uint32_t* first) {
      static constexpr uint32_t kInit[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
      uint32_t state[8][5];
      uint32_t* hs[8];
      const unsigned char* ps[8];
      for (int l = 0; l < 8; ++l) {
        std::memcpy(state[l], kInit, sizeof kInit);
        hs[l] = state[l];
        ps[l] = blocks + 64 * l;
      }
      sha1_blocks_ni<8>(hs, ps);
      for (int l = 0; l < 8; ++l) first[l] = __builtin_bswap32(state[l][0]);
    });
  }
  for (size_t i = 0; i < n; ++i) out[i] = sha1_hash32(values[i].data(), values[i].size());
}

}  // namespace neardup::python
