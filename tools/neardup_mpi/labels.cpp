// Clusters across the ranks: connected components by label propagation, then the fate of each
// clustered document (kept, or removed in favour of which).
#include "run.h"

#include "pipeline/policies.h"

namespace neardup::mpi {

// The connected components of the verified edges, without gathering them: every document in an
// edge (a vertex) stays on the rank that read it, labelled with the first document of its
// component. Each rank first joins its vertices along the edges it holds (union-find), then
// labels cross to the other ranks along the edges between them, round after round, until no
// label changes anywhere: as many rounds as the longest chain of ranks a component crosses, plus
// one.
Run::Components Run::components(const std::vector<ScoredPair>& edges) {
  // Each edge to the ranks that read its two documents.
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  for (const ScoredPair& e : edges) {
    const int ra = owner_of(bases_, e.a), rb = owner_of(bases_, e.b);
    const DocPair p{e.a, e.b};
    out[static_cast<size_t>(ra)].append(reinterpret_cast<const char*>(&p), sizeof p);
    if (rb != ra) out[static_cast<size_t>(rb)].append(reinterpret_cast<const char*>(&p), sizeof p);
  }
  std::vector<DocPair> mine;
  for (const std::string& g : c_.exchange(std::move(out))) {
    const size_t at = mine.size();
    mine.resize(at + g.size() / sizeof(DocPair));
    std::memcpy(mine.data() + at, g.data(), g.size());
  }
  Components comp;
  for (const DocPair& p : mine) {
    if (local_.has(p.a)) comp.docs.push_back(p.a);
    if (local_.has(p.b)) comp.docs.push_back(p.b);
  }
  std::sort(comp.docs.begin(), comp.docs.end());
  comp.docs.erase(std::unique(comp.docs.begin(), comp.docs.end()), comp.docs.end());
  const size_t m = comp.docs.size();
  auto vertex = [&](DocId d) { return place_in(comp.docs, d); };
  UnionFind uf(m);
  std::vector<std::pair<uint32_t, DocId>> cross;  // (local vertex, remote document)
  for (const DocPair& p : mine) {
    const bool la = local_.has(p.a), lb = local_.has(p.b);
    if (la && lb) {
      uf.unite(vertex(p.a), vertex(p.b));
    } else {
      cross.push_back(la ? std::make_pair(vertex(p.a), p.b) : std::make_pair(vertex(p.b), p.a));
    }
  }
  // Labels per local part (its root): the part's first document to start with.
  std::vector<DocId> first(m, std::numeric_limits<DocId>::max());
  for (uint32_t i = 0; i < m; ++i) first[uf.find(i)] = std::min(first[uf.find(i)], comp.docs[i]);
  for (;;) {
    ++comp.rounds;
    std::vector<std::string> send(static_cast<size_t>(c_.size()));
    for (const auto& [v, d] : cross) {
      const DocId msg[2] = {d, first[uf.find(v)]};
      send[static_cast<size_t>(owner_of(bases_, d))].append(reinterpret_cast<const char*>(msg), sizeof msg);
    }
    int changed = 0;
    for (const std::string& g : c_.exchange(std::move(send))) {
      for (size_t at = 0; at + sizeof(DocId[2]) <= g.size(); at += sizeof(DocId[2])) {
        DocId msg[2];
        std::memcpy(msg, g.data() + at, sizeof msg);
        const size_t r = uf.find(vertex(msg[0]));
        if (msg[1] < first[r]) first[r] = msg[1], changed = 1;
      }
    }
    if (c_.all_reduce(changed, MPI_MAX) == 0) break;
  }
  comp.first.resize(m);
  for (uint32_t i = 0; i < m; ++i) comp.first[i] = first[uf.find(i)];
  return comp;
}

// Who keeps whom. Each component's members go to the rank that read its first document, with
// what their keep order needs (length, or the --keep-by value); that rank orders them as
// cluster.h and Pipeline do (ties by input order), then keeps the first of each component, or,
// with --cluster leader, runs the leader clustering over them with the sets of its members
// fetched. Each member's fate (its kept document, and the first document of its cluster for the
// numbering of --clusters) goes back to the rank that read it.
std::vector<Run::Fate> Run::decide(const Components& comp) {
  using Kind = io::KeyValue::Kind;
  const bool by_field = ro_.keep == KeepPolicy::Field;
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (size_t i = 0; i < comp.docs.size(); ++i) {
    const size_t l = comp.docs[i] - local_.base;
    Packer p;
    p.put(comp.first[i]);
    p.put(comp.docs[i]);
    p.put(local_.lengths[l]);
    p.put(by_field ? local_.key_kind[l] : uint8_t{0});
    p.put(by_field ? local_.key_num[l] : 0.0);
    p.put_string(by_field ? std::string_view(local_.key_text[l]) : std::string_view());
    send[static_cast<size_t>(owner_of(bases_, comp.first[i]))] += p.bytes();
  }
  struct Member {
    DocId first, doc;
    uint32_t length;
    Kind kind;
    double num;
    std::string_view text;
  };
  const auto got = c_.exchange(std::move(send));
  std::vector<Member> members;
  for (const std::string& g : got) {
    Unpacker u(g);
    while (!u.done()) {
      Member mb{};
      mb.first = u.get<DocId>();
      mb.doc = u.get<DocId>();
      mb.length = u.get<uint32_t>();
      mb.kind = static_cast<Kind>(u.get<uint8_t>());
      mb.num = u.get<double>();
      mb.text = u.get_string();
      members.push_back(mb);
    }
  }
  // Keep order: by the policy, then input order, as one process orders them.
  auto before = [&](const Member& a, const Member& b) {
    const io::KeyValue ka{a.kind, a.num, a.text}, kb{b.kind, b.num, b.text};
    if (keep_before(ro_, a.length, ka, b.length, kb)) return true;
    if (keep_before(ro_, b.length, kb, a.length, ka)) return false;
    return a.doc < b.doc;
  };
  std::sort(members.begin(), members.end(), [&](const Member& a, const Member& b) { return a.first != b.first ? a.first < b.first : before(a, b); });
  // The components as a Clustering over `members` (each kept by its first member in keep order,
  // rank = place in `members`); with --cluster leader, clustered again as one process does.
  Clustering by_component;
  by_component.keeper.resize(members.size());
  for (size_t i = 0; i < members.size();) {
    size_t j = i + 1;
    while (j < members.size() && members[j].first == members[i].first) ++j;
    for (size_t x = i; x < j; ++x) by_component.keeper[x] = static_cast<DocId>(i);
    i = j;
  }
  Clustering clustering = std::move(by_component);
  if (ro_.cluster == ClusterMode::Leader) {
    std::vector<DocId> docs;
    for (const Member& mb : members) docs.push_back(mb.doc);
    const Payloads pl = fetch(std::move(docs), false);
    const Scorer score = scorer(pl);
    std::vector<uint32_t> rank(members.size());
    std::iota(rank.begin(), rank.end(), 0u);
    clustering = cluster_leaders(clustering, rank, [&](DocId x, DocId l) {
      const DocId px = static_cast<DocId>(pl.index(members[x].doc)), pl_ = static_cast<DocId>(pl.index(members[l].doc));
      return score(std::min(px, pl_), std::max(px, pl_)) + kSimilarityEpsilon >= spec_.threshold;
    }, threads_);
  }
  std::vector<DocId> keeper(members.size());
  for (size_t x = 0; x < members.size(); ++x) keeper[x] = members[clustering.keeper[x]].doc;
  // Each cluster (a kept document and those removed in its favour) is numbered by its first
  // document.
  std::unordered_map<DocId, DocId> group_first;
  for (size_t x = 0; x < members.size(); ++x) {
    auto [it, fresh] = group_first.emplace(keeper[x], members[x].doc);
    if (!fresh) it->second = std::min(it->second, members[x].doc);
  }
  std::unordered_map<DocId, uint32_t> group_size;
  for (size_t x = 0; x < members.size(); ++x) ++group_size[keeper[x]];
  std::vector<std::string> back(static_cast<size_t>(c_.size()));
  for (size_t x = 0; x < members.size(); ++x) {
    const Fate f{members[x].doc, keeper[x], group_first[keeper[x]], group_size[keeper[x]] >= 2};
    back[static_cast<size_t>(owner_of(bases_, f.doc))].append(reinterpret_cast<const char*>(&f), sizeof f);
  }
  std::vector<Fate> fates;
  for (const std::string& g : c_.exchange(std::move(back))) {
    const size_t at = fates.size();
    fates.resize(at + g.size() / sizeof(Fate));
    std::memcpy(fates.data() + at, g.data(), g.size());
  }
  std::sort(fates.begin(), fates.end(), [](const Fate& a, const Fate& b) { return a.doc < b.doc; });
  return fates;
}

}  // namespace neardup::mpi
