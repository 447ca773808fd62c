// SHA-1 (FIPS 180-4), only to reproduce datasketch's default hash function bit for bit: the
// first four bytes of the digest, little-endian. Not used for anything that needs security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "neardup/cpu.h"

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

#if defined(__x86_64__)
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

// Sixteen messages at once in the lanes of AVX-512 registers (multi-buffer SHA-1): the scalar
// rounds, each lane a message, ternary logic for the round functions. w[t] holds word t of the
// current block of each lane, already big-endian.
__attribute__((target("avx512f"), always_inline)) inline void sha1_compress_x16(__m512i state[5], __m512i w[16]) noexcept {
  __m512i a = state[0], b = state[1], c = state[2], d = state[3], e = state[4];
#pragma GCC unroll 80
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
    // f depends on the previous round's a (now b): adding it last but one keeps the dependent
    // chain from round to round at three instructions, half the time of the naive order here.
    const __m512i temp = _mm512_add_epi32(_mm512_rol_epi32(a, 5), _mm512_add_epi32(f, _mm512_add_epi32(_mm512_add_epi32(e, k), w[t & 15])));
    e = d;
    d = c;
    c = _mm512_rol_epi32(b, 30);
    b = a;
    a = temp;
  }
  state[0] = _mm512_add_epi32(state[0], a);
  state[1] = _mm512_add_epi32(state[1], b);
  state[2] = _mm512_add_epi32(state[2], c);
  state[3] = _mm512_add_epi32(state[3], d);
  state[4] = _mm512_add_epi32(state[4], e);
}

// r[l] holds the 16 words of lane l's block; afterwards r[t] holds word t of every lane, each
// made big-endian. Unpacks of 32- then 64-bit words transpose the 4 x 4 tiles inside each
// 128-bit quarter, and two rounds of quarter shuffles transpose the tiles: 80 shuffles against
// 16 gathers from a buffer just stored, which wait for the stores.
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void sha1_transpose_x16(__m512i r[16]) noexcept {
  const __m512i bswap = _mm512_set4_epi32(0x0C0D0E0F, 0x08090A0B, 0x04050607, 0x00010203);
  __m512i u[16], v[16];
  for (int i = 0; i < 16; i += 2) {
    u[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    u[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // v[4g + o]: word 4q + o of lanes 4g..4g+3 in quarter q.
  for (int g = 0; g < 4; ++g) {
    v[4 * g + 0] = _mm512_unpacklo_epi64(u[4 * g], u[4 * g + 2]);
    v[4 * g + 1] = _mm512_unpackhi_epi64(u[4 * g], u[4 * g + 2]);
    v[4 * g + 2] = _mm512_unpacklo_epi64(u[4 * g + 1], u[4 * g + 3]);
    v[4 * g + 3] = _mm512_unpackhi_epi64(u[4 * g + 1], u[4 * g + 3]);
  }
  for (int o = 0; o < 4; ++o) {
    const __m512i e0 = _mm512_shuffle_i32x4(v[o], v[4 + o], 0x44), e1 = _mm512_shuffle_i32x4(v[o], v[4 + o], 0xEE);
    const __m512i e2 = _mm512_shuffle_i32x4(v[8 + o], v[12 + o], 0x44), e3 = _mm512_shuffle_i32x4(v[8 + o], v[12 + o], 0xEE);
    r[o] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(e0, e2, 0x88), bswap);
    r[4 + o] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(e0, e2, 0xDD), bswap);
    r[8 + o] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(e1, e3, 0x88), bswap);
    r[12 + o] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(e1, e3, 0xDD), bswap);
  }
}

__attribute__((target("avx512f"))) inline void sha1_init_x16(__m512i state[5]) noexcept {
  state[0] = _mm512_set1_epi32(0x67452301);
  state[1] = _mm512_set1_epi32(static_cast<int>(0xEFCDAB89u));
  state[2] = _mm512_set1_epi32(static_cast<int>(0x98BADCFEu));
  state[3] = _mm512_set1_epi32(0x10325476);
  state[4] = _mm512_set1_epi32(static_cast<int>(0xC3D2E1F0u));
}

