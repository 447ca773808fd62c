#include "neardup/io/tsv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "neardup/io/writer.h"
#include "neardup/simhash.h"

namespace neardup::io {

void append_similarity(std::string& line, double s) {
  // printf's "%.6f" rounds the exact binary value of s to six decimals (ties to even); a pairs
  // output has millions of them, and printf takes 100 ns each. For s in [0, 1], x = s * 10^6
  // is within 2^-33 of the exact product, so where x is not within 10^-6 of a half, rounding x
  // to the nearest integer rounds the exact product alike; the rest take printf.
  if (!std::signbit(s) && s <= 1.0) {  // -0.0 prints its sign
    const double x = s * 1e6, whole = std::floor(x), frac = x - whole;
    if (std::fabs(frac - 0.5) > 1e-6) {
      const auto v = static_cast<uint32_t>(whole) + (frac > 0.5 ? 1u : 0u);
      char buf[8] = {static_cast<char>('0' + v / 1000000), '.'};
      for (uint32_t i = 7, r = v % 1000000; i >= 2; --i, r /= 10) buf[i] = static_cast<char>('0' + r % 10);
      line.append(buf, sizeof buf);
      return;
    }
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.6f", s);
  line.append(buf, static_cast<size_t>(n));
}

void write_pairs(AtomicFile& out, std::span<const ScoredPair> pairs, const IdOf& id, std::span<const uint64_t> simhashes) {
  // Lines gathered into writes of about 1 MiB: one write call per line cost more than its line.
  constexpr size_t kFlush = size_t{1} << 20;
  std::string buf;
  // Room for the lines up front (ids of about 40 bytes), not grown by doubling, which copied
  // each write's bytes once more.
  buf.reserve(std::min(kFlush + 4096, pairs.size() * 96));
  for (const ScoredPair& p : pairs) {
    buf.append(id(p.a)).push_back('\t');
    buf.append(id(p.b)).push_back('\t');
    append_similarity(buf, p.similarity);
    if (!simhashes.empty()) {
      buf.push_back('\t');
      buf.append(std::to_string(hamming_distance(simhashes[p.a], simhashes[p.b])));
    }
    buf.push_back('\n');
    if (buf.size() >= kFlush) {
      out.write(buf);
      buf.clear();
    }
  }
  if (!buf.empty()) out.write(buf);
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
