// The texts of a corpus held in memory for the micro benchmarks: documents in input order, up
// to `limit_bytes` of text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "neardup/io/reader.h"

namespace neardup::bench {

inline std::vector<std::string> load_texts(const std::string& path, size_t limit_bytes = SIZE_MAX) {
  std::vector<std::string> v;
  io::InputSet in({path}, io::InputFormat::Auto);
  io::RecordReader r(in, {});
  io::Record rec;
  size_t total = 0;
  while (total < limit_bytes && r.next(rec)) {
    v.emplace_back(rec.text);
    total += rec.text.size();
  }
  return v;
}

inline int64_t total_bytes(const std::vector<std::string>& texts) {
  int64_t b = 0;
  for (const auto& t : texts) b += static_cast<int64_t>(t.size());
  return b;
}

/// Up to n pieces of about `piece` bytes of the corpus's documents, cut at the next space or
/// newline (for benchmarks that need many short real documents from a few long ones).
inline std::vector<std::string> load_pieces(const std::string& path, size_t n, size_t piece) {
  std::vector<std::string> out;
  io::InputSet in({path}, io::InputFormat::Auto);
  io::RecordReader r(in, {});
  io::Record rec;
  while (out.size() < n && r.next(rec)) {
    const std::string_view t = rec.text;
    for (size_t pos = 0; pos < t.size() && out.size() < n;) {
      size_t end = std::min(t.size(), pos + piece);
      while (end < t.size() && t[end] != ' ' && t[end] != '\n') ++end;
      out.emplace_back(t.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  return out;
}

}  // namespace neardup::bench
