// Verification in groups of candidate components: the groups formed, read (the next one on a
// thread of its own while one is verified), verified and clustered one after another.
#include "pipeline/impl.h"
#include "pipeline/grouped_buckets.h"
#include "internal/flag_rank.h"
#include "internal/free_heap.h"

namespace neardup {

// The documents of `group`'s buckets, ascending and distinct: marked in `seen` (all clear, left
// clear) as they are met, then sorted.
void Pipeline::Impl::distinct_members(const LshBuckets& group, std::vector<uint8_t>& seen, std::vector<DocId>& docs) {
  docs.clear();
  for (const DocId d : group.members)
    if (!seen[d]) {
      seen[d] = 1;
      docs.push_back(d);
    }
  for (const DocId d : docs) seen[d] = 0;
  std::sort(docs.begin(), docs.end());
}

// The verification's groups: components in the order of their first document in the input, so
// that the writer can copy the records before a group's first once the groups before it are
// verified; consecutive components are one group while their text, and kDocWeight bytes per
// document, weigh less than RunTuning::verify_group_bytes (a component heavier than that is a
// group of its own). Each group reads its records again wherever they lie in the input, and a
// group of a few short records scattered over a large input costs page faults over all of it for
// little work; a group's sets take about as many bytes as its text, so the sets held at once are
// bounded by verify_group_bytes or the largest component. (Groups of whole parts of the input
// would not be bounded so: a component of s documents starts within the first 1/s of the input,
// and the first of 256 parts of 10 million short documents in clusters holds 420k of the 4.8
// million in buckets, 138 MB of sets.)
//
// Splits the buckets into groups of whole components: `order` lists the bucket indices group by
// group, group g being [start[g], start[g + 1]). Returns for each group the first document of
// the next (every document before it is decided once group g is verified).
std::vector<DocId> Pipeline::Impl::group_buckets(const LshBuckets& buckets, const std::vector<uint8_t>& in_bucket,
                                                 std::vector<size_t>& start, std::vector<uint32_t>& order) const {
  const size_t n = docs_.size();
  // The documents in buckets numbered in input order, so that the union-find and the weights
  // take an entry each of them, not of every document (half of 50 million short documents in
  // clusters are in none: 100 MB).
  const internal::FlagRank local(in_bucket);
  const size_t m = local.count();
  UnionFind uf(m);  // a component's root is its first document
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto b = buckets[i];
    const uint32_t first = local(b[0]);
    for (size_t x = 1; x < b.size(); ++x) uf.unite(first, local(b[x]));
  }
  // Each document's root, and in a root's own place its component's weight (saturating: any past
  // the limit is full), later its group: one array, with a bit per document to tell the roots.
  std::vector<uint32_t> weight = std::move(uf).representatives();
  std::vector<bool> is_root(m, false);
  const auto root_of = [&](uint32_t x) { return is_root[x] ? x : weight[x]; };
  DocumentTable::Behind behind(docs_);
  for (DocId d = 0, x = 0; d < n; ++d)
    if (in_bucket[d]) {
      behind.at(d);
      if (weight[x] == x) {  // the first of its component, met before the others
        is_root[x] = true;
        weight[x] = 0;
      }
      const uint32_t r = root_of(x++);
      weight[r] = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{weight[r]} + docs_.length(d) + kDocWeight, UINT32_MAX));
    }
  // The groups, in order of roots; weight[r] becomes the group of root r.
  std::vector<DocId> next_first;
  uint64_t held = 0;
  for (DocId d = 0, x = 0; d < n; ++d) {
    if (!in_bucket[d]) continue;
    const uint32_t root = x++;  // d's number among the documents in buckets
    if (!is_root[root]) continue;
    if (next_first.empty() || (held > 0 && held + weight[root] > options_.tuning.verify_group_bytes)) {
      if (!next_first.empty()) next_first.back() = d;
      next_first.push_back(static_cast<DocId>(n));
      held = 0;
    }
    held += weight[root];
    weight[root] = static_cast<uint32_t>(next_first.size() - 1);
  }
  // Each bucket's group looked up twice rather than held: to count, to place.
  const auto group_of = [&](size_t i) { return weight[root_of(local(buckets[i][0]))]; };
  const size_t groups = next_first.size();
  start.assign(groups + 1, 0);
  for (size_t i = 0; i < buckets.size(); ++i) ++start[group_of(i) + 1];
  for (size_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<size_t> at(start.begin(), start.end() - 1);
  order.assign(buckets.size(), 0);
  if (buckets.size() > UINT32_MAX)  // a corpus of hundreds of millions of documents, nearly all in distinct buckets
    throw UsageError("more than 2^32 distinct LSH buckets: split the input, or use fewer bands");
  for (size_t i = 0; i < buckets.size(); ++i) order[at[group_of(i)]++] = static_cast<uint32_t>(i);
  return next_first;
}

