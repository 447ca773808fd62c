// JSON text for the CLI's own outputs (eval --json, --rejects).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace neardup::cli {

/// Whether `s` is well-formed UTF-8 (a JSON string must be).
inline bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p;
    int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || end - p < n) return false;
    for (int i = 1; i < n; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    if (n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))) return false;  // overlong, surrogate
    if (n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))) return false;  // overlong, > U+10FFFF
    p += n;
  }
  return true;
}

/// Appends `s` (well-formed UTF-8) as a JSON string, quotes included.
inline void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  out += '"';
}

/// Appends `s` in base64 (RFC 4648), for bytes that are not UTF-8.
inline void append_base64(std::string& out, std::string_view s) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= s.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(s[i]) << 16 | static_cast<unsigned char>(s[i + 1]) << 8 | static_cast<unsigned char>(s[i + 2]);
    out += digits[v >> 18];
    out += digits[(v >> 12) & 63];
    out += digits[(v >> 6) & 63];
    out += digits[v & 63];
  }
  if (i < s.size()) {
    unsigned v = static_cast<unsigned char>(s[i]) << 16;
    if (i + 1 < s.size()) v |= static_cast<unsigned char>(s[i + 1]) << 8;
    out += digits[v >> 18];
    out += digits[(v >> 12) & 63];
    out += i + 1 < s.size() ? digits[(v >> 6) & 63] : '=';
    out += '=';
  }
}

}  // namespace neardup::cli
