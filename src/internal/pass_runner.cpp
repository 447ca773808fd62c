#include "internal/pass_runner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>

#include "internal/testing.h"
#include "neardup/error.h"
#include "neardup/thread_pool.h"

namespace neardup::internal {
namespace {

constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kBatchDocs = 2048;
// Lines this long are handed from the reader to their batch with the buffer they were read into
// (no copy). The reader then grows a new buffer for the next long line, which costs about as much
// as the copy on lines of a few MB (measured on the crowded mix): the hand-over pays from tens.
std::atomic<size_t> large_line_bytes{size_t{16} << 20};
// The most bytes of records read and not yet worked, unless one batch alone holds more: beyond
// it, the reading waits.
constexpr size_t kInFlightBytes = size_t{32} << 20;
using Kind = io::RawRecord::Kind;

// The state the worker tasks share with the runner. Owned jointly, because a task the pool
// starts late (its workers were busy) may run after the pass is over: it must then find `over`
// set and leave without touching the runner.
struct Shared {
  std::mutex mu;
  std::condition_variable not_empty, not_full, finished, idle;
  std::deque<Batch*> queue;
  bool closed = false;  // no more batches will be queued
  bool over = false;    // the runner has returned or is returning: tasks must not start
  size_t running = 0;   // worker tasks inside the runner
  size_t next_slot = 0;
  std::exception_ptr error;
  std::vector<ByteArray> spare_raw;  // record buffers of worked batches, for the next batches
};

// Batches are reused, and so are the buffers their records were copied into: allocated afresh,
// every batch faulted in its 1-2 MB of buffers as new pages (reuse halved the page faults of a
// pass over records of about 15 KB, and cut its CPU time by a tenth: BENCHMARKS.md). Record
// buffers larger than this are let go. Two of each are enough for the reading thread, which
// takes one per batch while the workers give theirs back; more would only add to the peak.
constexpr size_t kSpareRawBytes = size_t{4} << 20;
constexpr size_t kSpares = 2;

class PassRunner {
 public:
  PassRunner(io::RecordReader& reader, const io::InputSet& inputs, int threads, const Pass& pass)
      : reader_(reader), inputs_(inputs), pass_(pass), threads_(std::max(threads, 1)), max_queued_(static_cast<size_t>(threads_) * 2),
        shared_(std::make_shared<Shared>()) {}

  PassTotals run() {
    // Helpers queued by a worker's parallel loop wake the workers that wait for batches (the
    // mutex taken first, so that a worker about to wait cannot miss them).
    const ThreadPool::HelperWatch watch = pool_.watch_helpers([s = shared_] {
      { std::lock_guard<std::mutex> lock(s->mu); }
      s->not_empty.notify_all();
    });
    start_workers();
    std::exception_ptr read_error;
    try {
      read_all();
    } catch (...) {
      read_error = std::current_exception();  // reported after the records read before it
    }
    try {
      close();
      drain(true);
    } catch (...) {
      stop();
      throw;
    }
    stop();
    if (read_error) std::rethrow_exception(read_error);
    return totals_;
  }

 private:
  void start_workers() {
    const int n = std::min(threads_, std::max(pool_.workers(), 1));
    for (int t = 0; t < n; ++t) {
      pool_.submit([s = shared_, this] {
        size_t slot;
        {
          std::lock_guard<std::mutex> lock(s->mu);
          if (s->over) return;
          ++s->running;
          slot = s->next_slot++;
        }
        worker_loop(slot);
        {
          std::lock_guard<std::mutex> lock(s->mu);
          --s->running;
        }
        s->idle.notify_all();
      });
    }
  }