// verify_in_groups' groups that have buckets, in order, each with its sets in the run's store.
// The next group is read on a thread of its own while one is verified: the reading keeps busy
// the cores that the verification's serial parts (the join's connections, the clustering) leave
// idle (1 million short documents in clusters: 5-9% less time). Not where the run keeps its sets
// (they stay in the run's store), nor where it spills or indexes its buckets group by group (the
// spilled tables and the band index are followed by one thread at a time).
class Pipeline::Impl::GroupFeed {
 public:
  GroupFeed(Impl& run, const GroupedBuckets& grouped)
      : run_(run), grouped_(grouped),
        ahead_(run.threads_ > 1 && !run.options_.tuning.keep_sets && !run.options_.tuning.spill_documents && !run.sketches_.index_per_group),
        pool_(&ThreadPool::current()), cancel_(Cancel::flag()) {
    for (size_t g = 0; g < grouped.groups(); ++g)
      if (!grouped.empty(g)) todo_.push_back(g);
    cur_.seen.assign(run.docs_.size(), 0);
    if (ahead_) next_.seen.assign(run.docs_.size(), 0);
  }

  /// The next group into group() and docs(), its sets into the run's store; false after the last.
  bool next(size_t& g) {
    if (k_ == todo_.size()) return false;
    g = todo_[k_];
    if (!ahead_) {
      grouped_.load(g, cur_.group);
      distinct_members(cur_.group, cur_.seen, cur_.docs);
      if (run_.sketches_.index_per_group) run_.sketches_.index_group(cur_.group, cur_.docs);
      run_.read_missing_sets(cur_.docs, false);
    } else {
      if (k_ == 0) {
        run_.read_group(grouped_, g, cur_);
      } else {
        reader_.join();
        std::swap(cur_, next_);
      }
      run_.take_group(cur_);  // the run's store gets cur_'s sets, cur_ the last group's
      // The reading thread lets the last group's sets go (next_ holds that group's documents)
      // before it reads the next group's: one allocation each, their frees were 1.5% of the CPU
      // time of a dedup of 1 million short documents in clusters, on the thread that verifies
      // (verify_in_groups leaves them).
      if (k_ + 1 < todo_.size())
        reader_.start([this, g_next = todo_[k_ + 1]] {
          const ThreadPool::Use use(pool_);
          const Cancel scope(cancel_);
          cur_.sets.release(next_.docs);
          run_.read_group(grouped_, g_next, next_);
        });
    }
    ++k_;
    return true;
  }
  const LshBuckets& group() const noexcept { return cur_.group; }
  const std::vector<DocId>& docs() const noexcept { return cur_.docs; }
  /// Whether a group's sets are let go by the feed (when the next group is taken), not by the
  /// run once the group is verified.
  bool lets_go() const noexcept { return ahead_; }

 private:
  Impl& run_;
  const GroupedBuckets& grouped_;
  const bool ahead_;
  ThreadPool* pool_;                 // the run's pool and cancellation flag, for the reading thread
  const std::atomic<bool>* cancel_;
  std::vector<size_t> todo_;         // the groups with buckets
  size_t k_ = 0;                     // the next in todo_
  GroupSets cur_, next_;
  BackgroundJob reader_;  // reads next_; the last member, so that it is joined before next_ goes
};

