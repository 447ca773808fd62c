#include "neardup/text.h"
#include "internal/testing.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "internal/scratch.h"
#include "internal/hash.h"
#include "internal/utf8.h"
#include "kernels/dispatch.h"
#include "kernels/text_kernels.h"
#include "neardup/cpu.h"

namespace neardup {
namespace {

// Code points below 0x10000 are classified through tables built from ICU on first use: two
// bitmaps of 8 KiB each (word character; simple lowercase differs from the code point), which
// stay in the L1 cache, and the lowercase of every code point, looked up only where it differs
// (capitals: a flat table of 256 KiB missed the cache on CJK and other wide scripts). Above
// 0x10000, ICU is asked directly. classify gives bit 31 = word character, low 21 bits = simple
// lowercase.
constexpr uint32_t kWordBit = 1u << 31;

struct BmpTables {  // 272 KiB, on the heap
  uint64_t word[1024] = {};
  uint64_t changes[1024] = {};
  uint32_t lower[0x10000] = {};
};

const BmpTables& bmp_tables() {
  static const std::unique_ptr<BmpTables> tables = [] {
    auto t = std::make_unique<BmpTables>();
    for (uint32_t cp = 0; cp < 0x10000; ++cp) {
      const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(cp)));
      const auto lower = static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp)));
      const uint64_t bit = uint64_t{1} << (cp & 63);
      if (mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) t->word[cp >> 6] |= bit;
      if (lower != cp) t->changes[cp >> 6] |= bit;
      t->lower[cp] = lower;
    }
    return t;
  }();
  return *tables;
}

inline uint32_t classify(const BmpTables& t, uint32_t cp) noexcept {
  if (cp < 0x10000) {
    const uint64_t bit = uint64_t{1} << (cp & 63);
    const uint32_t lower = (t.changes[cp >> 6] & bit) ? t.lower[cp] : cp;
    return lower | ((t.word[cp >> 6] & bit) ? kWordBit : 0);
  }
  const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(cp)));
  const bool word = (mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK)) != 0;
  return static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp))) | (word ? kWordBit : 0);
}

inline uint32_t classify(uint32_t cp) noexcept { return classify(bmp_tables(), cp); }

// ASCII: 1 = word byte; lowercase mapping.
struct AsciiTables {
  std::array<uint8_t, 128> word{};
  std::array<char, 128> lower{};
  constexpr AsciiTables() {
    for (int c = 0; c < 128; ++c) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      word[c] = alpha || (c >= '0' && c <= '9');
      lower[c] = static_cast<char>((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
  }
};
constexpr AsciiTables kAscii;

// The exact word scanner, byte at a time: calls on_word(std::string_view lowercased_utf8) for
// every word. It is the reference of the fast path (hash_words) and handles its non-ASCII runs.
// The word is built in `buf` through a local pointer, grown when fewer than 4 bytes are left (a
// std::string's push_back would reload its size and capacity from memory every byte).
template <class OnWord>
void scan_words(std::string_view text, std::string& buf, OnWord&& on_word) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  const BmpTables& tables = bmp_tables();
  if (buf.size() < 64) buf.resize(64);
  char* w0 = buf.data();
  char* w = w0;
  char* wend = w0 + buf.size();
  const auto flush = [&] {
    if (w != w0) {
      on_word(std::string_view(w0, static_cast<size_t>(w - w0)));
      w = w0;
    }
  };
  while (p < end) {
    if (wend - w < 4) [[unlikely]] {  // room for one more code point
      const auto used = static_cast<size_t>(w - w0);
      buf.resize(2 * buf.size());
      w0 = buf.data();
      w = w0 + used;
      wend = w0 + buf.size();
    }
    const unsigned c = *p;
    if (c < 0x80) {
      if (kAscii.word[c])
        *w++ = kAscii.lower[c];
      else
        flush();
      ++p;
      continue;
    }
    uint32_t cp = 0;
    const int len = internal::decode_utf8(p, end, cp);
    if (len == 0) {  // invalid byte: a separator
      flush();
      ++p;
      continue;
    }
    p += len;
    const uint32_t info = classify(tables, cp);
    if (info & kWordBit)
      w = internal::put_utf8(w, info & 0x1FFFFF);
    else
      flush();
  }
  flush();
}

}  // namespace