  // Takes queued batches until the queue is closed and empty. While none is queued, the worker
  // helps the pool's parallel loops: a record of kSplitBytes or more is parsed and shingled in
  // pieces by a parallel_for on the worker that took it, and the pass's other workers, tasks of
  // the same pool, are the only threads that could help it. Without this they waited for the
  // reading thread, itself waiting for that record's batch to be done: on the crowded mix one
  // core idled for 100 ms at a 25 MB record.
  void worker_loop(size_t slot) {
    io::JsonlParser parser(*pass_.reader, pass_.word_text, threads_);
    for (;;) {
      Batch* b = nullptr;
      {
        std::unique_lock<std::mutex> lock(shared_->mu);
        while (shared_->queue.empty() && !shared_->closed) {
          if (pool_.has_helpers()) {
            lock.unlock();
            pool_.run_helper();
            lock.lock();
            continue;
          }
          shared_->not_empty.wait(lock);  // woken by a batch, the end, or helpers (run())
        }
        if (shared_->queue.empty()) return;
        b = shared_->queue.front();
        shared_->queue.pop_front();
      }
      shared_->not_full.notify_one();
      work_guarded(*b, parser, slot);
    }
  }

  // Whether the reading thread may work a queued batch: only while fewer workers than asked for
  // are running (the pool's were busy elsewhere), so a pass never uses more threads than asked
  // and never waits for workers that cannot come.
  bool may_help() const { return !shared_->queue.empty() && shared_->running < static_cast<size_t>(threads_); }

  // Works one batch on the reading thread (slot `threads_`), when it would otherwise wait.
  bool help() {
    Batch* b = nullptr;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (!may_help()) return false;
      b = shared_->queue.front();
      shared_->queue.pop_front();
    }
    if (!reader_parser_) reader_parser_ = std::make_unique<io::JsonlParser>(*pass_.reader, pass_.word_text, threads_);
    work_guarded(*b, *reader_parser_, static_cast<size_t>(threads_));
    return true;
  }

  void work_guarded(Batch& b, io::JsonlParser& parser, size_t slot) {
    try {
      work(b, parser, slot);
    } catch (...) {
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (!shared_->error) shared_->error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      b.done = true;
    }
    shared_->finished.notify_all();
  }

  // Parses the batch's lines (unless parsed already) and processes each document.
  void work(Batch& b, io::JsonlParser& parser, size_t slot) {
    const size_t n = b.size();
    b.ok.assign(n, 0);
    b.text_length.assign(n, 0);
    io::Record rec;
    std::string problem;
    const size_t parsed_problems = b.problems.size();
    if (pass_.start) pass_.start(b, slot);
    for (size_t i = 0; i < n; ++i) {
      Batch::Entry& e = b.entries[i];
      std::string_view text = b.raw_of(e);
      if (e.kind == Kind::Bad) continue;
      uint64_t length = text.size();
      if (e.kind == Kind::Line) {
        if (!parse(b, i, parser, rec, problem)) continue;
        text = rec.text;
        length = parser.text_length();  // decoded, where text is word text
      }
      b.ok[i] = 1;
      b.text_length[i] = length;
      pass_.process(b, i, text, slot);
    }
    // The reading thread's problems came first; keep them all in entry order.
    std::inplace_merge(b.problems.begin(), b.problems.begin() + static_cast<ptrdiff_t>(parsed_problems), b.problems.end(),
                       [](const auto& x, const auto& y) { return x.entry < y.entry; });
    give_back_raw(b);
  }

  // Hands the batch's record buffer to the next batches, or lets it go: the records in flight
  // are bounded by the bytes of the batches not yet worked, so a worked one keeps none.
  void give_back_raw(Batch& b) {
    b.blocks.clear();
    if (b.raw.capacity() <= kSpareRawBytes) {
      b.raw.clear();
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (shared_->spare_raw.size() < kSpares) shared_->spare_raw.push_back(std::move(b.raw));
    }
    b.raw.release();
  }

  // An empty batch: a delivered one, and a spare record buffer.
  std::unique_ptr<Batch> new_batch() {
    std::unique_ptr<Batch> b;
    if (!spare_batches_.empty()) {
      b = std::move(spare_batches_.back());
      spare_batches_.pop_back();
      b->reuse();
    } else {
      b = std::make_unique<Batch>();
    }
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->spare_raw.empty()) {
      b->raw = std::move(shared_->spare_raw.back());
      shared_->spare_raw.pop_back();
    }
    return b;
  }

