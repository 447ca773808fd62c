#include "neardup/pipeline.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "internal/parallel.h"
#include "neardup/allpairs.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"
#include "neardup/minhash.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"

namespace neardup {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A file's size and modification time (ns), or (0, 0) if it cannot be stat'ed: what tells that
// an input changed between the passes.
std::pair<uint64_t, int64_t> file_stamp(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return {0, 0};
  return {static_cast<uint64_t>(sb.st_size), static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec};
}

constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kBatchDocs = 2048;

// A batch of documents read on the reading thread and processed by one worker.
struct Batch {
  std::vector<DocId> docs;
  std::string text;               // concatenated texts
  std::vector<size_t> text_end;   // end offset of each text in `text`
  // Results
  std::vector<SigValue> sigs;
  Fingerprints fps;
  std::vector<uint64_t> simhashes;
  std::vector<uint8_t> empty;
  std::vector<std::vector<ShingleHash>> sets;
  uint64_t shingles = 0;
  double t_shingle = 0, t_sketch = 0;

  std::string_view text_of(size_t i) const {
    const size_t b = i == 0 ? 0 : text_end[i - 1];
    return std::string_view(text).substr(b, text_end[i] - b);
  }
  size_t size() const { return docs.size(); }
};

// Reads records on the calling thread, groups them into batches and hands them to `threads`
// workers. on_record(record, ordinal) returns whether the record goes into a batch (and may
// throw). process(batch) runs on a worker. Returns the processed batches in reading order.
template <class OnRecord, class Process>
std::vector<std::unique_ptr<Batch>> run_batches(io::RecordReader& reader, int threads, const char* stage,
                                                uint64_t total_bytes, const ProgressFn& progress,
                                                OnRecord&& on_record, Process&& process) {
  std::mutex mu;
  std::condition_variable not_empty, not_full;
  std::deque<Batch*> queue;
  bool closed = false;
  std::exception_ptr error;
  const size_t max_queued = static_cast<size_t>(threads) * 2;

  std::vector<std::unique_ptr<Batch>> batches;
  auto worker = [&] {
    for (;;) {
      Batch* b = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu);
        not_empty.wait(lock, [&] { return !queue.empty() || closed; });
        if (queue.empty()) return;
        b = queue.front();
        queue.pop_front();
      }
      not_full.notify_one();
      try {
        process(*b);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      b->text.clear();
      b->text.shrink_to_fit();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);

  auto push = [&](std::unique_ptr<Batch> b) {
    Batch* raw = b.get();
    batches.push_back(std::move(b));
    std::unique_lock<std::mutex> lock(mu);
    not_full.wait(lock, [&] { return queue.size() < max_queued || error; });
    queue.push_back(raw);
    not_empty.notify_one();
  };

  std::exception_ptr read_error;
  try {
    io::Record rec;
    uint64_t ordinal = 0;
    auto batch = std::make_unique<Batch>();
    while (reader.next(rec)) {
      const DocId doc = static_cast<DocId>(ordinal);
      if (ordinal >= 0xFFFFFFFFull)
        throw UsageError("more than 4,294,967,294 documents in one run; split the input");
      ++ordinal;
      if (!on_record(rec, doc)) continue;
      batch->docs.push_back(doc);
      batch->text.append(rec.text);
      batch->text_end.push_back(batch->text.size());
      if (batch->text.size() >= kBatchBytes || batch->docs.size() >= kBatchDocs) {
        push(std::move(batch));
        batch = std::make_unique<Batch>();
        if (progress) progress({stage, reader.bytes_read(), total_bytes, ordinal});
        std::lock_guard<std::mutex> lock(mu);
        if (error) break;
      }
    }
    if (!batch->docs.empty()) push(std::move(batch));
    if (progress) progress({stage, reader.bytes_read(), total_bytes, ordinal});
  } catch (...) {
    read_error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
  }
  not_empty.notify_all();
  for (auto& t : pool) t.join();
  if (read_error) std::rethrow_exception(read_error);
  if (error) std::rethrow_exception(error);
  return batches;
}

}  // namespace

