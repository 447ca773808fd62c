// dedup's clusters, decided where each candidate component is verified (by_component), with the
// pipeline's keep order and clustering; each document's fate sent to the rank that read it.
#include "run.h"

#include "pipeline/policies.h"

namespace neardup::mpi {

// One group of whole candidate components, clustered as one process clusters its groups
// (Pipeline's cluster_group): components of the verified edges, kept by keep order (the policy,
// ties by input order), or leader clustering within them; each removed document's similarity to
// its kept one while the group's sets are at hand. Appends the fate of each document in a
// cluster of two or more.
void Run::cluster_group(const Payloads& pl, std::span<const ScoredPair> edges, std::vector<Fate>& fates) {
  const size_t n = pl.docs.size();
  std::vector<ScoredPair> local;
  local.reserve(edges.size());
  for (const ScoredPair& e : edges) local.push_back({static_cast<DocId>(pl.index(e.a)), static_cast<DocId>(pl.index(e.b)), e.similarity});
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);  // input order, which breaks the policy's ties
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return keep_before(ro_, pl.table.length(a), pl.table.key(a), pl.table.length(b), pl.table.key(b));
  });
  std::vector<uint32_t> rank(n);
  for (uint32_t r = 0; r < n; ++r) rank[order[r]] = r;
  const Scorer score = scorer(pl);
  auto similarity = [&](DocId a, DocId b) { return score(std::min(a, b), std::max(a, b)); };
  Clustering c = cluster_components(n, local, rank);
  if (ro_.cluster == ClusterMode::Leader)
    c = cluster_leaders(c, rank, [&](DocId x, DocId l) { return similarity(x, l) + kSimilarityEpsilon >= spec_.threshold; }, threads_);
  // Each cluster (a kept document and those removed in its favour) is numbered by its first
  // document; pl.docs ascend, so the first member met is the first.
  std::vector<uint32_t> size(n, 0);
  std::vector<DocId> first(n, std::numeric_limits<DocId>::max());
  for (size_t i = 0; i < n; ++i) {
    ++size[c.keeper[i]];
    first[c.keeper[i]] = std::min(first[c.keeper[i]], pl.docs[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    const DocId keeper = c.keeper[i];
    if (size[keeper] < 2) continue;
    Fate f{pl.docs[i], pl.docs[keeper], first[keeper], 0.0, std::string()};
    if (keeper != i) {
      f.similarity = similarity(static_cast<DocId>(i), keeper);
      f.keeper_id = pl.table.id(keeper);
    }
    fates.push_back(std::move(f));
  }
}

// Each fate to the rank that read its document; returns this rank's, by document.
std::vector<Fate> Run::deliver(std::vector<Fate> fates) {
  const bool ids = !o_.removed.empty();
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (const Fate& f : fates) {
    Packer p;
    p.put(f.doc);
    p.put(f.keeper);
    p.put(f.first);
    p.put(f.similarity);
    p.put_string(ids ? std::string_view(f.keeper_id) : std::string_view());
    send[static_cast<size_t>(owner_of(bases_, f.doc))] += p.bytes();
  }
  std::vector<Fate>().swap(fates);
  for (const std::string& g : c_.exchange(std::move(send))) {
    Unpacker u(g);
    while (!u.done()) {
      Fate f{};
      f.doc = u.get<DocId>();
      f.keeper = u.get<DocId>();
      f.first = u.get<DocId>();
      f.similarity = u.get<double>();
      f.keeper_id = std::string(u.get_string());
      fates.push_back(std::move(f));
    }
  }
  std::sort(fates.begin(), fates.end(), [](const Fate& a, const Fate& b) { return a.doc < b.doc; });
  return fates;
}

// dedup, on the rank that read each clustered document: the counts, --clusters, its line of
// --removed (its similarity to the kept one), and the removed documents for the kept records.
void Run::settle(std::vector<Fate> fates, Outputs& outs, Counts& counts, std::vector<std::pair<DocId, DocId>>& my_removed) {
  fates = deliver(std::move(fates));
  for (const Fate& f : fates) {
    if (f.keeper == f.doc) {
      ++counts.clusters;
    } else {
      my_removed.push_back({f.doc, f.keeper});
      if (f.similarity + kSimilarityEpsilon < spec_.threshold) ++counts.below;
    }
  }
  counts.removed = my_removed.size();
  if (outs.removed_piece)
    steps_.agree([&] {
          std::string line;
          for (const Fate& f : fates) {
            if (f.keeper == f.doc) continue;
            line.assign(local_.ids[f.doc - local_.base]).push_back('\t');
            line.append(f.keeper_id).push_back('\t');
            io::append_similarity(line, f.similarity);
            line.push_back('\n');
            outs.removed_piece->write(line);
          }
        });
  if (!o_.clusters.empty()) write_clusters(fates, outs.clusters.get());
}

}  // namespace neardup::mpi