  bool parse(Batch& b, size_t i, io::JsonlParser& parser, io::Record& rec, std::string& problem) {
    Batch::Entry& e = b.entries[i];
    const std::string_view line = b.raw_of(e);
    const double weight = timing_weight(i, line.size());
    const auto t = weight > 0 ? Clock::now() : Clock::time_point();
    // The line is this batch's alone (its copy, or its place in a reader's buffer handed over):
    // a long one's text may be made word text where it is.
    char* const overwritable = e.at ? (e.writable ? const_cast<char*>(e.at) : nullptr) : b.raw.data() + e.raw_begin;
    const bool good = parser.parse(line, inputs_.sources()[e.source], e.line, rec, problem, overwritable);
    // A long mapped line's record now lies in the parser's copy: its pages are let go before the
    // record is shingled (on the crowded mix, two records of 15-25 MB worked at once held theirs).
    if (good && e.mapped && line.size() >= io::kWordTextMaxLine) io::release_mapped_line(line);
    if (weight > 0) b.t_parse += weight * seconds_since(t);
    if (!good) {
      b.problems.push_back({i, problem, parser.problem_kind(), pass_.reader->on_reject ? std::string(line) : std::string()});
      return false;
    }
    if (parser.replaced_invalid_utf8()) ++b.invalid_utf8;
    if (parser.missing_id()) ++b.missing_ids;
    e.id_begin = b.ids.size();
    e.id_length = rec.id.size();
    b.ids.append(rec.id);
    if (!b.keys_kind.empty()) {
      b.keys_kind[i] = static_cast<uint8_t>(rec.key.kind);
      b.keys_num[i] = rec.key.number;
      b.keys_text_begin[i] = b.keys_text.size();
      b.keys_text_length[i] = rec.key.text.size();
      b.keys_text.append(rec.key.text);
    }
    return true;
  }

  void read_all() {
    auto batch = new_batch();
    io::RawRecord raw;
    io::Record rec;
    auto full = [&] { return batch->record_bytes() >= kBatchBytes || batch->size() >= kBatchDocs; };
    for (;;) {
      if (pass_.filter) {
        // Parsed here: the ordinal is known, and the filter decides.
        if (!reader_.next(rec)) break;
        const DocId doc = next_doc(records_);
        if (!pass_.filter(rec, doc)) continue;
        batch->add(Kind::Parsed, rec.text, rec.id, rec.source, rec.line, rec.offset, doc);
      } else {
        if (!io::next_raw(reader_, raw)) break;
        ++records_;
        if (raw.kind == Kind::Line && raw.bytes.size() >= large_line_bytes.load(std::memory_order_relaxed)) {
          // A large line goes in a batch of its own.
          if (!batch->entries.empty()) {
            push(std::move(batch));
            batch = new_batch();
          }
          add_record(*batch, raw);
          push(std::move(batch));
          batch = new_batch();
          report_progress();
          std::lock_guard<std::mutex> lock(shared_->mu);
          if (shared_->error) break;
          continue;
        }
        if (raw.kind == Kind::Bad) batch->problems.push_back({batch->size(), raw.problem, raw.problem_kind, std::string()});
        add_record(*batch, raw);
      }
      if (full()) {
        push(std::move(batch));
        batch = new_batch();
        report_progress();
        std::lock_guard<std::mutex> lock(shared_->mu);
        if (shared_->error) break;
      }
    }
    if (!batch->entries.empty()) push(std::move(batch));
    report_progress();
  }

  // A record read raw: a line stays in the reader's buffer when the reader shares it, and is
  // copied otherwise (as are texts and bad records).
  void add_record(Batch& b, const io::RawRecord& raw) {
    if (raw.kind == Kind::Line)
      if (auto owner = io::share_line(reader_, raw)) return b.add_shared(raw, std::move(owner));
    b.add(raw.kind, raw.bytes, raw.kind == Kind::Parsed ? raw.id : std::string_view(), raw.source, raw.line, raw.offset, 0);
  }

  void report_progress() {
    Cancel::check();  // a caller's request to stop (Cancel), between batches
    if (pass_.progress && *pass_.progress) (*pass_.progress)({pass_.stage, reader_.bytes_read(), pass_.total_bytes, records_});
  }

