#include "neardup/io/tsv.h"

#include <cstdio>

#include "neardup/io/writer.h"
#include "neardup/simhash.h"

namespace neardup::io {

void append_similarity(std::string& line, double s) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.6f", s);
  line.append(buf, static_cast<size_t>(n));
}

void write_pairs(AtomicFile& out, std::span<const ScoredPair> pairs, const IdOf& id, std::span<const uint64_t> simhashes) {
  std::string line;
  for (const ScoredPair& p : pairs) {
    line.clear();
    line.append(id(p.a)).push_back('\t');
    line.append(id(p.b)).push_back('\t');
    append_similarity(line, p.similarity);
    if (!simhashes.empty()) {
      line.push_back('\t');
      line.append(std::to_string(hamming_distance(simhashes[p.a], simhashes[p.b])));
    }
    line.push_back('\n');
    out.write(line);
  }
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