Pipeline::Pipeline(const std::vector<std::string>& inputs, RunOptions options)
    : options_(std::move(options)), spec_(options_.spec.resolved()) {
  threads_ = options_.threads > 0 ? options_.threads : internal::hardware_threads();
  if (inputs.empty()) throw UsageError("no input given; pass files, directories or - for stdin");
  inputs_ = std::make_unique<io::InputSet>(inputs, options_.reader.format);
  if (inputs_->sources().empty()) throw FormatError("the inputs hold no files (empty directories?); check the paths");
}

Pipeline::~Pipeline() = default;

std::string_view Pipeline::id(DocId doc) const noexcept {
  const uint64_t b = doc == 0 ? 0 : id_end_[doc - 1];
  return std::string_view(id_blob_).substr(b, id_end_[doc] - b);
}

void Pipeline::sketch_pass() {
  const auto t0 = Clock::now();
  const bool bottomk = spec_.method == SketchMethod::BottomK;
  const bool simhash = spec_.method == SketchMethod::SimHash;
  const size_t k = uses_signatures(spec_.method) ? static_cast<size_t>(spec_.num_perm) : 0;
  std::optional<SignatureHasher> hasher;
  if (uses_signatures(spec_.method)) hasher.emplace(spec_);
  // Later passes find JSONL records by position (lines up to 4 GiB; sources up to 2^32).
  const bool by_position = inputs_->all_jsonl() && inputs_->sources().size() < UINT32_MAX;
  input_stamps_.clear();
  for (const auto& src : inputs_->sources()) input_stamps_.push_back(file_stamp(src.path));
  io::RecordReader reader(*inputs_, options_.reader);
  auto batches = run_batches(
      reader, threads_, "sketch", inputs_->total_bytes(), options_.progress,
      [&](const io::Record& r, DocId) {
        id_blob_.append(r.id);
        id_end_.push_back(id_blob_.size());
        lengths_.push_back(r.text.size());
        if (by_position) pos_.push_back({static_cast<uint32_t>(r.source), static_cast<uint32_t>(r.raw.size()), r.offset});
        return true;
      },
      [&](Batch& b) {
        thread_local std::vector<ShingleHash> sh;
        thread_local std::vector<SigValue> fp;
        Shingler shingler(spec_.shingle);
        BottomKSelector selector(bottomk ? spec_.sketch_size : 1);
        SimHasher simhasher(spec_.weights);
        b.sigs.resize(b.size() * k);
        if (simhash) b.simhashes.resize(b.size());
        b.empty.resize(b.size());
        for (size_t i = 0; i < b.size(); ++i) {
          const auto t1 = Clock::now();
          shingler.shingles(b.text_of(i), sh);
          const auto t2 = Clock::now();
          if (bottomk) {
            selector.add(sh);
            selector.finish(fp);
            b.fps.push_back(fp);
          } else if (simhash) {
            b.simhashes[i] = simhasher(sh);
          } else {
            hasher->sketch(sh, std::span<SigValue>(b.sigs).subspan(i * k, k));
          }
          b.t_sketch += seconds_since(t2);
          b.t_shingle += std::chrono::duration<double>(t2 - t1).count();
          b.shingles += sh.size();
          b.empty[i] = sh.empty();
        }
      });
  const size_t n = lengths_.size();
  sigs_.resize(n * k);
  if (simhash) simhashes_.resize(n);
  empty_.resize(n);
  size_t pos = 0;
  fps_ = Fingerprints{};
  fps_.size = spec_.sketch_size;
  for (auto& b : batches) {
    std::copy(b->sigs.begin(), b->sigs.end(), sigs_.begin() + pos * k);
    for (size_t i = 0; i < b->fps.count(); ++i) fps_.push_back(b->fps[i]);
    std::copy(b->simhashes.begin(), b->simhashes.end(), simhashes_.begin() + static_cast<ptrdiff_t>(pos));
    std::copy(b->empty.begin(), b->empty.end(), empty_.begin() + pos);
    pos += b->size();
    stats_.shingles += b->shingles;
    stats_.times.shingle += b->t_shingle;
    stats_.times.sketch += b->t_sketch;
    b.reset();
  }
  NEARDUP_ASSERT(pos == n);
  stats_.documents = n;
  stats_.empty = static_cast<uint64_t>(std::count(empty_.begin(), empty_.end(), 1));
  for (uint64_t l : lengths_) stats_.text_bytes += l;
  stats_.skipped = reader.stats().skipped;
  stats_.invalid_utf8 = reader.stats().invalid_utf8;
  stats_.skip_messages = reader.stats().first_skips;
  stats_.times.pass1 = seconds_since(t0);
}