  // Queues a batch; while the queue is full, works queued batches here. The records in flight
  // are bounded in bytes as well as in batches: a run of large records (generated files of tens
  // of MB come in groups) would otherwise hold a queue of them, each with its parser's copy.
  void push(std::unique_ptr<Batch> b) {
    b->raw.resize(b->raw.size() + io::JsonlParser::kPadding);
    wait_for_room(b->record_bytes());
    Batch* raw = b.get();
    raw->bytes = raw->record_bytes();
    in_flight_.push_back(std::move(b));
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(shared_->mu);
        if (shared_->queue.size() < max_queued_ || shared_->error) {
          shared_->queue.push_back(raw);
          break;
        }
      }
      if (!help()) {
        std::unique_lock<std::mutex> lock(shared_->mu);
        shared_->not_full.wait(lock, [&] { return shared_->queue.size() < max_queued_ || shared_->error || may_help(); });
      }
    }
    shared_->not_empty.notify_one();
    drain(false);
  }

  // Waits until ready() (called under the mutex), working queued batches here while it may;
  // rethrows a worker's error.
  template <class Ready>
  void work_until(Ready ready) {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(shared_->mu);
        if (shared_->error) std::rethrow_exception(shared_->error);
        if (ready()) return;
        if (!may_help()) {
          shared_->finished.wait(lock, [&] { return ready() || shared_->error || may_help(); });
          continue;
        }
      }
      help();
    }
  }

  // Waits until the records of the batches not yet worked and `bytes` more fit in
  // kInFlightBytes, or none is left.
  void wait_for_room(size_t bytes) {
    work_until([&] {
      size_t pending = 0;
      for (const auto& f : in_flight_)
        if (!f->done) pending += f->bytes;
      return pending == 0 || pending + bytes <= kInFlightBytes;
    });
  }

  // Hands the finished batches at the front to consume() (all of them, working or waiting, if
  // `all`).
  void drain(bool all) {
    while (!in_flight_.empty()) {
      Batch& b = *in_flight_.front();
      if (all) {
        work_until([&] { return b.done; });
      } else {
        std::lock_guard<std::mutex> lock(shared_->mu);
        if (shared_->error) std::rethrow_exception(shared_->error);
        if (!b.done) return;
      }
      deliver(b);
      if (spare_batches_.size() < kSpares) spare_batches_.push_back(std::move(in_flight_.front()));
      in_flight_.pop_front();
    }
  }

  // The documents and bad records of a finished batch, in order.
  void deliver(const Batch& b) {
    size_t p = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      if (p < b.problems.size() && b.problems[p].entry == i) {
        report_bad(b, b.problems[p++]);
        continue;
      }
      if (!b.ok[i]) continue;
      const DocId doc = pass_.filter ? b.entries[i].doc : next_doc(ordinal_);
      pass_.consume(const_cast<Batch&>(b), i, doc);
    }
    totals_.shingles += b.shingles;
    totals_.invalid_utf8 += b.invalid_utf8;
    totals_.missing_ids += b.missing_ids;
    totals_.unspaced += b.unspaced;
    totals_.t_parse += b.t_parse;
    totals_.t_shingle += b.t_shingle;
    totals_.t_sketch += b.t_sketch;
  }

  void report_bad(const Batch& b, const Batch::Problem& pr) {
    const Batch::Entry& e = b.entries[pr.entry];
    const io::BadRecord bad = io::bad_record(inputs_.sources()[e.source], e.line, e.offset, pr.kind, pr.what,
                                             e.kind == Kind::Line ? std::optional<std::string_view>(pr.raw) : std::nullopt);
    pass_.on_bad(bad.where, bad.rejected);
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->closed = true;
    }
    shared_->not_empty.notify_all();
  }

  // Ends the pass: batches not started are dropped, tasks not started will not start, and the
  // running ones are waited for.
  void stop() {
    std::unique_lock<std::mutex> lock(shared_->mu);
    shared_->closed = true;
    shared_->over = true;
    shared_->queue.clear();
    shared_->not_empty.notify_all();
    shared_->not_full.notify_all();
    shared_->idle.wait(lock, [&] { return shared_->running == 0; });
  }

  io::RecordReader& reader_;
  const io::InputSet& inputs_;
  const Pass& pass_;
  const int threads_;
  const size_t max_queued_;
  // The pool of the reading thread, whose workers run the pass: the pool they belong to, and
  // so the one their parallel loops (a long record's) queue their helpers in.
  ThreadPool& pool_ = ThreadPool::current();
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<io::JsonlParser> reader_parser_;
  std::deque<std::unique_ptr<Batch>> in_flight_;  // pushed, in reading order
  std::vector<std::unique_ptr<Batch>> spare_batches_;  // delivered, for reuse (the reading thread's)
  uint64_t records_ = 0;  // read
  uint64_t ordinal_ = 0;  // documents handed to consume()
  PassTotals totals_;
};

}  // namespace