bool is_word_codepoint(uint32_t cp) noexcept { return cp <= 0x10FFFF && (classify(cp) & kWordBit); }
uint32_t simple_lower(uint32_t cp) noexcept { return cp <= 0x10FFFF ? (classify(cp) & 0x1FFFFF) : cp; }

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::string scratch;
  scan_words(text, scratch, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

namespace {

// The fast word path. A SIMD pass classifies every byte and writes a lowercased copy; words are
// then found from bitmasks, one iteration per word, with no branch per byte. A maximal run of
// word-or-high bytes (text_kernels.h) without a high byte is an ASCII word, hashed from the copy;
// one with a high byte is bordered by ASCII separators, which end any word under the exact rules,
// so the exact scanner given just that run finds exactly the words it would find in place.
struct WordScratch {
  // kPad bytes, the blocks, kPad bytes: short hashes read around a word. Grown without zeroing:
  // the scan writes every block, and the pads are cleared for each text.
  std::vector<uint8_t, DefaultInitAllocator<uint8_t>> lower;
  std::vector<uint64_t, DefaultInitAllocator<uint64_t>> high;
  std::vector<uint32_t> starts, ends;  // run boundaries of one window
};

// The exact scanner's word buffer, one per thread for every caller (none of them nests).
std::string& word_buffer() {
  thread_local std::string buf;
  return buf;
}
constexpr size_t kPad = 16;

constexpr size_t kWindowBlocks = 1024;  // runs are found a window (64 KiB of text) at a time

// The first position in [from, 64 * end_block) whose bit is set in `bits`, or SIZE_MAX.
inline size_t next_set(const uint64_t* bits, size_t from, size_t end_block) noexcept {
  size_t b = from >> 6;
  if (b >= end_block) return SIZE_MAX;
  uint64_t x = bits[b] & (~0ULL << (from & 63));
  while (x == 0) {
    if (++b >= end_block) return SIZE_MAX;
    x = bits[b];
  }
  return 64 * b + static_cast<size_t>(__builtin_ctzll(x));
}

// The last i in [from, to) with a[i] <= p, given a sorted and a[from] <= p: galloping from
// `from`, since the next run with a high byte is usually a few runs on (a binary search over the
// whole window mispredicts a branch per step).
inline size_t last_at_or_before(const uint32_t* a, size_t from, size_t to, size_t p) noexcept {
  size_t lo = from, step = 1;  // a[lo] <= p
  while (lo + step < to && a[lo + step] <= p) {
    lo += step;
    step *= 2;
  }
  const size_t hi = std::min(to, lo + step);  // a[hi] > p, or hi == to
  return static_cast<size_t>(std::upper_bound(a + lo, a + hi, p) - a) - 1;
}

// Finds the maximal runs of word-or-high bytes of `text` (text_kernels.h) with the SIMD scan, a
// window at a time, and hands them over in order: ascii(lower, starts, ends, count) for a stretch
// of runs that are all ASCII words (lower: the lowercased copy), high(s, e) for a run [s, e) that
// holds a byte >= 0x80 (the exact scanner decides its words). The runs holding high bytes are
// found from the high bits, so a window with a few of them still hands over its ASCII words in
// long stretches. Texts of 4 GiB or more are not handled (positions are 32-bit): callers use the
// exact scanner.
template <class Ascii, class High>
void scan_runs(std::string_view text, Ascii&& ascii, High&& high) {
  thread_local WordScratch sc;
  const size_t n = text.size();
  if (n == 0) return;
  const size_t full = n / 64, nblocks = (n + 63) / 64;
  if (sc.lower.size() < nblocks * 64 + 2 * kPad) sc.lower.resize(nblocks * 64 + 2 * kPad);
  std::memset(sc.lower.data(), 0, kPad);
  std::memset(sc.lower.data() + kPad + nblocks * 64, 0, kPad);
  if (sc.high.size() < nblocks) sc.high.resize(nblocks);
  const size_t slots = kWindowBlocks * 32 + 64;
  if (sc.starts.size() < slots) {
    sc.starts.resize(slots);
    sc.ends.resize(slots);
  }
  const auto scan = internal::kernels().scan_text;
  const auto* in = reinterpret_cast<const uint8_t*>(text.data());
  internal::TextScan ts;
  ts.lower = sc.lower.data() + kPad;
  ts.high = sc.high.data();
  ts.starts = sc.starts.data();
  ts.ends = sc.ends.data();
  const uint8_t* const lower = ts.lower;
  for (size_t w0 = 0; w0 < nblocks; w0 += kWindowBlocks) {
    const size_t w1 = std::min(nblocks, w0 + kWindowBlocks);
    // A run still open from the last window keeps its start in front.
    const bool open = ts.ns > ts.ne;
    if (open) ts.starts[0] = ts.starts[ts.ne];
    ts.ns = open ? 1 : 0;
    ts.ne = 0;
    ts.any_high = open ? 1 : 0;  // the open run may hold high bytes of the last window: check it
    const size_t wfull = std::min(w1, full);
    if (wfull > w0) scan(in + 64 * w0, w0, wfull - w0, ts);
    if (wfull < w1) {  // the last, partial block: zero bytes after the text are separators
      alignas(64) uint8_t tail[64] = {};
      std::memcpy(tail, in + 64 * full, n - 64 * full);
      scan(tail, full, 1, ts);
    }
    if (w1 == nblocks && ts.carry) ts.ends[ts.ne++] = static_cast<uint32_t>(n);  // a run to the end
    const uint32_t* const starts = ts.starts;
    const uint32_t* const ends = ts.ends;
    const size_t count = ts.ne;
    if (count == 0) continue;
    size_t done = 0;  // runs handed over
    if (ts.any_high) {
      // Every high byte is a word byte, so it lies in a run: in one of the `count` complete runs,
      // or past the last of them in the run left open, which the next window hands over.
      for (size_t p = next_set(ts.high, starts[0], w1); p < ends[count - 1]; p = next_set(ts.high, p, w1)) {
        const size_t r = last_at_or_before(starts, done, count, p);
        if (r > done) ascii(lower, starts + done, ends + done, r - done);
        high(static_cast<size_t>(starts[r]), static_cast<size_t>(ends[r]));
        done = r + 1;
        p = ends[r];  // the next high byte is past this run
      }
    }
    if (done < count) ascii(lower, starts + done, ends + done, count - done);
  }
  internal::trim_scratch(sc.lower);
  internal::trim_scratch(sc.high);
}

inline uint64_t char_hash(uint32_t cp, uint64_t seed) noexcept { return internal::fmix64(seed ^ (cp * internal::kGolden)); }

// Writes at `o` the hashes of one word's code points (well-formed UTF-8 that we encoded
// ourselves), after a space's unless it is the first word. A text of n bytes has at most n
// (each code point takes a byte or more, and a separator a byte between words).
void put_word_chars(std::string_view w, uint64_t seed, bool& first, uint64_t*& o) {
  if (!first) *o++ = char_hash(' ', seed);
  first = false;
  const auto* p = reinterpret_cast<const unsigned char*>(w.data());
  const auto* end = p + w.size();
  while (p < end) {
    uint32_t cp = *p;
    int len = 1;
    if (cp >= 0x80) len = internal::decode_utf8(p, end, cp);
    *o++ = char_hash(cp, seed);
    p += len;
  }
}

template <class Out>
void words_exact_to(std::string_view text, uint64_t seed, Out& out) {
  scan_words(text, word_buffer(), [&](std::string_view w) {
    out.push_back(internal::word_hash(w.data(), w.size(), seed));
  });
  internal::trim_scratch(word_buffer());
}

// hash_words into either vector type (the public std::vector, or the shingling path's HashVector).
template <class Out>
void words_to(std::string_view text, uint64_t seed, Out& out) {
  if (text.size() > UINT32_MAX - 128) return words_exact_to(text, seed, out);  // positions are 32-bit
  const auto hash_ascii = internal::kernels().hash_ascii_words;
  std::string& buf = word_buffer();
  out.reserve(out.size() + text.size() / 8);
  scan_runs(
      text,
      [&](const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count) {
        // Written through a pointer by the kernel (push_back would store and reload the
        // vector's end every word, a chain through memory that costs more than the hash).
        const size_t base = out.size();
        out.resize(base + count);
        hash_ascii(lower, starts, ends, count, seed, out.data() + base);
      },
      [&](size_t s, size_t e) {
        scan_words(text.substr(s, e - s), buf,
                   [&](std::string_view wd) { out.push_back(internal::word_hash(wd.data(), wd.size(), seed)); });
      });
  internal::trim_scratch(buf);
}

template <class Out>
void chars_exact_to(std::string_view text, uint64_t seed, Out& out) {
  bool first = true;
  const size_t base = out.size();
  out.resize(base + text.size());
  uint64_t* o = out.data() + base;
  scan_words(text, word_buffer(), [&](std::string_view w) { put_word_chars(w, seed, first, o); });
  out.resize(static_cast<size_t>(o - out.data()));
  internal::trim_scratch(word_buffer());
}

template <class Out>
void chars_to(std::string_view text, uint64_t seed, Out& out) {
  if (text.size() > UINT32_MAX - 128) return chars_exact_to(text, seed, out);  // positions are 32-bit
  std::string& buf = word_buffer();
  // The hashes of the ASCII code points, looked up (made again when the seed changes).
  thread_local uint64_t table[128];
  thread_local uint64_t table_seed = 0;
  thread_local bool table_made = false;
  if (!table_made || table_seed != seed) {
    for (uint32_t c = 0; c < 128; ++c) table[c] = char_hash(c, seed);
    table_seed = seed;
    table_made = true;
  }
  bool first = true;
  const size_t base = out.size();
  out.resize(base + text.size());  // at most one hash per byte (put_word_chars)
  uint64_t* o = out.data() + base;
  // Words of ASCII letters and digits: each lowercased byte is its code point.
  const auto ascii_word = [&](const uint8_t* w, size_t len) {
    if (!first) *o++ = table[uint8_t{' '}];
    first = false;
    for (size_t j = 0; j < len; ++j) o[j] = table[w[j]];
    o += len;
  };
  scan_runs(
      text,
      [&](const uint8_t* lower, const uint32_t* starts, const uint32_t* ends, size_t count) {
        for (size_t i = 0; i < count; ++i) ascii_word(lower + starts[i], ends[i] - starts[i]);
      },
      [&](size_t s, size_t e) {
        scan_words(text.substr(s, e - s), buf, [&](std::string_view w) { put_word_chars(w, seed, first, o); });
      });
  out.resize(static_cast<size_t>(o - out.data()));
  internal::trim_scratch(buf);
}

}  // namespace

void hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) { words_to(text, seed, out); }
void hash_words(std::string_view text, uint64_t seed, HashVector& out) { words_to(text, seed, out); }
void hash_chars(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) { chars_to(text, seed, out); }
void hash_chars(std::string_view text, uint64_t seed, HashVector& out) { chars_to(text, seed, out); }
void hash_words_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) { words_exact_to(text, seed, out); }
void hash_chars_exact(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) { chars_exact_to(text, seed, out); }

}  // namespace neardup