// The digest's first four bytes read little-endian: the first state word, bytes reversed.
__attribute__((target("avx512f"))) inline void sha1_store_hash32_x16(const __m512i state[5], const size_t* idx, int count,
                                                                      uint32_t* out) noexcept {
  alignas(64) uint32_t first[16];
  _mm512_store_si512(first, state[0]);
  for (int l = 0; l < count; ++l) out[idx[l]] = __builtin_bswap32(first[l]);
}

#endif  // __x86_64__

inline bool cpu_has_sha() noexcept {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sha") != 0;
  }();
  return has;
#else
  return false;  // the SHA extensions used here are x86's
#endif
}

/// The SHA-1 state after all of data: h[0] holds the digest's first four bytes, big-endian.
inline void sha1_state(const void* data, size_t n, uint32_t h[5], bool sha_extensions = cpu_has_sha()) noexcept {
  const uint32_t init[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::memcpy(h, init, sizeof init);
  const auto* p = static_cast<const unsigned char*>(data);
  size_t left = n;
#if defined(__x86_64__)
  void (*block)(uint32_t*, const unsigned char*) noexcept = sha_extensions ? sha1_block_ni : sha1_block;
#else
  (void)sha_extensions;
  void (*block)(uint32_t*, const unsigned char*) noexcept = sha1_block;
#endif
  for (; left >= 64; left -= 64, p += 64) block(h, p);
  // The padding: 0x80, zeros, then the length in bits, big-endian, in the last 8 bytes.
  unsigned char tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  const size_t blocks = left + 9 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t b = 0; b < blocks; ++b) block(h, tail + 64 * b);
}

/// The first 32 bits of SHA-1(data), read little-endian: datasketch's sha1_hash32. The digest is
/// h[0] big-endian first, so its first four bytes read little-endian are h[0] byte-reversed.
inline uint32_t sha1_hash32(const void* data, size_t n, bool sha_extensions = cpu_has_sha()) noexcept {
  uint32_t h[5];
  sha1_state(data, n, h, sha_extensions);
  return __builtin_bswap32(h[0]);
}

