// A persistent index that many threads query and change at once, with every change durable
// before it is acknowledged: the engine of `neardup serve` (and of any host that asks "have I
// seen a near-copy of this?" online).
//
// Durability. Each change (an added document's id, signature and shingle set; a removed id) is
// appended to a write-ahead log, INDEX.wal, and the log is synced (fdatasync) before the change
// is acknowledged. Changes waiting at the same moment share one sync (group commit), so the
// rate of changes is not bounded by the rate of syncs. On open, the log is replayed over the
// index file; a torn record at its end (a crash while appending, never acknowledged) is cut off,
// and damage inside what was synced is refused (LiveIndexOptions::salvage_log).
// When the log outgrows LiveIndexOptions::fold_bytes, it is folded into the index file: the index
// is saved with the atomic rename of NearDupIndex::save, then a new empty log replaces the old one
// (again by rename). The log names the saved index it applies to (the header checksum,
// NearDupIndex::file_identity), so a crash between the two renames leaves a log that open()
// recognises as already folded. kill -9 at any moment therefore loses no acknowledged change and
// leaves the index file whole.
//
// Concurrency. Queries run in parallel on the caller's threads; they hold a reader lock that
// writers prefer, so a stream of queries cannot starve changes. Changes are applied by one writer
// thread, in the order they were submitted: deciding an add (its id, and with dedup its
// near-duplicates) and inserting it happen with no change in between, so of two near-copies added
// at once exactly one gets in. The writer holds the exclusive lock only while inserting or
// removing one document in memory (microseconds) and while swapping in the folded index (a
// pointer swap); queries go on during a fold, changes wait for it.
//
// Visibility. A change is visible to queries from the moment the writer applies it, which is
// before its batch is synced: a query may see a document whose add is not yet acknowledged (and
// that a crash in those milliseconds would lose). A change that cannot be logged (disk full, I/O
// error) fails its request and every later one: the index no longer matches its log, and must be
// opened again (which replays what the log holds).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/index.h"

namespace neardup {

struct LiveIndexOptions {
  uint64_t fold_bytes = uint64_t{256} << 20;  ///< fold the log into the index file past this size
  size_t max_pending = 4096;                  ///< changes waiting for the writer; more are refused (Busy)
  size_t max_batch = 512;                     ///< changes per log sync at most
  /// Open a log whose synced records are damaged (not by a crash: whole records of later synced
  /// groups follow the damage) by replaying every whole record and dropping the damaged bytes,
  /// then folding at once. Without it such a log is refused (FormatError naming the record).
  bool salvage_log = false;
};

/// An indexed near-duplicate, by id.
struct LiveMatch {
  std::string id;
  double similarity = 0.0;
};

/// One change to submit.
struct LiveChange {
  enum class Kind { Add, Remove } kind = Kind::Add;
  std::string id;
  std::string text;   ///< Add: the document's text
  bool dedup = true;  ///< Add: refuse it when it nearly copies an indexed document (at the index's threshold)
};

/// What became of a change.
struct LiveResult {
  enum class Outcome {
    Added,      ///< added and logged
    Duplicate,  ///< not added: it nearly copies `matches` (best first)
    IdExists,   ///< not added: a live document has this id
    Removed,    ///< removed and logged
    Absent,     ///< nothing to remove: no live document has this id
    Busy,       ///< not applied: too many changes are waiting (LiveIndexOptions::max_pending)
  } outcome = Outcome::Busy;
  std::vector<LiveMatch> matches;
};

struct LiveStats {
  uint64_t documents = 0;        ///< live documents
  uint64_t log_bytes = 0;        ///< the log's size (changes since the last fold)
  uint64_t log_records = 0;      ///< changes in the log
  uint64_t replayed = 0;         ///< changes replayed from the log when opened
  uint64_t torn_bytes = 0;       ///< bytes of a torn record cut off the log's end when opened
  uint64_t salvaged_bytes = 0;   ///< damaged bytes dropped from inside the log when opened (salvage_log)
  uint64_t folds = 0;            ///< folds since opened
  uint64_t syncs = 0;            ///< log syncs since opened
  uint64_t changes = 0;          ///< changes logged since opened
  uint64_t pending = 0;          ///< changes waiting for the writer now
  double last_fold_seconds = 0;  ///< how long the last fold took
  uint64_t search_bytes = 0;     ///< the inverted index of containment and top-k queries (0 until one is asked)
  IndexStats index;              ///< of the index file as last folded
  /// Why the last write or sync of the log failed (a full disk, an I/O error), or "" while the
  /// log works; the acknowledged changes are all in the log. The changes of the batch that failed
  /// are undone and later ones are tried again as they come, unless log_failure_needs_restart
  /// (the log could not be cut back to what was synced): then every change is refused.
  std::string log_failure;
  bool log_failure_needs_restart = false;
};

class LiveIndex {
 public:
  /// Opens the index at `path` for update (its lock is held until close; taken as `wait` says)
  /// and replays `path`.wal. Throws IoError, or FormatError naming the file and what is wrong (a
  /// damaged index or log).
  static std::unique_ptr<LiveIndex> open(const std::string& path, const LiveIndexOptions& options = {}, const LockWait& wait = {});
  /// Waits for the pending changes, syncs the log and stops the writer (see close()).
  ~LiveIndex();
  LiveIndex(const LiveIndex&) = delete;
  LiveIndex& operator=(const LiveIndex&) = delete;

  const PipelineSpec& spec() const noexcept;
  /// The log's path.
  static std::string log_path(const std::string& index_path);

  /// The live documents with similarity >= threshold to `text`, best first (then the order they
  /// were added), leaving out one whose id is `skip_id` (if not empty). Safe from any thread.
  std::vector<LiveMatch> query(std::string_view text, double threshold, std::string_view skip_id = {}) const;
  /// What `how` asks (NearDupIndex::search): near-duplicates, the documents containing `text`, or
  /// the top k, leaving out one whose id is `skip_id`. Safe from any thread.
  std::vector<LiveMatch> query(std::string_view text, const IndexQuery& how, std::string_view skip_id = {}) const;
  /// Whether a live document has this id. Safe from any thread.
  bool contains(std::string_view id) const;
  /// Applies the changes in order and returns when every applied one is in the synced log (one
  /// result per change). Safe from any thread. Throws IoError if the log cannot be written (and
  /// from then on for every change), UsageError after close().
  std::vector<LiveResult> apply(std::vector<LiveChange> changes);
  LiveResult apply(LiveChange change);
  /// Folds the log into the index file now (waits for it).
  void fold();
  /// Finishes the pending changes, syncs, folds the log if it holds anything, and stops the
  /// writer; later changes are refused. Idempotent. Throws IoError if the final fold fails (the
  /// log still holds every change).
  void close();
  LiveStats stats() const;

 private:
  struct State;
  explicit LiveIndex(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace neardup