void Pipeline::load_sets_pass(const std::vector<uint8_t>& needed) {
  sets_ = std::make_unique<ShingleSets>(lengths_.size());
  check_inputs_unchanged();
  io::RecordReader reader(*inputs_, options_.reader);
  // By position: only the needed records are read and parsed; the k-th record read is the
  // k-th needed document.
  std::vector<DocId> wanted;
  if (!pos_.empty()) {
    std::vector<io::RecordPos> at;
    for (DocId d = 0; d < needed.size(); ++d)
      if (needed[d]) {
        wanted.push_back(d);
        at.push_back(pos_[d]);
      }
    reader.select(std::move(at));
  }
  auto batches = run_batches(
      reader, threads_, "verify", inputs_->total_bytes(), options_.progress,
      [&](const io::Record& r, DocId ordinal) {
        if (pos_.empty()) {
          check_same_record(r, ordinal);
          return needed[ordinal] != 0;
        }
        if (r.text.size() != lengths_[wanted[ordinal]])
          throw IoError(inputs_->sources()[r.source].display + ": the record at byte " + std::to_string(r.offset) +
                        " changed while neardup was running; do not modify inputs during a run");
        return true;
      },
      [&](Batch& b) {
        Shingler shingler(spec_.shingle);
        b.sets.resize(b.size());
        for (size_t i = 0; i < b.size(); ++i) b.sets[i] = shingler.shingle_set(b.text_of(i));
      });
  for (auto& b : batches) {
    for (size_t i = 0; i < b->size(); ++i) sets_->set(pos_.empty() ? b->docs[i] : wanted[b->docs[i]], std::move(b->sets[i]));
    b.reset();
  }
  stats_.verify_docs = static_cast<uint64_t>(std::count(needed.begin(), needed.end(), 1));
}

Scorer Pipeline::scorer() const noexcept {
  Scorer s{spec_.verify, sets_.get(), sigs_, static_cast<size_t>(spec_.num_perm)};
  if (spec_.method == SketchMethod::BottomK) s.fingerprints = &fps_;
  if (spec_.method == SketchMethod::SimHash) s.simhashes = simhashes_;
  return s;
}

void Pipeline::check_same_record(const io::Record& r, DocId doc) const {
  if (doc >= lengths_.size() || r.id != id(doc))
    throw IoError(inputs_->sources()[r.source].display + ": the input changed while neardup was running (record " +
                  std::to_string(static_cast<uint64_t>(doc) + 1) +
                  " differs from the first read); do not modify inputs during a run");
}

void Pipeline::check_inputs_unchanged() const {
  const auto& sources = inputs_->sources();
  for (size_t i = 0; i < sources.size() && i < input_stamps_.size(); ++i) {
    if (file_stamp(sources[i].path) != input_stamps_[i])
      throw IoError(sources[i].display + ": the input changed while neardup was running (its size or modification time " +
                    "differs from the first read); do not modify inputs during a run");
  }
}

double Pipeline::similarity(DocId a, DocId b) const {
  return scorer()(std::min(a, b), std::max(a, b));
}

void Pipeline::expand_cluster_pairs() {
  // Adding edges inside clusters does not change them, so the clustering of the star edges
  // already holds the groups to expand.
  const size_t k = static_cast<size_t>(spec_.num_perm);
  const auto groups = cluster_members(clustering_);
  std::vector<DocPair> cand;
  for (const auto& g : groups)
    for (size_t x = 0; x < g.size(); ++x)
      for (size_t y = x + 1; y < g.size(); ++y)
        if (share_band(std::span<const SigValue>(sigs_).subspan(g[x] * k, k),
                       std::span<const SigValue>(sigs_).subspan(g[y] * k, k), spec_.lsh))
          cand.push_back({g[x], g[y]});
  std::sort(cand.begin(), cand.end());
  pairs_ = verify_pairs(cand, scorer(), spec_.threshold, threads_);
}

