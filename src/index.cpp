#include "neardup/index.h"
#include "io/retry.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "index_file.h"
#include "internal/flat_multimap.h"
#include "internal/fuzzing.h"
#include "internal/hash.h"
#include "internal/parallel.h"
#include "internal/sorted_merge.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"

namespace neardup {

namespace {

bool is_empty_sig(std::span<const SigValue> sig) noexcept {
  return std::all_of(sig.begin(), sig.end(), [](SigValue v) { return v == kEmptySigValue; });
}

}  // namespace

// ---- Sketching ----

IndexSketcher::IndexSketcher(const PipelineSpec& spec) : shingler_(spec.shingle), hasher_(spec) {}

void IndexSketcher::sketch(std::string_view text, IndexSketch& out) {
  out.set = shingler_.shingle_set(text);
  out.sig.resize(static_cast<size_t>(hasher_.num_perm()));
  hasher_.sketch(out.set, out.sig);
}

// ---- The mapping ----

struct NearDupIndex::Mapping {
  explicit Mapping(const std::string& path) : file(path) {}
  internal::MappedIndexFile file;
};

struct NearDupIndex::PendingBands {
  std::vector<internal::FlatMultimap> bands;
  std::vector<uint64_t> keys;  // scratch for insert
};

NearDupIndex::NearDupIndex(const PipelineSpec& spec) : spec_(spec.resolved()), pending_bands_(std::make_unique<PendingBands>()) {
  if (!uses_signatures(spec_.method))
    throw UsageError("a persistent index uses " NEARDUP_OPT_IS("method", "minhash") " or oph (LSH bands); bottomk and simhash are batch-only here");
  num_perm_ = static_cast<size_t>(spec_.num_perm);
  pending_bands_->bands.resize(static_cast<size_t>(spec_.lsh.bands));
}

NearDupIndex::~NearDupIndex() = default;

std::unique_ptr<NearDupIndex> NearDupIndex::open(const std::string& path, bool pending_log_ok) {
  auto map = std::make_unique<Mapping>(path);
  const internal::IndexFileContents& c = map->file.contents();
  std::unique_ptr<NearDupIndex> idx;
  try {  // a spec that parses may still be refused when resolved (found by fuzz_index)
    idx = std::make_unique<NearDupIndex>(PipelineSpec::parse(c.spec));
  } catch (const Error& e) {
    internal::damaged_index(path, std::string("bad parameters: ") + e.what());
  }
  if (c.version == internal::kMinHashV1IndexVersion && idx->spec_.method == SketchMethod::MinHash)
    throw FormatError("a " NEARDUP_OPT_IS("method", "minhash") " index of format version 1, whose signatures used the MinHash "
                      "definition before version 2 (minhash.h); rebuild it with 'neardup index create' and 'add', "
                      "or keep the neardup that made it", ErrorPlace{path});
  if (static_cast<uint32_t>(idx->spec_.num_perm) != c.num_perm || static_cast<uint32_t>(idx->spec_.lsh.bands) != c.bands ||
      static_cast<uint32_t>(idx->spec_.lsh.rows) != c.rows || (idx->spec_.verify == VerifyMode::Exact) != c.has_sets)
    internal::damaged_index(path, "parameters disagree with the spec '" + c.spec + "'");
  idx->base_n_ = c.documents;
  idx->id_ends_ = c.id_ends;
  idx->id_blob_ = c.id_blob;
  idx->sigs_ = c.sigs;
  idx->set_ends_ = c.set_ends;
  idx->set_sums_ = c.set_sums;
  idx->set_values_ = c.set_values;
  idx->band_keys_ = c.band_keys;
  idx->band_docs_ = c.band_docs;
  idx->live_ = c.documents;
  idx->identity_ = c.identity;
  idx->map_ = std::move(map);
  if (!pending_log_ok) {
    if (const uint64_t pending = internal::unfolded_log_bytes(path, idx->identity_)) {
      // Served now (the service holds the lock and folds its log as it ends), or left by a
      // service that did not finish.
      const std::string holder = IndexLock::holder(path);
      if (!holder.empty())
        throw IoError("the index is served by " + holder + ", whose log " + internal::log_path(path) + " holds " +
                          std::to_string(pending) + " bytes of changes not yet in the file; ask the service (POST "
                          "/v1/query), or stop it (it folds its log as it ends) and try again",
                      ErrorPlace{path});
      throw FormatError("its log " + internal::log_path(path) + " holds " + std::to_string(pending) +
                            " bytes of changes not yet folded into it (a 'neardup serve' that did not finish); fold them "
                            "with 'neardup index fold " + path + "'",
                        ErrorPlace{path});
    }
  }
  return idx;
}

std::string_view NearDupIndex::id(DocId d) const noexcept {
  if (d >= base_n_) return pending_ids_[d - base_n_];
  const uint64_t start = d ? id_ends_[d - 1] : 0;
  return id_blob_.substr(start, id_ends_[d] - start);
}

std::span<const SigValue> NearDupIndex::sig_of(DocId d) const noexcept {
  if (d >= base_n_) return std::span<const SigValue>(pending_sigs_).subspan((d - base_n_) * num_perm_, num_perm_);
  return sigs_.subspan(static_cast<size_t>(d) * num_perm_, num_perm_);
}

std::span<const ShingleHash> NearDupIndex::set_of(DocId d) const {
  if (d >= base_n_) return pending_sets_[d - base_n_];
  const uint64_t start = d ? set_ends_[d - 1] : 0;
  const auto s = set_values_.subspan(start, set_ends_[d] - start);
  if (internal::index_checksum_mismatch(set_sums_[d], s.data(), s.size_bytes()))
    throw FormatError("index: the shingle set of document '" + std::string(id(d)) +
                      "' fails its checksum; the index file is damaged (rebuild it)");
  return s;
}

void NearDupIndex::query(const IndexSketch& q, double threshold, std::vector<IndexMatch>& out) const {
  out.clear();
  if (q.set.empty()) return;  // an empty document is never similar to anything
  const int bands = spec_.lsh.bands;
  std::vector<DocId> cand;
  for (int b = 0; b < bands; ++b) {
    const uint64_t key = signature_band_key(q.sig, b, spec_.lsh, spec_.shingle.seed);
    if (base_n_) {
      const auto keys = band_keys_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
      const auto [lo, hi] = std::equal_range(keys.begin(), keys.end(), key);
      const auto docs = band_docs_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
      for (auto it = lo; it != hi; ++it) cand.push_back(docs[static_cast<size_t>(it - keys.begin())]);
    }
    pending_bands_->bands[b].for_each(key, [&](DocId d) { cand.push_back(d); });
  }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
  for (const DocId d : cand) {
    if (removed(d) || is_empty_sig(sig_of(d))) continue;
    const double s = spec_.verify == VerifyMode::Exact ? jaccard(q.set, set_of(d)) : estimate_jaccard(q.sig, sig_of(d));
    if (s + kSimilarityEpsilon >= threshold) out.push_back({d, s});
  }
  std::sort(out.begin(), out.end(), [](const IndexMatch& a, const IndexMatch& b) {
    return a.similarity != b.similarity ? a.similarity > b.similarity : a.doc < b.doc;
  });
}

// Built once, on the first call from any thread: queries (contains) are documented as safe from
// many threads at once, and a lazily filled map without the once-flag was a data race.
void NearDupIndex::build_id_map() const {
  std::call_once(id_map_once_, [this] {
    id_map_.reserve(slots());
    for (DocId d = 0; d < slots(); ++d)
      if (!removed(d)) id_map_.emplace(id(d), d);
    id_map_built_.store(true, std::memory_order_release);
  });
}

bool NearDupIndex::contains(std::string_view id) const {
  build_id_map();
  return id_map_.count(id) != 0;
}

DocId NearDupIndex::insert(std::string_view doc_id, IndexSketch sketch) {
  if (sketch.sig.size() != num_perm_) throw UsageError("index insert: signature of the wrong length");
  const auto d = static_cast<DocId>(slots());
  if (slots() >= UINT32_MAX) throw UsageError("index: more than 2^32 - 1 documents");
  pending_ids_.emplace_back(doc_id);
  pending_sigs_.insert(pending_sigs_.end(), sketch.sig.begin(), sketch.sig.end());
  pending_sets_.push_back(spec_.verify == VerifyMode::Exact ? std::move(sketch.set) : std::vector<ShingleHash>{});
  // Empty documents (all-0xFFFFFFFF signatures) would share every band with each other: they
  // are stored but never bucketed, as in the batch pipeline.
  if (!is_empty_sig(sketch.sig)) {
    // All keys first, their slots prefetched, then the inserts: the bands' cache misses overlap.
    auto& tables = pending_bands_->bands;
    auto& keys = pending_bands_->keys;
    const int bands = spec_.lsh.bands;
    keys.resize(static_cast<size_t>(bands));
    for (int b = 0; b < bands; ++b) {
      keys[b] = signature_band_key(sketch.sig, b, spec_.lsh, spec_.shingle.seed);
      tables[b].prefetch(keys[b]);
    }
    for (int b = 0; b < bands; ++b) tables[b].insert(keys[b], d);
  }
  if (!removed_.empty()) removed_.push_back(0);
  ++live_;
  if (id_map_built_.load(std::memory_order_acquire)) id_map_.emplace(pending_ids_.back(), d);
  return d;
}

size_t NearDupIndex::remove(std::span<const std::string> ids) {
  build_id_map();
  size_t found = 0;
  for (const auto& s : ids) {
    const auto it = id_map_.find(s);
    if (it == id_map_.end()) continue;
    if (removed_.empty()) removed_.assign(slots(), 0);
    removed_[it->second] = 1;
    id_map_.erase(it);
    --live_;
    ++found;
  }
  return found;
}

std::unique_ptr<io::AtomicFile> NearDupIndex::write_file(const std::string& path) const {
  const bool sets = spec_.verify == VerifyMode::Exact;
  const int bands = spec_.lsh.bands;
  std::vector<DocId> keep;  // old slot of each saved document
  for (DocId d = 0; d < slots(); ++d)
    if (!removed(d)) keep.push_back(d);
  const uint64_t n = keep.size();
  std::vector<uint64_t> id_ends(n), set_ends(sets ? n : 0), set_sums(sets ? n : 0);
  std::string id_blob;
  std::vector<SigValue> sigs(n * num_perm_);
  std::vector<ShingleHash> values;
  std::vector<uint64_t> band_keys(n * bands);
  std::vector<DocId> band_docs(n * bands);
  for (uint64_t i = 0; i < n; ++i) {
    const DocId d = keep[i];
    id_blob += id(d);
    id_ends[i] = id_blob.size();
    const auto sig = sig_of(d);
    std::copy(sig.begin(), sig.end(), sigs.begin() + static_cast<std::ptrdiff_t>(i * num_perm_));
    if (sets) {
      const auto s = set_of(d);
      values.insert(values.end(), s.begin(), s.end());
      set_ends[i] = values.size();
      set_sums[i] = internal::index_checksum(s.data(), s.size_bytes());
    }
  }
  // Each band: (key, doc) sorted by key, then doc. Empty documents are listed too (a regular
  // layout); queries skip them (query() never pairs an empty document).
  std::vector<std::pair<uint64_t, DocId>> tmp(n);
  for (int b = 0; b < bands; ++b) {
    for (uint64_t i = 0; i < n; ++i) {
      const auto sig = std::span<const SigValue>(sigs).subspan(i * num_perm_, num_perm_);
      tmp[i] = {signature_band_key(sig, b, spec_.lsh, spec_.shingle.seed), static_cast<DocId>(i)};
    }
    std::sort(tmp.begin(), tmp.end());
    for (uint64_t i = 0; i < n; ++i) {
      band_keys[b * n + i] = tmp[i].first;
      band_docs[b * n + i] = tmp[i].second;
    }
  }
  internal::IndexFileContents c;
  c.spec = spec_.to_string();
  c.documents = n;
  c.num_perm = static_cast<uint32_t>(num_perm_);
  c.bands = static_cast<uint32_t>(bands);
  c.rows = static_cast<uint32_t>(spec_.lsh.rows);
  c.has_sets = sets;
  c.id_ends = id_ends;
  c.id_blob = id_blob;
  c.sigs = sigs;
  c.set_ends = set_ends;
  c.set_sums = set_sums;
  c.set_values = values;
  c.band_keys = band_keys;
  c.band_docs = band_docs;
  auto f = std::make_unique<io::AtomicFile>(path);
  internal::write_index_file(*f, c);
  f->finish();
  return f;
}

void NearDupIndex::save(const std::string& path) const { write_file(path)->commit(); }

IndexStats NearDupIndex::stats() const {
  IndexStats s;
  s.documents = live_;
  s.file_bytes = map_ ? map_->file.bytes() : 0;
  s.id_bytes = id_blob_.size() + id_ends_.size_bytes();
  s.signature_bytes = sigs_.size_bytes();
  s.band_bytes = band_keys_.size_bytes() + band_docs_.size_bytes();
  s.set_bytes = set_values_.size_bytes() + set_ends_.size_bytes() + set_sums_.size_bytes();
  s.shingles = set_values_.size();
  for (int b = 0; b < spec_.lsh.bands && base_n_; ++b) {
    const auto keys = band_keys_.subspan(static_cast<size_t>(b) * base_n_, base_n_);
    for (size_t i = 0; i < keys.size();) {
      size_t j = i + 1;
      while (j < keys.size() && keys[j] == keys[i]) ++j;
      s.largest_bucket = std::max<uint64_t>(s.largest_bucket, j - i);
      i = j;
    }
  }
  return s;
}

WalkStats index_walk(NearDupIndex& index, const io::InputSet& inputs, const io::ReaderOptions& reader,
                     const WalkOptions& options, const std::function<void(const WalkRecord&)>& fn) {
  constexpr size_t kBatch = 1024;
  const int threads = internal::resolve_threads(options.threads);
  std::vector<IndexSketcher> sketchers;
  for (int t = 0; t < threads; ++t) sketchers.emplace_back(index.spec());
  io::RecordReader rr(inputs, reader);
  struct Owned {
    std::string id, text, raw;
    size_t source;
    uint64_t line;
  };
  std::vector<Owned> batch;
  std::vector<IndexSketch> sketches(kBatch);
  std::vector<IndexMatch> matches;
  const auto ask_for = [&](std::string_view id) {
    return IndexQuery{options.kind, options.threshold, options.top, options.skip_same_id ? id : std::string_view()};
  };
  // A walk that only asks (no insertion) asks for a whole batch at once, on every thread; an
  // exact search is built first, with every thread, not by the first of those queries.
  const bool ask_batch = !options.insert_new && options.threshold <= 1.0;
  if (ask_batch && options.kind != IndexQuery::Kind::Similar) index.build_set_search();
  std::vector<std::vector<IndexMatch>> asked;
  WalkStats st;
  io::Record r;
  bool more = true;
  while (more) {
    batch.clear();
    while (batch.size() < kBatch && (more = rr.next(r)))
      batch.push_back({std::string(r.id), std::string(r.text), std::string(r.raw), r.source, r.line});
    internal::parallel_for(batch.size(), threads, [&](size_t i, size_t t) { sketchers[t].sketch(batch[i].text, sketches[i]); });
    if (ask_batch) {
      asked.resize(batch.size());
      internal::parallel_for(batch.size(), threads, [&](size_t i, size_t) { index.search(sketches[i], ask_for(batch[i].id), asked[i]); });
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      Owned& b = batch[i];
      WalkRecord w;
      w.record.id = b.id;
      w.record.text = b.text;
      w.record.raw = b.raw;
      w.record.source = b.source;
      w.record.line = b.line;
      ++st.documents;
      if (sketches[i].set.empty()) ++st.empty;
      if (ask_batch)
        matches.swap(asked[i]);
      else if (options.threshold <= 1.0)
        index.search(sketches[i], ask_for(b.id), matches);
      else
        matches.clear();  // nothing can be that similar: add without querying
      if (!matches.empty()) {
        w.matches = matches;
        ++st.duplicates;
      } else if (options.insert_new) {
        if (index.contains(b.id)) {
          switch (options.on_duplicate_id) {
            case OnDuplicateId::Error:
              throw FormatError(inputs.sources()[b.source].display + (b.line ? ":" + std::to_string(b.line) : std::string()) +
                                ": id '" + b.id +
                                "' is already in the index; remove it with 'neardup index remove', or pass "
                                NEARDUP_OPT_IS("on_duplicate_id", "skip") " or replace");
            case OnDuplicateId::Skip:
              w.id_skipped = true;
              ++st.id_skipped;
              break;
            case OnDuplicateId::Replace:
              index.remove(std::span<const std::string>(&b.id, 1));
              ++st.replaced;
              break;
          }
        }
        if (!w.id_skipped) {
          index.insert(b.id, std::move(sketches[i]));
          w.inserted = true;
          ++st.inserted;
        }
      }
      fn(w);
    }
  }
  st.reader = rr.stats();
  if (st.documents == 0 && st.reader.skipped > 0)
    throw FormatError("every record was bad (" + std::to_string(st.reader.skipped) + " skipped, the first: " +
                      st.reader.first_skips.front() + "); check " NEARDUP_OPT("text_field") ", " NEARDUP_OPT("format") " and the inputs");
  return st;
}

std::unique_ptr<NearDupIndex> NearDupIndex::open_for_update(const std::string& path, const LockWait& wait, bool pending_log_ok) {
  auto lock = std::make_unique<IndexLock>(path, wait);
  auto idx = open(path, pending_log_ok);
  idx->lock_ = std::move(lock);
  idx->update_path_ = path;
  return idx;
}

std::unique_ptr<NearDupIndex> NearDupIndex::create(const std::string& path, const PipelineSpec& spec, const LockWait& wait) {
  auto lock = std::make_unique<IndexLock>(path, wait);
  auto idx = std::make_unique<NearDupIndex>(spec);
  idx->save(path);
  // A log left by a service on the index replaced here describes the old index, not this one.
  ::unlink(internal::log_path(path).c_str());
  idx->lock_ = std::move(lock);
  idx->update_path_ = path;
  return idx;
}

std::unique_ptr<NearDupIndex> NearDupIndex::save_and_reopen() {
  save();
  auto fresh = open(update_path_, /*pending_log_ok=*/true);
  fresh->take_update_lock(*this);
  return fresh;
}

void NearDupIndex::take_update_lock(NearDupIndex& from) noexcept {
  lock_ = std::move(from.lock_);
  update_path_ = std::move(from.update_path_);
}

void NearDupIndex::verify() const {
  if (spec_.verify != VerifyMode::Exact) return;
  for (DocId d = 0; d < base_n_; ++d) (void)set_of(d);
}

std::unique_ptr<io::AtomicFile> NearDupIndex::write_file() const {
  if (!lock_) throw UsageError("this index was not opened for update (NearDupIndex::open_for_update); save it with save(path)");
  return write_file(update_path_);
}

void NearDupIndex::save() const { write_file()->commit(); }

namespace {

// This process's command line, its arguments joined by spaces (at most 200 bytes): what the lock
// file says of its holder.
std::string own_command_line() {
  std::string cmd;
  if (std::FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[256];
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    cmd.assign(buf, n);
    while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
    for (char& c : cmd)
      if (c == '\0' || c == '\n' || c == '\t') c = ' ';
    if (const size_t slash = cmd.find_last_of('/', cmd.find(' ')); slash != std::string::npos) cmd.erase(0, slash + 1);
    if (cmd.size() > 200) cmd.resize(200);
  }
  return cmd;
}

// The holder as its lock file names it: "process PID (COMMAND)", or "this process (...)";
// `self` says whether it is this process.
std::string describe_holder(int fd, bool* self = nullptr) {
  char buf[512];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  const std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  const size_t space = text.find(' ');
  const long pid = std::strtol(text.c_str(), nullptr, 10);
  // A holder that ended without releasing the lock's text (kill -9), with the lock now held by
  // another program, is not named.
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) return "another process";
  const std::string cmd = space == std::string::npos ? std::string() : " (" + text.substr(space + 1) + ")";
  if (self) *self = pid == ::getpid();
  if (pid == ::getpid()) return "this process" + cmd + ", through another open index";
  return "process " + std::to_string(pid) + cmd;
}

}  // namespace

