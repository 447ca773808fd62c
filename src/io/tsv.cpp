#include "neardup/io/tsv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "internal/realloc_buffer.h"
#include "neardup/io/writer.h"
#include "neardup/simhash.h"

namespace neardup::io {

namespace {

// Writes s as every output prints it, six decimals, at p (room for 32 bytes); returns the end.
// printf's "%.6f" rounds the exact binary value of s to six decimals (ties to even); a pairs
// output has millions of them, and printf takes 100 ns each. For s in [0, 1], x = s * 10^6 is
// within 2^-33 of the exact product, so where x is not within 10^-6 of a half, rounding x to the
// nearest integer rounds the exact product alike; the rest take printf.
char* put_similarity(char* p, double s) {
  if (!std::signbit(s) && s <= 1.0) {  // -0.0 prints its sign
    const double x = s * 1e6, whole = std::floor(x), frac = x - whole;
    if (std::fabs(frac - 0.5) > 1e-6) {
      const auto v = static_cast<uint32_t>(whole) + (frac > 0.5 ? 1u : 0u);
      p[0] = static_cast<char>('0' + v / 1000000);
      p[1] = '.';
      for (uint32_t i = 7, r = v % 1000000; i >= 2; --i, r /= 10) p[i] = static_cast<char>('0' + r % 10);
      return p + 8;
    }
  }
  return p + std::clamp(std::snprintf(p, 32, "%.6f", s), 0, 31);  // NaN, or a value out of [0, 1]
}

}  // namespace

void append_similarity(std::string& line, double s) {
  char buf[32];
  line.append(buf, static_cast<size_t>(put_similarity(buf, s) - buf));
}

void write_pairs(AtomicFile& out, std::span<const ScoredPair> pairs, const IdOf& id, std::span<const uint64_t> simhashes) {
  // Lines gathered into writes of about 1 MiB: one write call per line cost more than its line.
  // They are put together in place, not appended to a string (whose length checks and calls to
  // copy each piece took as long as the rest), and the first document's id is looked up once per
  // run of pairs: they come by it, hundreds in a row in a dense cluster. The buffer starts at
  // about the chunk's size (the listing hands over chunks of a few pairs on sparse corpora) and
  // is never zero-filled.
  constexpr size_t kFlush = size_t{1} << 20;
  constexpr size_t kNumbers = 64;  // a line's tabs, similarity (at most 31 bytes), distance and newline
  internal::ByteArray buf;
  buf.reserve(std::min(kFlush, pairs.size() * 96));
  std::string_view id_a;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const ScoredPair& p = pairs[i];
    if (i == 0 || p.a != pairs[i - 1].a) id_a = id(p.a);
    const std::string_view id_b = id(p.b);
    const size_t most = id_a.size() + id_b.size() + kNumbers;
    if (buf.size() > 0 && buf.size() + most > kFlush) {
      out.write(std::string_view(buf.data(), buf.size()));
      buf.clear();
    }
    if (buf.size() + most > buf.capacity()) buf.reserve(std::max(2 * buf.capacity(), buf.size() + most));
    char* w = buf.data() + buf.size();
    w = std::copy(id_a.begin(), id_a.end(), w);
    *w++ = '\t';
    w = std::copy(id_b.begin(), id_b.end(), w);
    *w++ = '\t';
    w = put_similarity(w, p.similarity);
    if (!simhashes.empty()) {
      *w++ = '\t';
      w = std::to_chars(w, w + 8, hamming_distance(simhashes[p.a], simhashes[p.b])).ptr;
    }
    *w++ = '\n';
    buf.resize(static_cast<size_t>(w - buf.data()));
  }
  if (buf.size() > 0) out.write(std::string_view(buf.data(), buf.size()));
}

void write_removed(AtomicFile& out, const Clustering& clustering, std::span<const double> removed_similarity, const IdOf& id) {
  std::string line;
  size_t removed = 0;
  for (DocId i = 0; i < clustering.keeper.size(); ++i) {
    if (clustering.kept(i)) continue;
    line.clear();
    line.append(id(i)).push_back('\t');
    line.append(id(clustering.keeper[i])).push_back('\t');
    append_similarity(line, removed_similarity[removed++]);
    line.push_back('\n');
    out.write(line);
  }
}

void write_clusters(AtomicFile& out, const Clustering& clustering, const IdOf& id) {
  const auto groups = cluster_members(clustering);
  std::string line;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const DocId d : groups[g]) {
      line.clear();
      line.append(std::to_string(g)).push_back('\t');
      line.append(id(d)).push_back('\t');
      line.append(clustering.kept(d) ? "kept" : "removed");
      line.push_back('\n');
      out.write(line);
    }
}

}  // namespace neardup::io
