// UTF-8 decoding shared by the tokenizer and the JSONL reader: one definition of "well formed".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

/// Writes the UTF-8 encoding of cp (at most U+10FFFF) at p; returns the end (at most 4 bytes on).
inline char* put_utf8(char* p, uint32_t cp) noexcept {
  if (cp < 0x80) {
    *p++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *p++ = static_cast<char>(0xC0 | (cp >> 6));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *p++ = static_cast<char>(0xE0 | (cp >> 12));
    *p++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *p++ = static_cast<char>(0xF0 | (cp >> 18));
    *p++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *p++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return p;
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

/// The value of the 4 hex digits at in[at, at + 4), which must end by in[limit]: false if they do
/// not, or one is not a hex digit.
inline bool hex4_at(const char* in, size_t at, size_t limit, uint32_t& v) noexcept {
  if (at + 4 > limit) return false;
  v = 0;
  for (size_t k = at; k < at + 4; ++k) {
    const char c = in[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return true;
}

/// Copies the JSON text `in` to `out`, writing \uFFFD for every \uD800-\uDFFF escape that is
/// not a high surrogate followed by a low one (escaped backslashes are skipped as such). Returns
/// whether anything was replaced.
inline bool replace_lone_surrogate_escapes(std::string_view in, std::string& out) {
  const auto hex4 = [&](size_t at, uint32_t& v) { return hex4_at(in.data(), at, in.size(), v); };
  out.clear();
  out.reserve(in.size());
  bool replaced = false;
  for (size_t i = 0; i < in.size();) {
    if (in[i] != '\\' || i + 1 >= in.size()) {
      out.push_back(in[i++]);
      continue;
    }
    uint32_t v = 0, w = 0;
    if (in[i + 1] != 'u' || !hex4(i + 2, v) || v < 0xD800 || v > 0xDFFF) {
      out.append(in.substr(i, 2));  // any other escape, copied whole
      i += 2;
      continue;
    }
    if (v <= 0xDBFF && i + 11 < in.size() && in[i + 6] == '\\' && in[i + 7] == 'u' && hex4(i + 8, w) && w >= 0xDC00 &&
        w <= 0xDFFF) {
      out.append(in.substr(i, 12));  // a pair
      i += 12;
      continue;
    }
    out.append("\\uFFFD");
    replaced = true;
    i += 6;
  }
  return replaced;
}

}  // namespace neardup::internal