// Verification in groups. A candidate component (documents joined through shared buckets) holds
// every pair that can be verified between its documents, so its clusters depend on its own
// pairs only: verifying a group of components at a time, in the order of their first
// documents, gives the clusters of verifying all at once, and decides the documents of the
// input's start first. The writer of the kept records (run_dedup) then starts while the rest is
// verified. Pairs mode keeps each group's join (its ranks, not the sets) to list the pairs of its
// large buckets when they are written (expand_pairs).
uint64_t Pipeline::Impl::verify_in_groups(LshBuckets&& buckets, const std::vector<uint8_t>& in_bucket) {
  const size_t n = docs_.size();
  std::vector<size_t> start;  // group g is order[start[g], start[g + 1])
  std::vector<uint32_t> order;  // bucket indices, group by group
  std::vector<DocId> next_first;
  // share_band's index of the buckets, where it is due (find_buckets), is made while they are
  // grouped: both only read them, and each is serial (1 million short documents in clusters:
  // 0.04 and 0.06 s).
  internal::parallel_for(sketches_.index_due ? 2 : 1, threads_, [&](size_t i, size_t) {
    if (i == 0)
      next_first = group_buckets(buckets, in_bucket, start, order);
    else
      sketches_.index_buckets(buckets, n);
  });
  // A run that spills its state keeps the buckets on disk, in group order, until their group
  // (the band keys' files, at least twice their size, are gone by now).
  const std::string spill_dir = options_.tuning.spill_documents ? io::temp_directory(options_.tuning.temp_dir) : std::string();
  const GroupedBuckets grouped(std::move(buckets), std::move(order), std::move(start), spill_dir.empty() ? nullptr : &spill_dir);
  if (clusters_wanted()) {  // each group's clusters (cluster_group)
    clustering_.keeper.resize(n);
    std::iota(clustering_.keeper.begin(), clustering_.keeper.end(), DocId{0});  // alone until a group says otherwise
    // Room for a similarity per document in a bucket (the most that can be removed), so that the
    // list does not grow by copies: the pages never written stay out of memory.
    group_similarity_.clear();
    group_similarity_.reserve(static_cast<size_t>(std::count(in_bucket.begin(), in_bucket.end(), uint8_t{1})));
  }
  if (!kept_outs_.empty()) {
    decisions_ = std::make_unique<Decisions>(n);
    for (DocId d = 0; d < n; ++d)
      if (!in_bucket[d]) decisions_->set(d, true);  // in no bucket: alone, kept
    decisions_->publish();
    start_writer();
  }
  uint64_t verified = 0;
  // A dedup that spills its state holds no verified pair: its clusters are decided group by
  // group, and the pairs would be 16 bytes each for nothing (pairs() refuses).
  pairs_dropped_ = drops_pairs();
  dropped_pairs_ = 0;
  std::vector<ScoredPair> all;
  GroupFeed feed(*this, grouped);
  const LshBuckets& group = feed.group();
  const std::vector<DocId>& docs = feed.docs();
  std::vector<ScoredPair> found;
  for (size_t g = 0; feed.next(g);) {
    ++stats_.verify_groups;
    found.clear();
    verified += verify_buckets(group, docs, found);
    if (clusters_wanted()) cluster_group(docs, found);
    // A component lies in one group: its sets are not needed again (unless asked to be kept).
    if (!options_.tuning.keep_sets) {
      if (feed.lets_go())
        sets_.will_release();
      else
        sets_.release(docs);
      // A run whose memory is limited gives back what the group let go, past a bound.
      if (options_.tuning.spill_documents) internal::release_free_memory_past(internal::kMaxFreeHeapBytes);
    }
    if (decisions_) throw_if_the_writer_failed();
    if (pairs_dropped_)
      dropped_pairs_ += found.size();
    else
      all.insert(all.end(), found.begin(), found.end());
    // Every component starting before the next group's first document is verified: the
    // documents before it are decided, about that share of the input.
    if (options_.tuning.progress) {
      const double share = static_cast<double>(next_first[g]) / static_cast<double>(std::max<size_t>(n, 1));
      options_.tuning.progress({"verify", static_cast<uint64_t>(share * static_cast<double>(inputs_->total_bytes())), inputs_->total_bytes(), next_first[g]});
    }
  }
  if (!options_.tuning.keep_sets) sets_.release_all();
  std::sort(all.begin(), all.end(), by_pair);
  pairs_ = std::move(all);
  return verified;
}

// Group g's buckets, documents and sets into `out` (whose store holds no set), on any thread:
// the sets of the documents that are not copies of an earlier text are read, the copies'
// shared when the group is taken (take_group).
void Pipeline::Impl::read_group(const GroupedBuckets& grouped, size_t g, GroupSets& out) const {
  grouped.load(g, out.group);
  distinct_members(out.group, out.seen, out.docs);
  std::vector<DocId> missing;
  for (const DocId d : out.docs)
    if (original_of(d) == d) missing.push_back(d);
  out.read = missing.size();
  out.copies = 0;
  out.shared_before = out.sets.shared_docs();
  if (!missing.empty()) read_sets_into(missing, false, out.sets, out.copies);
}

// The group read by read_group becomes the run's: its sets are exchanged with the store's (whose
// last group's are let go), the copies of earlier texts share their originals' sets, and the
// reading is counted as read_missing_sets counts it.
void Pipeline::Impl::take_group(GroupSets& in) {
  sets_.swap_sets(in.sets);
  stats_.verify_docs += in.read;
  stats_.verify_copies += in.copies;
  share_copies(in.docs, in.shared_before);
}

}  // namespace neardup