std::string IndexLock::holder(const std::string& index_path) {
  const int fd = io::retry_eintr([&] { return ::open((index_path + ".lock").c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) return "";
  // A lock of our own would be released by closing this descriptor: flock's locks belong to the
  // open file, so a second one of this process conflicts with it like another process's.
  std::string who;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) who = describe_holder(fd);
  ::close(fd);
  return who;
}

IndexLock::IndexLock(const std::string& index_path, const LockWait& wait) {
  const std::string p = index_path + ".lock";
  fd_ = io::retry_eintr([&] { return ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666); });
  if (fd_ < 0) throw IoError(std::string("cannot create the index lock file: ") + std::strerror(errno), ErrorPlace{p});
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) break;
    const int e = errno;
    if (e == EINTR) continue;
    if (e != EWOULDBLOCK) {
      ::close(fd_);
      throw IoError(std::string("cannot lock the index: ") + std::strerror(e), ErrorPlace{p});
    }
    bool self = false;
    const std::string who = describe_holder(fd_, &self);
    if (!wait.wait) {
      ::close(fd_);
      throw IoError("the index is being changed by " + who +
                        (self ? "; close that index first (only one may be open for update)"
                              : "; stop it or let it finish (the commands that change an index wait for it with --wait; "
                                "Python with wait=True)"),
                    ErrorPlace{index_path});
    }
    if (wait.waiting) {
      try {
        wait.waiting(who);
      } catch (...) {
        ::close(fd_);
        throw;
      }
    }
    ::usleep(100 * 1000);
  }
  // Who holds it now, for whoever finds it taken.
  const std::string me = std::to_string(::getpid()) + " " + own_command_line();
  // Best effort: only the message of a process that finds the lock taken depends on it.
  if (io::retry_eintr([&] { return ::ftruncate(fd_, 0); }) == 0)
    (void)!io::retry_eintr([&] { return ::pwrite(fd_, me.data(), me.size(), 0); });
}

IndexLock::~IndexLock() {
  // The holder's text goes with the lock, so that it never names a process that let it go.
  if (fd_ >= 0) {
    (void)!io::retry_eintr([&] { return ::ftruncate(fd_, 0); });
    ::close(fd_);
  }
}

}  // namespace neardup