/// The first 64 bits of SHA-1(data), read little-endian: datasketch's sha1_hash64.
inline uint64_t sha1_hash64(const void* data, size_t n, bool sha_extensions = cpu_has_sha()) noexcept {
  uint32_t h[5];
  sha1_state(data, n, h, sha_extensions);
  return uint64_t{__builtin_bswap32(h[0])} | uint64_t{__builtin_bswap32(h[1])} << 32;
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

#if defined(__x86_64__)
// Up to 16 values of at most 55 bytes (one block each), padded in registers: a masked load reads
// exactly the value's bytes (nothing past them, so never past the end of a page), then the 0x80
// and the length in bits (below 448: the last two bytes) are merged under byte masks.
template <class View>
__attribute__((target("avx512f,avx512bw"))) void sha1_hash32_short_x16(const View* values, const size_t* idx, int count,
                                                                      uint32_t* out) noexcept {
  __m512i r[16];
#pragma GCC unroll 16
  for (int l = 0; l < 16; ++l) {
    if (l >= count) {
      r[l] = _mm512_setzero_si512();
      continue;
    }
    const View& v = values[idx[l]];
    const size_t len = v.size();
    const uint64_t bits = static_cast<uint64_t>(len) * 8;
    __m512i block = _mm512_maskz_loadu_epi8((uint64_t{1} << len) - 1, v.data());
    block = _mm512_mask_set1_epi8(block, uint64_t{1} << len, static_cast<char>(0x80));
    block = _mm512_mask_set1_epi8(block, uint64_t{1} << 62, static_cast<char>(bits >> 8));
    r[l] = _mm512_mask_set1_epi8(block, uint64_t{1} << 63, static_cast<char>(bits & 0xFF));
  }
  sha1_transpose_x16(r);
  __m512i state[5];
  sha1_init_x16(state);
  sha1_compress_x16(state, r);
  sha1_store_hash32_x16(state, idx, count, out);
}

// Up to 16 values of 56 to kLongMax bytes (two to four blocks), padded in a buffer; lane l takes
// part in block j only while j is below its block count (the other lanes keep their state).
constexpr size_t kSha1LongMax = 4 * 64 - 9;

template <class View>
__attribute__((target("avx512f,avx512bw"))) void sha1_hash32_long_x16(const View* values, const size_t* idx, int count,
                                                                     uint32_t* out) noexcept {
  alignas(64) unsigned char buf[16][256];
  int blocks[16] = {};
  int most = 0;
  for (int l = 0; l < count; ++l) {
    const View& v = values[idx[l]];
    const size_t len = v.size();
    blocks[l] = static_cast<int>((len + 9 + 63) / 64);
    most = blocks[l] > most ? blocks[l] : most;
    unsigned char* b = buf[l];
    std::memcpy(b, v.data(), len);
    b[len] = 0x80;
    std::memset(b + len + 1, 0, static_cast<size_t>(blocks[l]) * 64 - len - 9);
    const uint64_t bits = __builtin_bswap64(static_cast<uint64_t>(len) * 8);
    std::memcpy(b + blocks[l] * 64 - 8, &bits, 8);
  }
  __m512i state[5];
  sha1_init_x16(state);
  for (int j = 0; j < most; ++j) {
    __m512i r[16];
    __mmask16 live = 0;
    for (int l = 0; l < 16; ++l) {
      const bool in = l < count && j < blocks[l];
      r[l] = in ? _mm512_load_si512(buf[l] + 64 * j) : _mm512_setzero_si512();
      live = static_cast<__mmask16>(live | (in ? 1u << l : 0u));
    }
    sha1_transpose_x16(r);
    __m512i next[5] = {state[0], state[1], state[2], state[3], state[4]};
    sha1_compress_x16(next, r);
    for (int i = 0; i < 5; ++i) state[i] = _mm512_mask_mov_epi32(state[i], live, next[i]);
  }
  sha1_store_hash32_x16(state, idx, count, out);
}

// All values, the short ones and the long ones each gathered sixteen at a time; values longer
// than four blocks (rare among shingles) one by one.
template <class View>
__attribute__((target("avx512f,avx512bw"))) void sha1_hash32_many_avx512(const View* values, size_t n, uint32_t* out) noexcept {
  size_t shorts[16], longs[16];
  int ns = 0, nl = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = values[i].size();
    if (len <= 55) {
      shorts[ns++] = i;
      if (ns == 16) {
        sha1_hash32_short_x16(values, shorts, ns, out);
        ns = 0;
      }
    } else if (len <= kSha1LongMax) {
      longs[nl++] = i;
      if (nl == 16) {
        sha1_hash32_long_x16(values, longs, nl, out);
        nl = 0;
      }
    } else {
      out[i] = sha1_hash32(values[i].data(), len);
    }
  }
  if (ns) sha1_hash32_short_x16(values, shorts, ns, out);
  if (nl) sha1_hash32_long_x16(values, longs, nl, out);
}

#endif  // __x86_64__

/// sha1_hash32 of every value: sixteen at a time in AVX-512 lanes, or eight interleaved with the
/// SHA extensions (below the AVX-512 level, when the CPU has them), or one by one (at the scalar
/// level). The level is neardup's (NEARDUP_FORCE_ISA can lower it), so that tests cover each path.
template <class View>
void sha1_hash32_many(const View* values, size_t n, uint32_t* out, Isa level) noexcept {
#if defined(__x86_64__)
  if (level >= Isa::Avx512) return sha1_hash32_many_avx512(values, n, out);
  if (level > Isa::Scalar && cpu_has_sha()) {
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
#endif
  for (size_t i = 0; i < n; ++i) out[i] = sha1_hash32(values[i].data(), values[i].size(), level > Isa::Scalar && cpu_has_sha());
}

}  // namespace neardup::python
