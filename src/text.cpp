#include "neardup/text.h"

#include <unicode/uchar.h>

#include <array>
#include <memory>

#include "internal/hash.h"
#include "internal/utf8.h"

namespace neardup {
namespace {

// Code points below 0x10000 are classified through one table built from ICU on first use:
// bit 31 = word character, low 21 bits = simple lowercase. Above that, ICU is asked directly.
constexpr uint32_t kWordBit = 1u << 31;

const uint32_t* bmp_table() {
  static const std::unique_ptr<uint32_t[]> table = [] {
    auto t = std::make_unique<uint32_t[]>(0x10000);
    for (uint32_t cp = 0; cp < 0x10000; ++cp) {
      const int8_t cat = u_charType(static_cast<UChar32>(cp));
      const uint32_t mask = U_MASK(cat);
      const bool word = (mask & (U_GC_L_MASK | U_GC_N_MASK)) != 0;
      t[cp] = static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp))) | (word ? kWordBit : 0);
    }
    return t;
  }();
  return table.get();
}

inline uint32_t classify(uint32_t cp) noexcept {
  if (cp < 0x10000) return bmp_table()[cp];
  const uint32_t mask = U_MASK(u_charType(static_cast<UChar32>(cp)));
  const bool word = (mask & (U_GC_L_MASK | U_GC_N_MASK)) != 0;
  return static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cp))) | (word ? kWordBit : 0);
}

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

// The one word scanner: calls on_word(std::string_view lowercased_utf8) for every word.
template <class OnWord>
void scan_words(std::string_view text, std::string& word, OnWord&& on_word) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  word.clear();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80 && word.empty()) {
      // Fast path: a run of ASCII word bytes is hashed in place, or from a lowercased copy if
      // it has capitals. A run that meets a non-ASCII byte may go on with other letters: it is
      // copied to `word` and the general loop below continues it.
      if (!kAscii.word[c]) {
        ++p;
        continue;
      }
      const unsigned char* s = p;
      unsigned upper = 0;
      while (p < end && *p < 0x80 && kAscii.word[*p]) upper |= static_cast<unsigned>(*p - 'A') < 26u, ++p;
      if (p < end && *p >= 0x80) {
        for (const unsigned char* q = s; q < p; ++q) word.push_back(kAscii.lower[*q]);
        continue;
      }
      if (!upper) {
        on_word(std::string_view(reinterpret_cast<const char*>(s), static_cast<size_t>(p - s)));
      } else {
        for (const unsigned char* q = s; q < p; ++q) word.push_back(kAscii.lower[*q]);
        on_word(std::string_view(word));
        word.clear();
      }
      continue;
    }
    if (c < 0x80) {
      if (kAscii.word[c]) {
        word.push_back(kAscii.lower[c]);
      } else if (!word.empty()) {
        on_word(std::string_view(word));
        word.clear();
      }
      ++p;
      continue;
    }
    uint32_t cp = 0;
    const int len = internal::decode_utf8(p, end, cp);
    if (len == 0) {  // invalid byte: a separator
      if (!word.empty()) {
        on_word(std::string_view(word));
        word.clear();
      }
      ++p;
      continue;
    }
    p += len;
    const uint32_t info = classify(cp);
    if (info & kWordBit) {
      internal::append_utf8(word, info & 0x1FFFFF);
    } else if (!word.empty()) {
      on_word(std::string_view(word));
      word.clear();
    }
  }
  if (!word.empty()) on_word(std::string_view(word));
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

void hash_words(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) {
  thread_local std::string scratch;
  scan_words(text, scratch, [&](std::string_view w) {
    out.push_back(internal::hash_bytes(w.data(), w.size(), seed));
  });
}

void hash_chars(std::string_view text, uint64_t seed, std::vector<uint64_t>& out) {
  thread_local std::string scratch;
  const auto hash_cp = [seed](uint32_t cp) { return internal::fmix64(seed ^ (cp * internal::kGolden)); };
  bool first = true;
  scan_words(text, scratch, [&](std::string_view w) {
    if (!first) out.push_back(hash_cp(' '));
    first = false;
    const auto* p = reinterpret_cast<const unsigned char*>(w.data());
    const auto* end = p + w.size();
    while (p < end) {  // w is well-formed UTF-8 that we encoded ourselves
      uint32_t cp = *p;
      int len = 1;
      if (cp >= 0x80) len = internal::decode_utf8(p, end, cp);
      out.push_back(hash_cp(cp));
      p += len;
    }
  });
}

}  // namespace neardup
