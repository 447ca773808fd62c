// The pipeline: its run composed of the stages in this folder, and its public face.
#include "pipeline/impl.h"
#include "internal/free_heap.h"

namespace neardup {

Pipeline::Impl::Impl(const std::vector<std::string>& inputs, RunOptions options)
    : options_(std::move(options)), spec_(options_.spec.resolved()) {
  if (inputs.empty()) throw UsageError("no input given; pass files, directories or - for stdin");
  inputs_ = std::make_unique<io::InputSet>(inputs, options_.reader);
  if (inputs_->sources().empty()) throw FormatError("the inputs hold no files (empty directories?); check the paths");
  init();
}

Pipeline::Impl::Impl(std::vector<io::Document> documents, RunOptions options)
    : options_(std::move(options)), spec_(options_.spec.resolved()) {
  inputs_ = std::make_unique<io::InputSet>(std::move(documents));
  init();
}

void Pipeline::Impl::init() {
  threads_ = internal::resolve_threads(options_.tuning.threads);
  apply_keep(options_, *inputs_);
}


std::span<const SigValue> Pipeline::Impl::signatures() const noexcept { return sketches_.signatures(); }

bool Pipeline::Impl::share_band(DocId a, DocId b, size_t k) const noexcept {
  // Spilled or dropped, the keys are gone and the buckets answer; a copy of a text (kept out of
  // them) has its original's keys, so it shares what its original shares, and every band with it.
  if (sketches_.by_buckets) {
    a = original_of(a);
    b = original_of(b);
    if (a == b) return true;
  }
  return sketches_.share_band(a, b, k, spec_.lsh);
}

const std::vector<ScoredPair>& Pipeline::Impl::pairs() const {
  // Refused whenever an exact join may list the pairs as they are taken (LSH with exact
  // verification, the exact method), whether this run's data made one or not: a program that
  // worked on a small corpus must not fail on a larger one.
  const bool joins_possible = spec_.method == SketchMethod::Exact || (uses_signatures(spec_.method) && spec_.verify == VerifyMode::Exact);
  if (mode_ == Mode::Pairs && options_.tuning.stream_pairs && joins_possible && options_.measure == Measure::Jaccard)
    throw UsageError("the pairs of this run are not held (RunTuning::stream_pairs); take them with each_pair(), or set stream_pairs to false");
  throw_if_pairs_dropped();
  return pairs_;
}

void Pipeline::Impl::throw_if_not_clustered() const {
  if (!clusters_wanted())
    throw UsageError("a pairs run without RunTuning::cluster_pairs does not cluster its documents; set it to have their clusters");
}

void Pipeline::Impl::throw_if_pairs_dropped() const {
  if (pairs_dropped_)
    throw UsageError("a dedup that spills its state (RunTuning::spill_documents, or a memory limit below its expected peak) "
                     "holds no verified pair; its clustering is the result, or run it without spilling");
}

std::string_view Pipeline::Impl::id(DocId doc) const noexcept {
  return docs_.id(doc);
}

// After the first pass, two serial checks of its tables, one while the other runs (1 million
// short documents: 0.015 and 0.045 s): that no id repeats, and which texts copy an earlier one
// (where the run tells copies: SketchLayout::copies). Neither writes what the other reads; an
// error of the id check is reported first, as if it had run alone.
void Pipeline::Impl::check_ids_and_find_copies() {
  const auto t = Clock::now();
  std::exception_ptr failed[2];
  internal::parallel_for(copies_told_ ? 2 : 1, threads_, [&](size_t i, size_t) {
    try {
      if (i == 0)
        check_duplicate_ids();
      else
        find_text_copies();
    } catch (...) {
      failed[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  stats_.times.pass1 += seconds_since(t);
}

void Pipeline::Impl::run(Mode mode) {
  const ThreadPool::Use use(options_.tuning.pool);
  const auto t_start = Clock::now();
  if (options_.top > 0 && (mode != Mode::Pairs || spec_.method != SketchMethod::BottomK))
    throw UsageError(NEARDUP_OPT("top") " applies to pairs with " NEARDUP_OPT_IS("method", "bottomk") " only");
  const bool containment = options_.measure == Measure::Containment;
  if (containment && (mode != Mode::Pairs || spec_.method != SketchMethod::Exact))
    throw UsageError(NEARDUP_OPT_IS("measure", "containment") " applies to pairs with " NEARDUP_OPT_IS("method", "exact") " only: it is found by the exact join");
  mode_ = mode;
  clustering_ = Clustering{};
  pairs_dropped_ = false;
  choose_spill();
  sketch_pass();
  // A pass's large records leave free blocks in the heap once their buffers are let go (glibc
  // raises its mmap threshold after freeing a large block, so later blocks of up to 32 MiB come
  // from the heap), which would otherwise stay resident through verification, the run's peak.
  if (options_.tuning.release_memory_after_first_pass) internal::release_free_memory();
  check_ids_and_find_copies();
  rank_ = keep_ranks();
  docs_.drop_pages();  // a spilled table's pages read by the first pass, the id check and the ranks
  if (spec_.method == SketchMethod::BottomK)
    find_pairs_bottomk();
  else if (spec_.method == SketchMethod::SimHash)
    find_pairs_simhash();
  else if (containment)
    find_pairs_containment();
  else if (spec_.method == SketchMethod::Exact)
    find_pairs_exact();
  else
    find_pairs_lsh();
  stats_.verified = pairs_dropped_ ? dropped_pairs_ : pairs_.size();

  auto t = Clock::now();
  if (clusters_wanted()) cluster_all();
  std::vector<uint32_t>().swap(rank_);
  stats_.times.cluster = seconds_since(t);

  // The bottomk join and the SimHash tables already found every pair, and so did LSH with
  // estimates; with exact verification the pairs found so far only connect the clusters, and the
  // exact join lists them all (here, or as they are written).
  const bool expand = mode == Mode::Pairs && !joins_.empty();
  expand_on_write_ = expand && options_.tuning.stream_pairs;
  if (expand && !expand_on_write_) {
    t = Clock::now();
    std::vector<ScoredPair> all;
    expand_pairs([&](std::span<const ScoredPair> chunk) { all.insert(all.end(), chunk.begin(), chunk.end()); });
    pairs_ = std::move(all);
    stats_.times.verify += seconds_since(t);
  }
  stats_.pairs = pairs_.size();  // with stream_pairs, write_pairs counts them
  stats_.seconds = seconds_since(t_start);
}

// ---- The public face: each call forwards to the run's state ----

Pipeline::Pipeline(const std::vector<std::string>& inputs, RunOptions options)
    : impl_(std::make_unique<Impl>(inputs, std::move(options))) {}
Pipeline::Pipeline(std::vector<io::Document> documents, RunOptions options)
    : impl_(std::make_unique<Impl>(std::move(documents), std::move(options))) {}
Pipeline::~Pipeline() = default;
void Pipeline::run(Mode mode) { impl_->run(mode); }
MemoryEstimate Pipeline::estimate_memory(uint64_t sample_bytes) const { return impl_->estimate_memory(sample_bytes); }
const PipelineSpec& Pipeline::spec() const noexcept { return impl_->spec_; }
const RunStats& Pipeline::stats() const noexcept { return impl_->stats_; }
size_t Pipeline::size() const noexcept { return impl_->docs_.size(); }
std::string_view Pipeline::id(DocId doc) const noexcept { return impl_->id(doc); }
const std::vector<ScoredPair>& Pipeline::pairs() const { return impl_->pairs(); }
void Pipeline::each_pair(const std::function<void(std::span<const ScoredPair>)>& emit) { impl_->each_pair(emit); }
const Clustering& Pipeline::clustering() const {
  impl_->throw_if_not_clustered();
  return impl_->clustering_;
}
std::span<const double> Pipeline::removed_similarity() const {
  impl_->throw_if_not_clustered();
  return impl_->removed_similarity_;
}
double Pipeline::similarity(DocId a, DocId b) const {
  const SetStore& store = impl_->sets_;
  if (store.released() && store.sets() && !(store.sets()->has(a) && store.sets()->has(b)))
    throw UsageError("the shingle sets of this run were let go once verified; set RunTuning::keep_sets to ask for similarities after the run");
  return impl_->similarity(a, b);
}
std::span<const SigValue> Pipeline::signatures() const noexcept { return impl_->signatures(); }
const Fingerprints& Pipeline::fingerprints() const noexcept { return impl_->sketches_.fps; }
std::span<const uint64_t> Pipeline::simhashes() const noexcept { return impl_->sketches_.simhashes; }
const io::InputSet& Pipeline::inputs() const noexcept { return *impl_->inputs_; }
std::vector<std::string> Pipeline::texts(std::span<const DocId> docs) const { return impl_->texts(docs); }
bool Pipeline::share_band(DocId a, DocId b) const {
  if (!uses_signatures(impl_->spec_.method) || a >= size() || b >= size()) return false;
  if (impl_->sketches_.index_per_group)
    throw UsageError("a dedup whose band keys spilled indexes its buckets one verification group at a time; "
                     "set RunTuning::keep_sets to keep the whole index for share_band()");
  return impl_->share_band(a, b, static_cast<size_t>(impl_->spec_.num_perm));
}
int64_t Pipeline::source_of(DocId doc) const noexcept {
  const DocumentTable& t = impl_->docs_;
  return t.has_positions() && doc < t.size() ? static_cast<int64_t>(t.pos(doc).source) : -1;
}
uint64_t Pipeline::state_bytes() const noexcept { return impl_->state_bytes(); }
void Pipeline::write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also) { impl_->write_pairs(out, also); }
void Pipeline::write_kept(io::AtomicFile& out) { impl_->write_kept(out); }
void Pipeline::write_kept(std::span<io::AtomicFile* const> outs) { impl_->write_kept(outs); }
void Pipeline::run_dedup(io::AtomicFile& out) { impl_->run_dedup(impl_->every_source_to(out)); }
void Pipeline::run_dedup(std::span<io::AtomicFile* const> outs) { impl_->run_dedup(outs); }
void Pipeline::write_removed(io::AtomicFile& out) const { impl_->write_removed(out); }
void Pipeline::write_clusters(io::AtomicFile& out) const { impl_->write_clusters(out); }

}  // namespace neardup