void Batch::add(io::RawRecord::Kind kind, std::string_view bytes, std::string_view id, size_t source, uint64_t line,
                uint64_t offset, DocId doc) {
  Entry e;
  e.kind = kind;
  e.source = static_cast<uint32_t>(source);
  e.raw_length = static_cast<uint32_t>(bytes.size());
  e.raw_begin = raw.size();
  e.line = line;
  e.offset = offset;
  e.id_begin = ids.size();
  e.id_length = id.size();
  e.doc = doc;
  // Room for the parser's padding too, which push() appends: a large record is then copied
  // once, not copied again when the padding makes the vector grow.
  if (raw.size() + bytes.size() + io::JsonlParser::kPadding > raw.capacity())
    raw.reserve(std::max(raw.capacity() * 2, raw.size() + bytes.size() + io::JsonlParser::kPadding));
  raw.append(bytes);
  ids.append(id);
  entries.push_back(e);
}

void Batch::size_key_fields(bool keep_by) {
  const size_t n = keep_by ? size() : 0;
  keys_kind.assign(n, 0);
  keys_num.assign(n, 0.0);
  keys_text_begin.assign(n, 0);
  keys_text_length.assign(n, 0);
  keys_text.clear();
}

void Batch::reuse() {
  // A fresh batch, so that no member is carried over by mistake; only the storage of the
  // per-entry arrays (the largest, with sigs) is kept.
  auto keep = [](auto& v) {
    auto storage = std::move(v);
    storage.clear();
    return storage;
  };
  auto e = keep(entries);
  auto i = keep(ids);
  auto s = keep(sigs);
  auto k = keep(keys);
  auto t = keep(text_length);
  auto o = keep(ok);
  auto m = keep(empty);
  *this = Batch{};
  entries = std::move(e);
  ids = std::move(i);
  sigs = std::move(s);
  keys = std::move(k);
  text_length = std::move(t);
  ok = std::move(o);
  empty = std::move(m);
}

void Batch::add_shared(const io::RawRecord& line, std::shared_ptr<const void> owner) {
  NEARDUP_ASSERT(line.kind == io::RawRecord::Kind::Line);
  Entry e;
  e.kind = line.kind;
  e.source = static_cast<uint32_t>(line.source);
  e.raw_length = static_cast<uint32_t>(line.bytes.size());
  e.at = line.bytes.data();
  e.writable = line.writable;
  e.mapped = line.mapped;
  e.line = line.line;
  e.offset = line.offset;
  e.id_begin = ids.size();
  entries.push_back(e);
  shared_bytes += line.bytes.size();
  if (blocks.empty() || blocks.back() != owner) blocks.push_back(std::move(owner));
}

}  // namespace neardup::internal

namespace neardup {
size_t set_large_line_bytes(size_t bytes) noexcept { return internal::large_line_bytes.exchange(bytes); }
}  // namespace neardup

namespace neardup::internal {

DocId next_doc(uint64_t& counter) {
  if (counter >= 0xFFFFFFFFull) throw UsageError("more than 4,294,967,294 documents in one run; split the input");
  return static_cast<DocId>(counter++);
}

PassTotals run_pass(io::RecordReader& reader, const io::InputSet& inputs, int threads, const Pass& pass) {
  return PassRunner(reader, inputs, threads, pass).run();
}

}  // namespace neardup::internal