void Pipeline::verify_candidates(const std::vector<DocPair>& candidates, double threshold) {
  if (spec_.verify == VerifyMode::Exact && !candidates.empty()) {
    std::vector<uint8_t> needed(lengths_.size(), 0);
    for (const DocPair& p : candidates) needed[p.a] = needed[p.b] = 1;
    load_sets_pass(needed);
  }
  pairs_ = verify_pairs(candidates, scorer(), threshold, threads_);
}

void Pipeline::find_pairs_minhash() {
  auto t = Clock::now();
  CandidateStats cs;
  const std::vector<DocPair> candidates =
      lsh_candidates(sigs_, static_cast<size_t>(spec_.num_perm), empty_, spec_.lsh, spec_.shingle.seed, threads_, &cs);
  stats_.candidates = candidates.size();
  stats_.largest_bucket = cs.largest_bucket;
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  verify_candidates(candidates, spec_.threshold);
  stats_.times.verify = seconds_since(t);
}

void Pipeline::find_pairs_bottomk() {
  // The join is exact over the fingerprints; with exact verification it runs at an estimate
  // threshold lowered by the estimator's error, so that true pairs near t are not lost.
  auto t = Clock::now();
  const bool exact = spec_.verify == VerifyMode::Exact;
  const int n = spec_.sketch_size;
  std::vector<ScoredPair> found;
  if (options_.top > 0) {
    found = top_pairs(fps_, options_.top, PairScore::BottomKEstimate, threads_);
    // Exact ranking: the M pairs found have true Jaccard >= j_low (bottomk_lower_bound of the
    // M-th estimate), so the true M-th best does too, and every pair of the true top M has an
    // estimate at or above the screen threshold of j_low.
    if (exact && !found.empty())
      found = pairs_above(fps_, bottomk_screen_threshold(bottomk_lower_bound(found.back().similarity, n), n),
                          PairScore::BottomKEstimate, threads_);
  } else {
    found = pairs_above(fps_, exact ? bottomk_candidate_threshold(spec_.threshold, n) : spec_.threshold,
                        PairScore::BottomKEstimate, threads_);
  }
  stats_.candidates = found.size();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  if (exact) {
    std::vector<DocPair> candidates(found.size());
    for (size_t i = 0; i < found.size(); ++i) candidates[i] = {found[i].a, found[i].b};
    found.clear();
    found.shrink_to_fit();
    verify_candidates(candidates, options_.top > 0 ? std::numeric_limits<double>::min() : spec_.threshold);
  } else {
    pairs_ = std::move(found);
  }
  if (options_.top > 0) {
    std::sort(pairs_.begin(), pairs_.end(), better_pair);
    if (pairs_.size() > options_.top) pairs_.resize(options_.top);
  }
  stats_.times.verify = seconds_since(t);
}

void Pipeline::find_pairs_simhash() {
  // Every pair within the distance, by Manku's tables planned for this many fingerprints; each
  // pair is then scored by the verification (exact Jaccard, or 1 - d / 64).
  auto t = Clock::now();
  const uint64_t live = stats_.documents - stats_.empty;
  const SimHashPlan plan = plan_simhash_tables(spec_.hamming, std::max<uint64_t>(live, 1), SimHashWorkload::Batch);
  const std::vector<HammingPair> near = simhash_find_all(simhashes_, plan, threads_, empty_);
  stats_.candidates = near.size();
  stats_.times.lsh = seconds_since(t);
  t = Clock::now();
  std::vector<DocPair> candidates(near.size());
  for (size_t i = 0; i < near.size(); ++i) candidates[i] = {near[i].a, near[i].b};
  verify_candidates(candidates, spec_.threshold);
  stats_.times.verify = seconds_since(t);
}

void Pipeline::run(Mode mode) {
  const auto t_start = Clock::now();
  if (options_.top > 0 && (mode != Mode::Pairs || spec_.method != SketchMethod::BottomK))
    throw UsageError("--top applies to pairs with --method bottomk only");
  sketch_pass();
  if (spec_.method == SketchMethod::BottomK)
    find_pairs_bottomk();
  else if (spec_.method == SketchMethod::SimHash)
    find_pairs_simhash();
  else
    find_pairs_minhash();
  stats_.verified = pairs_.size();

  auto t = Clock::now();
  clustering_ = cluster_documents(lengths_.size(), pairs_, options_.keep, lengths_);
  stats_.clusters = clustering_.clusters;
  stats_.removed = clustering_.removed;
  stats_.times.cluster = seconds_since(t);

  // The bottomk join and the SimHash tables already found every pair; LSH found star edges only.
  if (mode == Mode::Pairs && uses_signatures(spec_.method)) {
    t = Clock::now();
    expand_cluster_pairs();
    stats_.times.verify += seconds_since(t);
  }
  stats_.pairs = pairs_.size();
  stats_.seconds = seconds_since(t_start);
}

