// Candidate components across the ranks, by label propagation, and the buckets sent to the rank
// that verifies each component.
#include "run.h"

#include "internal/radix_sort.h"

namespace neardup::mpi {

// The connected components of `edges`, without gathering them: every document in an
// edge (a vertex) stays on the rank that read it, labelled with the first document of its
// component. Each rank first joins its vertices along the edges it holds (union-find), then
// labels cross to the other ranks along the edges between them, round after round, until no
// label changes anywhere: as many rounds as the longest chain of ranks a component crosses, plus
// one.
Run::Components Run::components(const std::vector<DocPair>& edges) {
  // Each edge to the ranks that read its two documents.
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  for (const DocPair& p : edges) {
    const int ra = owner_of(bases_, p.a), rb = owner_of(bases_, p.b);
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

// Parts of components' texts summed per component, in the order of the components.
static std::vector<ComponentText> sum_by_component(std::vector<ComponentText> parts) {
  std::sort(parts.begin(), parts.end(), [](const ComponentText& a, const ComponentText& b) { return a.component < b.component; });
  std::vector<ComponentText> sums;
  for (const ComponentText& p : parts) {
    if (sums.empty() || sums.back().component != p.component)
      sums.push_back(p);
    else
      sums.back().bytes += p.bytes;
  }
  return sums;
}

// Buckets to the ranks that verify them. A candidate component (documents joined through shared
// buckets) holds every pair that can be verified between its documents, so its clusters depend
// on its buckets only: all of them go to one rank, the one that read the component's first
// document, which verifies and clusters the component as one process does (cluster_group), its
// sets fetched once. Near-copies sit near each other in most inputs, so most of a component's
// documents were read on that rank. The same bucket found in several bands, on several ranks,
// arrives there more than once and is kept once.
Buckets Run::by_component(std::vector<std::vector<DocId>> found) {
  // Each bucket's first member joined to the others, each such edge once: the bands find one
  // cluster many times over, with the same first member (1M short documents in clusters, 2
  // ranks: a rank's 2.28M edges are 0.50M distinct, and took 80 MiB more than the rest of the
  // stage as 16-byte pairs).
  std::vector<DocPair> stars;
  size_t edges = 0;
  for (const auto& b : found) edges += b.size() - 1;
  stars.reserve(edges);
  for (const auto& b : found)
    for (size_t x = 1; x < b.size(); ++x) stars.push_back({b[0], b[x]});
  internal::sort_unique_pairs(stars);
  const Components comp = components(stars);
  std::vector<DocPair>().swap(stars);
  // The component of each bucket's first member, from the rank that read it.
  std::vector<DocId> heads;
  for (const auto& b : found) heads.push_back(b[0]);
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  std::vector<std::string> storage;
  auto told = ask_owners(heads, [&](std::span<const DocId> want, Packer& p) {
    for (const DocId d : want) p.put(comp.first[place_in(comp.docs, d)]);
  }, storage);
  std::vector<DocId> head_component(heads.size());
  for (size_t i = 0; i < heads.size(); ++i) head_component[i] = told[static_cast<size_t>(owner_of(bases_, heads[i]))].get<DocId>();
  // Each component's text (Buckets::text), summed where its documents were read (each document
  // once: every bucket member is a vertex here, labelled with its component) and sent ahead of
  // its buckets to the rank they go to.
  std::vector<std::vector<ComponentText>> texts(static_cast<size_t>(c_.size()));
  {
    std::vector<ComponentText> sums;
    for (size_t i = 0; i < comp.docs.size(); ++i) sums.push_back({comp.first[i], uint64_t{local_.lengths[comp.docs[i] - local_.base]} + 1});
    for (const ComponentText& t : sum_by_component(std::move(sums))) texts[static_cast<size_t>(owner_of(bases_, static_cast<DocId>(t.component)))].push_back(t);
  }
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  for (size_t r = 0; r < out.size(); ++r) {
    Packer p;
    p.put_vector(texts[r]);
    out[r] = std::move(p.bytes());
  }
  std::vector<std::vector<ComponentText>>().swap(texts);
  for (const auto& b : found) {
    const DocId component = head_component[place_in(heads, b[0])];
    Packer p;
    p.put(component);
    p.put_vector(b);
    out[static_cast<size_t>(owner_of(bases_, component))] += p.bytes();
  }
  std::vector<std::vector<DocId>>().swap(found);
  std::vector<std::pair<DocId, std::vector<DocId>>> mine;
  std::vector<ComponentText> text;  // of the components whose buckets come here, in parts
  for (const std::string& buf : c_.exchange(std::move(out))) {
    Unpacker u(buf);
    const auto part = u.get_vector<ComponentText>();
    text.insert(text.end(), part.begin(), part.end());
    while (!u.done()) {
      const DocId component = u.get<DocId>();
      mine.emplace_back(component, u.get_vector<DocId>());
    }
  }
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  text = sum_by_component(std::move(text));  // every component of `mine` once, in order
  Buckets buckets;
  size_t t = 0;
  for (auto& [component, b] : mine) {
    if (buckets.component.empty() || buckets.component.back() != component) {
      while (text[t].component != component) ++t;
      buckets.text.push_back(text[t].bytes);
    }
    buckets.component.push_back(component);
    buckets.lists.push_back(std::move(b));
  }
  label_rounds_ = comp.rounds;
  return buckets;
}

}  // namespace neardup::mpi
