// A persistent near-duplicate index (the online query-then-insert walk over LSH bands, kept across runs): MinHash
// signatures cut into LSH bands, the documents' ids and, with exact verification, their shingle
// sets. One file, described in docs/format.md:
//   * it describes itself: magic, format version, every parameter (the resolved pipeline spec),
//     the document count, an XXH3-64 checksum of the header and of every section;
//   * it opens by memory-mapping; the header and every section except the shingle values are
//     checked at open (the values carry one checksum per document, checked when the document is
//     verified), so opening costs O(documents), not O(shingles);
//   * every update writes a new file and renames it into place (io::AtomicFile), under an
//     exclusive lock on IDX.lock, so a crash or kill -9 leaves the previous index.
// Queries read the mapping and are safe from many threads while nothing is inserted; inserts
// and removals change the in-memory state, and save() writes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "neardup/io/reader.h"
#include "neardup/minhash.h"
#include "neardup/set_search.h"
#include "neardup/shingle.h"
#include "neardup/spec.h"
#include "neardup/types.h"

namespace neardup {
namespace io {
class AtomicFile;
}

/// Version 2 changed the MinHash definition (minhash.h); version 1 files of other methods are
/// the same and still read (and written back as version 2).
inline constexpr uint32_t kIndexFormatVersion = 2;

/// What a query asks of the index.
struct IndexQuery {
  enum class Kind {
    Similar,     ///< Jaccard >= threshold, through the LSH bands
    Containing,  ///< the indexed documents holding at least a fraction `threshold` of the query (exact)
    Top,         ///< the `top` indexed documents of highest Jaccard (exact)
  } kind = Kind::Similar;
  double threshold = 0.0;
  size_t top = 0;
  /// Leave out the live document with this id (a query's own), if any: top k then gives k others.
  std::string_view skip_id = {};
};

/// What the index needs of a document: its shingle set (sorted, distinct) and signature.
struct IndexSketch {
  std::vector<ShingleHash> set;
  std::vector<SigValue> sig;
};

/// Sketches documents the way an index does (not thread-safe: one per thread).
class IndexSketcher {
 public:
  explicit IndexSketcher(const PipelineSpec& spec);
  void sketch(std::string_view text, IndexSketch& out);

 private:
  Shingler shingler_;
  SignatureHasher hasher_;
};

struct IndexStats {
  uint64_t documents = 0;
  uint64_t file_bytes = 0;
  uint64_t id_bytes = 0, signature_bytes = 0, band_bytes = 0, set_bytes = 0;
  uint64_t shingles = 0;  ///< stored shingle values (exact verification)
  uint64_t largest_bucket = 0;  ///< the most documents sharing one band key
};

class IndexLock;

/// How to take an index's update lock that another process (or another open index of this
/// process) holds.
struct LockWait {
  /// false: refuse at once (IoError naming the holder); true: wait until it is free.
  bool wait = false;
  /// While waiting: called at once, then about every 100 ms, with the holder's description
  /// (IndexLock::holder). It may throw to stop waiting (an interrupted Python caller).
  std::function<void(const std::string& holder)> waiting;
};


class NearDupIndex {
 public:
  /// An empty index for `spec` (resolved; --method minhash only). Not yet on disk.
  explicit NearDupIndex(const PipelineSpec& spec);
  /// Opens `path`. Throws IoError if it cannot be read, FormatError (naming the file and what
  /// is wrong) if it is not an index, is of another format version, or is damaged.
  /// Refuses (FormatError) an index whose write-ahead log (LiveIndex, PATH.wal) holds changes
  /// not yet folded into it, unless `pending_log_ok`: without them it would be out of date.
  static std::unique_ptr<NearDupIndex> open(const std::string& path, bool pending_log_ok = false);
  /// Opens `path` to change it: takes the index's update lock (PATH.lock) and keeps it until the
  /// index is destroyed, so updates from several processes are serialised; save() then writes
  /// back to `path`. Throws as open(). An index locked by another process, or by another open
  /// index of this one, is refused at once (IoError naming the holder) unless `wait` says to wait.
  static std::unique_ptr<NearDupIndex> open_for_update(const std::string& path, const LockWait& wait = {}, bool pending_log_ok = false);
  /// Writes an empty index for `spec` at `path` (replacing any file there) under the update lock,
  /// and returns it open for update. The lock is taken as open_for_update takes it.
  static std::unique_ptr<NearDupIndex> create(const std::string& path, const PipelineSpec& spec, const LockWait& wait = {});
  ~NearDupIndex();
  NearDupIndex(const NearDupIndex&) = delete;
  NearDupIndex& operator=(const NearDupIndex&) = delete;

