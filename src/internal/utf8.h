// UTF-8 decoding shared by the tokenizer and the JSONL reader: one definition of "well formed".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace neardup::internal {

/// Decodes one well-formed UTF-8 sequence at p (p < end, *p >= 0x80). Returns its length, or 0
/// when the byte at p does not start a well-formed sequence (overlong forms, encoded surrogates
/// and values above U+10FFFF are not well formed).
inline int decode_utf8(const unsigned char* p, const unsigned char* end, uint32_t& cp) noexcept {
  const unsigned c = p[0];
  const ptrdiff_t avail = end - p;
  if (c >= 0xC2 && c <= 0xDF) {
    if (avail < 2 || (p[1] & 0xC0) != 0x80) return 0;
    cp = ((c & 0x1F) << 6) | (p[1] & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (avail < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    cp = ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (avail < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
    cp = ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
    return 4;
  }
  return 0;
}

inline void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// Copies `in` to `out`, replacing every byte that is not part of a well-formed sequence with
/// U+FFFD. Returns the number of replacements.
inline size_t sanitize_utf8(const char* in, size_t n, std::string& out) {
  out.clear();
  out.reserve(n + 16);
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  const auto* end = p + n;
  size_t replaced = 0;
  while (p < end) {
    if (*p < 0x80) {
      out.push_back(static_cast<char>(*p++));
      continue;
    }
    uint32_t cp = 0;
    const int len = decode_utf8(p, end, cp);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++replaced;
      ++p;
    } else {
      out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
      p += len;
    }
  }
  return replaced;
}

}  // namespace neardup::internal
