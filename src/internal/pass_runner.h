// A reading pass over the inputs, in parallel and in reading order.
//
// The calling thread reads records into batches; workers from the current thread pool parse and
// process them; the calling thread hands the documents, in reading order, to consume() as the
// batches complete. So the results are the same for any number of threads, and bad records are
// reported in reading order: on_bad(where, rejected) throws or counts them (they get no
// ordinal). When the pool has no free worker, or the queue is full, the reading thread works a
// queued batch itself, so a pass always finishes.
//
// With a filter, records are parsed on the reading thread (so that their ordinals are known
// there) and only those it accepts are processed; otherwise the workers parse.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/bottomk.h"
#include "io/raw_records.h"
#include "neardup/io/reader.h"
#include "neardup/types.h"
#include "internal/realloc_buffer.h"

namespace neardup::internal {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The weight of record i of a batch (`bytes` long) in the pass's CPU times per stage (parse,
/// shingle, sketch), 0 when it is not timed: reading the clock around each stage of each record
/// costs a noticeable share of a short record's whole work, so one short record in 8 is timed
/// and counts for 8; a record of 4 KiB or more is always timed, for itself.
inline double timing_weight(size_t i, size_t bytes) noexcept {
  if (bytes >= 4096) return 1.0;
  return i % 8 == 0 ? 8.0 : 0.0;
}

// A text's XXH3-128 hash, in two halves; all zero: none taken.
struct TextHash {
  uint64_t lo = 0, hi = 0;
};

/// A batch of records gathered on the reading thread and parsed and processed by one thread.
struct Batch {
  struct Entry {
    io::RawRecord::Kind kind = io::RawRecord::Kind::Line;
    uint32_t source = 0;
    uint32_t raw_length = 0;  // Line: the raw line; Parsed: the text
    size_t raw_begin = 0;     // in `raw`, unless at
    const char* at = nullptr;  // a line shared by the reader: in one of `blocks`
    bool writable = true;      // a shared line's bytes may be overwritten (io::RawRecord::writable)
    bool mapped = false;       // a shared line in a read-only file mapping (io::RawRecord::mapped)
    uint64_t line = 0, offset = 0;
    size_t id_begin = 0, id_length = 0;  // in `ids`, once parsed
    DocId doc = 0;                       // parsed on the reading thread: its ordinal
  };
  struct Problem {
    size_t entry = 0;
    std::string what;
    const char* kind = "";
    std::string raw;  // the line, when rejects are written
  };
  std::vector<Entry> entries;
  ByteArray raw;  // texts (and lines not shared) back to back, then JsonlParser::kPadding bytes
  // The reader's buffers that hold the batch's shared lines (RecordReader::share_line): the
  // lines are not copied; the buffers go back to the reader when the batch is worked.
  std::vector<std::shared_ptr<const void>> blocks;
  size_t shared_bytes = 0;
  std::string ids;
  std::vector<Problem> problems;  // bad entries, in entry order
  // Results, by entry.
  std::vector<uint8_t> ok;  // parsed into a document
  std::vector<uint64_t> text_length;
  std::vector<SigValue> sigs;
  std::vector<uint64_t> keys;  // band keys, entry-major
  Fingerprints fps;
  std::vector<uint64_t> simhashes;
  std::vector<uint8_t> empty;
  std::vector<uint32_t> fp_slot;  // bottomk: the entry's fingerprint in `fps`
  std::vector<std::vector<ShingleHash>> sets;
  // shingle_set_records: the number of the entry's text in the pass, and whether another entry
  // with that text makes the set.
  std::vector<uint32_t> text_number;
  std::vector<uint8_t> same_text;
  std::vector<TextHash> text_hash;  // the Pipeline's first pass of a dedup
  // The keep-by field of each entry (when asked for): kind, number, string in keys_text.
  std::vector<uint8_t> keys_kind;
  std::vector<double> keys_num;
  std::vector<size_t> keys_text_begin, keys_text_length;
  std::string keys_text;
  uint64_t shingles = 0, invalid_utf8 = 0, missing_ids = 0, unspaced = 0;
  double t_parse = 0, t_shingle = 0, t_sketch = 0;
  bool done = false;  // guarded by the runner's mutex
  size_t bytes = 0;   // of its records when queued, in `raw` and shared (workers let both go once done)

  size_t size() const { return entries.size(); }
  /// The bytes of its records: copied into `raw`, and shared.
  size_t record_bytes() const { return raw.size() + shared_bytes; }
  std::string_view raw_of(const Entry& e) const { return {e.at ? e.at : raw.data() + e.raw_begin, e.raw_length}; }
  std::string_view id_of(size_t i) const { return std::string_view(ids).substr(entries[i].id_begin, entries[i].id_length); }
  void add(io::RawRecord::Kind kind, std::string_view bytes, std::string_view id, size_t source, uint64_t line,
           uint64_t offset, DocId doc);
  /// Empties the batch for the next records, keeping the room of its per-entry arrays (`raw` is
  /// let go: the runner hands record buffers on separately).
  void reuse();
  /// A line that stays where the reader read it, in the buffer that `owner` keeps.
  void add_shared(const io::RawRecord& line, std::shared_ptr<const void> owner);
  /// Room for each entry's --keep-by field (keys_*), which the runner fills as it parses; none
  /// without `keep_by`.
  void size_key_fields(bool keep_by);
};

/// What a pass does with its records. `slot` numbers the thread that works a batch, below
/// PassRunner::slots(threads): per-thread state (a sketcher) is kept by slot.
struct Pass {
  const char* stage = "";
  uint64_t total_bytes = 0;
  const ProgressFn* progress = nullptr;
  const io::ReaderOptions* reader = nullptr;
  /// The workers' JSONL parsers may hand over word text (io::JsonlParser): process() needs
  /// only the words of each text.
  bool word_text = false;
  std::function<bool(const io::Record&, DocId)> filter;
  std::function<void(const std::string& where, const io::Rejected& r)> on_bad;
  std::function<void(Batch&, size_t slot)> start;  // before the batch's first document
  std::function<void(Batch&, size_t entry, std::string_view text, size_t slot)> process;
  std::function<void(Batch&, size_t entry, DocId doc)> consume;  // on the reading thread
};

/// What the workers measured and counted, over all batches.
struct PassTotals {
  uint64_t shingles = 0, invalid_utf8 = 0, missing_ids = 0, unspaced = 0;
  double t_parse = 0, t_shingle = 0, t_sketch = 0;
};

/// The number of slots a pass on `threads` workers uses: one per worker and the reading thread.
inline size_t pass_slots(int threads) { return static_cast<size_t>(threads < 1 ? 1 : threads) + 1; }

/// Runs `pass` over the records of `reader` with `threads` workers of the current pool.
PassTotals run_pass(io::RecordReader& reader, const io::InputSet& inputs, int threads, const Pass& pass);

/// The next ordinal of a counter of documents (DocId is 32-bit; the largest value means none).
DocId next_doc(uint64_t& counter);

}  // namespace neardup::internal