  const PipelineSpec& spec() const noexcept { return spec_; }
  /// The probability that the index's bands make a pair of similarity t a candidate (the
  /// S-curve, lsh_probability): what a query at threshold t finds of the pairs at t. Built for
  /// spec().threshold, it is lower below it, and falls fast.
  double recall_at(double t) const noexcept { return lsh_probability(t, spec_.lsh.bands, spec_.lsh.rows); }
  /// Live documents (inserted and not removed).
  size_t size() const noexcept { return live_; }
  /// Document slots (live or removed); DocIds are below this.
  size_t slots() const noexcept { return base_n_ + pending_ids_.size(); }
  bool removed(DocId d) const noexcept { return !removed_.empty() && removed_[d]; }
  std::string_view id(DocId d) const noexcept;

  /// The live documents sharing a band with q whose similarity (exact Jaccard with stored sets,
  /// or the signature estimate) is >= threshold, by decreasing similarity, then DocId. Throws
  /// FormatError if a stored set fails its checksum.
  void query(const IndexSketch& q, double threshold, std::vector<IndexMatch>& out) const;
  /// What `how` asks: query() for Similar; for Containing and Top the exact answers of SetSearch
  /// (set_search.h) over the stored sets, its inverted index built on the first such query and
  /// extended by the next one after every SegmentedSearch::kTail insertions. Throws UsageError
  /// for those two if the index keeps no sets (created with estimate verification).
  void search(const IndexSketch& q, const IndexQuery& how, std::vector<IndexMatch>& out) const;
  /// Whether a containment or top-k query has built the inverted index, and building it now
  /// (LiveIndex does before it swaps a folded index in, so that no query waits for it then).
  bool has_set_search() const;
  void build_set_search() const;
  /// The memory the inverted index of the exact searches takes (0 before the first such query).
  uint64_t set_search_bytes() const;

  /// Adds a document; returns its DocId. The id must not be live in the index already
  /// (contains() tells), which the caller checks so it can say what to do.
  DocId insert(std::string_view id, IndexSketch sketch);
  /// The live document with this id, if any.
  bool contains(std::string_view id) const;
  /// Removes the live documents with these ids; returns how many were found.
  size_t remove(std::span<const std::string> ids);

  /// Writes the index to `path` atomically (temporary file, fsync, rename); removed documents
  /// are dropped and the rest keep their order.
  void save(const std::string& path) const;
  /// Writes the index back to the path it was opened for update from. Throws UsageError if it
  /// was not opened for update.
  void save() const;
  /// The index written and synced to a temporary file beside `path` (or the path it was opened
  /// for update from), not yet in place: commit it with a run's other outputs
  /// (io::commit_together), so that none of them is replaced unless all are.
  std::unique_ptr<io::AtomicFile> write_file(const std::string& path) const;
  std::unique_ptr<io::AtomicFile> write_file() const;
  /// Whether this index holds the update lock of its file (open_for_update, create).
  bool updatable() const noexcept { return lock_ != nullptr; }
  /// Saves to the path it was opened for update from and returns that file opened again (the
  /// changes folded into the mapping), holding the update lock, which this object gives up. This
  /// object stays valid for queries (its mapping outlives the rename). Throws as save() and open().
  std::unique_ptr<NearDupIndex> save_and_reopen();
  /// Takes `from`'s update lock (and the path it was opened for update from); `from` stays
  /// valid for queries. For an index opened again from the same file (LiveIndex's recovery).
  void take_update_lock(NearDupIndex& from) noexcept;
  /// The path it was opened for update from ("" if not).
  const std::string& update_path() const noexcept { return update_path_; }
  /// Names the saved state this index was opened from (the header checksum; 0 if not opened from
  /// a file): equal for two files only if their headers, and so their sections' checksums, agree.
  uint64_t file_identity() const noexcept { return identity_; }
  /// Checks every stored shingle set against its checksum (open() checks the rest); throws
  /// FormatError naming the first damaged document.
  void verify() const;

  IndexStats stats() const;

 private:
  struct Mapping;
  struct PendingBands;
  std::span<const ShingleHash> set_of(DocId d) const;
  std::span<const SigValue> sig_of(DocId d) const noexcept;
  void build_id_map() const;
  std::shared_ptr<const SegmentedSearch> set_search() const;