void append_similarity(std::string& line, double s) {
  char buf[32];
  const int len = std::snprintf(buf, sizeof buf, "%.6f", s);
  line.append(buf, static_cast<size_t>(len));
}

void Pipeline::write_pairs(io::AtomicFile& out) const {
  std::string line;
  for (const ScoredPair& p : pairs_) {
    line.clear();
    line.append(id(p.a)).push_back('\t');
    line.append(id(p.b)).push_back('\t');
    append_similarity(line, p.similarity);
    if (spec_.method == SketchMethod::SimHash) {
      line.push_back('\t');
      line.append(std::to_string(hamming_distance(simhashes_[p.a], simhashes_[p.b])));
    }
    line.push_back('\n');
    out.write(line);
  }
}

void Pipeline::write_kept(io::AtomicFile& out) {
  const auto t = Clock::now();
  check_inputs_unchanged();
  if (!pos_.empty()) {
    // JSONL: the kept lines are copied by position, runs of consecutive kept lines at once,
    // without parsing them again (a plain file is copied in the kernel).
    const auto& sources = inputs_->sources();
    std::vector<io::ByteRange> ranges;
    uint64_t bytes_done = 0;
    size_t d = 0;
    const size_t n = pos_.size();
    for (uint32_t s = 0; s < sources.size(); ++s) {
      ranges.clear();
      for (; d < n && pos_[d].source == s; ++d) {
        if (!clustering_.kept(static_cast<DocId>(d))) continue;
        const uint64_t begin = pos_[d].offset, len = uint64_t{pos_[d].length} + 1;  // with its newline
        if (!ranges.empty() && ranges.back().offset + ranges.back().length == begin)
          ranges.back().length += len;
        else
          ranges.push_back({begin, len});
      }
      io::append_ranges(sources[s].path, sources[s].display, ranges, out);
      bytes_done += input_stamps_[s].first;
      if (options_.progress) options_.progress({"write", bytes_done, inputs_->total_bytes(), d});
    }
    stats_.times.write += seconds_since(t);
    return;
  }
  io::RecordReader reader(*inputs_, options_.reader);
  io::Record rec;
  uint64_t ordinal = 0;
  const uint64_t n = lengths_.size();
  while (reader.next(rec)) {
    const DocId doc = static_cast<DocId>(ordinal++);
    check_same_record(rec, doc);
    if (!clustering_.kept(doc)) continue;
    out.write(rec.raw);
    out.put('\n');
    if (options_.progress && (ordinal & 0x3FFF) == 0)
      options_.progress({"write", reader.bytes_read(), inputs_->total_bytes(), ordinal});
  }
  if (ordinal != n)
    throw IoError("the input changed while neardup was running (" + std::to_string(ordinal) + " records instead of " +
                  std::to_string(n) + "); do not modify inputs during a run");
  stats_.times.write += seconds_since(t);
}

void Pipeline::write_removed(io::AtomicFile& out) const {
  std::string line;
  for (DocId i = 0; i < lengths_.size(); ++i) {
    if (clustering_.kept(i)) continue;
    const DocId keeper = clustering_.keeper[i];
    line.clear();
    line.append(id(i)).push_back('\t');
    line.append(id(keeper)).push_back('\t');
    append_similarity(line, similarity(i, keeper));
    line.push_back('\n');
    out.write(line);
  }
}

void Pipeline::write_clusters(io::AtomicFile& out) const {
  const auto groups = cluster_members(clustering_);
  std::string line;
  for (size_t g = 0; g < groups.size(); ++g)
    for (DocId d : groups[g]) {
      line.clear();
      line.append(std::to_string(g)).push_back('\t');
      line.append(id(d)).push_back('\t');
      line.append(clustering_.kept(d) ? "kept" : "removed");
      line.push_back('\n');
      out.write(line);
    }
}

}  // namespace neardup