  PipelineSpec spec_;
  size_t num_perm_ = 0;
  // The saved part (memory-mapped): base_n_ documents.
  std::unique_ptr<Mapping> map_;
  size_t base_n_ = 0;
  std::span<const uint64_t> id_ends_;
  std::string_view id_blob_;
  std::span<const SigValue> sigs_;
  std::span<const uint64_t> set_ends_, set_sums_;
  std::span<const ShingleHash> set_values_;
  std::span<const uint64_t> band_keys_;  // bands x base_n_, each band sorted by (key, doc)
  std::span<const DocId> band_docs_;
  // Inserted since: their ids, signatures, sets, and a hash table per band.
  std::deque<std::string> pending_ids_;  // a deque: id_map_ views stay valid as it grows
  std::vector<SigValue> pending_sigs_;
  std::vector<std::vector<ShingleHash>> pending_sets_;
  std::unique_ptr<PendingBands> pending_bands_;  // a flat multimap per band
  std::vector<uint8_t> removed_;  // per slot, empty while nothing is removed
  size_t live_ = 0;
  mutable std::unordered_map<std::string_view, DocId> id_map_;  // built on first need
  mutable std::once_flag id_map_once_;
  mutable std::atomic<bool> id_map_built_{false};
  mutable std::mutex search_mu_;  // guards search_: built on a query, which may run on many threads
  mutable std::shared_ptr<const SegmentedSearch> search_;
  std::unique_ptr<IndexLock> lock_;  // held while open for update
  uint64_t identity_ = 0;
  std::string update_path_;
};

/// What to do when a document to insert has the id of a live indexed one.
enum class OnDuplicateId { Error, Skip, Replace };

struct WalkOptions {
  double threshold = 0.0;     ///< near-duplicate when the similarity is >= this; above 1: never (no query)
  /// What each document asks (NearDupIndex::search): Similar at `threshold`, Containing at
  /// `threshold`, or the Top `top`.
  IndexQuery::Kind kind = IndexQuery::Kind::Similar;
  size_t top = 0;
  bool skip_same_id = false;  ///< leave out the indexed document with the record's own id
  bool insert_new = true;     ///< insert each document that is not a near-duplicate
  OnDuplicateId on_duplicate_id = OnDuplicateId::Error;
  int threads = 0;            ///< sketching threads, 0: all (the walk itself is sequential)
};

/// One document of a walk: its record and its matches (valid during the callback).
struct WalkRecord {
  io::Record record;
  std::span<const IndexMatch> matches;  ///< every match, best first; empty: not a near-duplicate
  bool inserted = false;
  bool id_skipped = false;            ///< not inserted: its id was indexed (OnDuplicateId::Skip)
  /// The best match, or null.
  const IndexMatch* best() const noexcept { return matches.empty() ? nullptr : &matches.front(); }
};

struct WalkStats {
  uint64_t documents = 0, duplicates = 0, inserted = 0, replaced = 0, id_skipped = 0, empty = 0;
  io::ReaderStats reader;  ///< bad records skipped, binary files left out, records without an id
};

/// The online walk: each document of the inputs in order is queried against the index
/// (including the documents the walk inserted before it), then, unless it is a near-duplicate,
/// inserted. `fn` sees every document in input order. Documents are read and sketched in
/// batches on `threads` threads. Throws FormatError naming the record for a duplicate id under
/// OnDuplicateId::Error.
WalkStats index_walk(NearDupIndex& index, const io::InputSet& inputs, const io::ReaderOptions& reader,
                     const WalkOptions& options, const std::function<void(const WalkRecord&)>& fn);

/// Holds an exclusive advisory lock on PATH.lock while alive (index updates), with the holder's
/// process id and command line written in the file, so that whoever finds it taken can be told
/// who holds it. Throws IoError if the lock file cannot be created, or, unless asked to wait,
/// if the lock is held (naming the holder and what to do).
class IndexLock {
 public:
  explicit IndexLock(const std::string& index_path, const LockWait& wait = {});
  ~IndexLock();
  IndexLock(const IndexLock&) = delete;
  IndexLock& operator=(const IndexLock&) = delete;
  /// Who holds the update lock of the index at `index_path`: "process 1234 (neardup serve
  /// pages.ndx)", "this process (...)", or "" when nobody holds it.
  static std::string holder(const std::string& index_path);

 private:
  int fd_ = -1;
};

}  // namespace neardup
