#include "neardup/live_index.h"
#include "io/fd_stream.h"
#include "io/retry.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "index_file.h"
#include "internal/hash.h"
#include "live_log.h"
#include "internal/start_thread.h"
#include "neardup/error.h"
#include "neardup/io/writer.h"

namespace neardup {

namespace {

using internal::kAddRecord;
using internal::kLogHeaderBytes;
using internal::kRemoveRecord;
using internal::LogRecord;
using internal::put;
using internal::put_id;

[[noreturn]] void log_io_error(const std::string& path, const char* what) {
  throw IoError(std::string(what) + ": " + std::strerror(errno), ErrorPlace{path});
}

void write_all(int fd, const std::string& data, const std::string& path) {
  if (io::write_fully(fd, data.data(), data.size()) < data.size()) log_io_error(path, "cannot append to the index's log");
}

// A reader-writer lock that prefers writers (glibc's default prefers readers, so a steady
// stream of queries would starve the writer).
class RwLock {
 public:
  RwLock() {
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&l_, &a);
    pthread_rwlockattr_destroy(&a);
  }
  ~RwLock() { pthread_rwlock_destroy(&l_); }
  void lock() { pthread_rwlock_wrlock(&l_); }
  void unlock() { pthread_rwlock_unlock(&l_); }
  void lock_shared() { pthread_rwlock_rdlock(&l_); }
  void unlock_shared() { pthread_rwlock_unlock(&l_); }

 private:
  pthread_rwlock_t l_;
};

struct SharedGuard {
  explicit SharedGuard(RwLock& l) : l_(l) { l_.lock_shared(); }
  ~SharedGuard() { l_.unlock_shared(); }
  RwLock& l_;
};

}  // namespace

// A submission: changes, their sketches, and where the writer puts the results.
struct Ticket {
  std::vector<LiveChange> changes;
  std::vector<IndexSketch> sketches;  // one per add
  std::vector<LiveResult> results;
  bool fold = false;  // a request to fold (no changes)
  std::promise<void> done;
};

struct LiveIndex::State {
  std::string index_path, log_path;
  LiveIndexOptions options;
  PipelineSpec spec;
  std::unique_ptr<NearDupIndex> index;  // replaced by a fold (under the exclusive lock)
  mutable RwLock rw;

  // Sketchers for the callers' threads (each used by one thread at a time).
  mutable std::mutex sketchers_mu;
  mutable std::vector<std::unique_ptr<IndexSketcher>> sketchers;

  // The writer's queue.
  std::mutex q_mu;
  std::condition_variable q_cv;
  std::deque<std::shared_ptr<Ticket>> queue;
  size_t queued_changes = 0;
  bool stopping = false, closed = false;
  std::thread writer;

  // The log (the writer's alone, apart from the counters).
  int log_fd = -1;
  std::string failed;   // why the last log write failed ("" while the log works)
  bool stuck = false;   // the log could not be cut back after a failure: changes are refused
  std::atomic<uint64_t> log_bytes{0}, log_records{0}, replayed{0}, torn_bytes{0}, salvaged_bytes{0}, folds{0}, syncs{0},
      changes{0};
  std::atomic<double> last_fold_seconds{0};
  IndexStats index_stats;  // of the file as last folded (under rw)

  ~State() {
    if (log_fd >= 0) ::close(log_fd);
  }

  std::unique_ptr<IndexSketcher> take_sketcher() const {
    {
      std::lock_guard<std::mutex> g(sketchers_mu);
      if (!sketchers.empty()) {
        auto s = std::move(sketchers.back());
        sketchers.pop_back();
        return s;
      }
    }
    return std::make_unique<IndexSketcher>(spec);
  }
  void give_back(std::unique_ptr<IndexSketcher> s) const {
    std::lock_guard<std::mutex> g(sketchers_mu);
    sketchers.push_back(std::move(s));
  }
  void sketch(std::string_view text, IndexSketch& out) const {
    auto s = take_sketcher();
    s->sketch(text, out);
    give_back(std::move(s));
  }

  // A new empty log for the index as saved now, by rename (never half written).
  void start_log(const NearDupIndex* of = nullptr) {
    if (log_fd >= 0) ::close(log_fd);
    log_fd = -1;
    io::AtomicFile f(log_path);
    f.write(internal::log_header((of ? *of : *index).file_identity()));
    f.commit();
    log_fd = io::retry_eintr([&] { return ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); });
    if (log_fd < 0) log_io_error(log_path, "cannot open the index's log");
    log_bytes = kLogHeaderBytes;
    log_records = 0;
  }

  /// Replays the log over `into` (the index just opened), or over the live index.
  void replay(NearDupIndex* into = nullptr);
  void replay_record(std::string_view payload, uint32_t kind, uint64_t number, NearDupIndex& into);
  [[noreturn]] void damaged(const std::string& what) const {
    throw FormatError(what + "; the index's log is damaged or not a neardup log (move it away to open the index "
                             "without the changes it holds)",
                      ErrorPlace{log_path});
  }
  [[noreturn]] void damaged_synced(uint64_t record, size_t at) const;
  bool recover() noexcept;
  // A change to the live index (under the lock queries take), or to one being built (`into`).
  void apply_add(std::string_view id, IndexSketch sketch, NearDupIndex* into = nullptr) {
    std::unique_lock<RwLock> g(rw, std::defer_lock);
    if (!into) g.lock();
    NearDupIndex& to = into ? *into : *index;
    if (to.contains(id)) {
      const std::string s(id);
      to.remove(std::span<const std::string>(&s, 1));
    }
    to.insert(id, std::move(sketch));
  }
  void apply_remove(const std::string& id, NearDupIndex* into = nullptr) {
    std::unique_lock<RwLock> g(rw, std::defer_lock);
    if (!into) g.lock();
    (into ? *into : *index).remove(std::span<const std::string>(&id, 1));
  }
  void do_fold();
  void run_batch(std::vector<std::shared_ptr<Ticket>>& batch);
  void writer_loop();
};

void LiveIndex::State::damaged_synced(uint64_t record, size_t at) const {
  throw FormatError("record " + std::to_string(record) + " (byte " + std::to_string(at) +
                        ") of the index's log is damaged and changes synced later follow it: the damage is to "
                        "acknowledged changes, not a crash; `neardup index fold " + index_path +
                        " --salvage` folds every whole record and drops the damaged bytes (the changes they held are lost)",
                    ErrorPlace{log_path});
}

// One record's change, applied to `into`; `number` counts from 1, for messages.
void LiveIndex::State::replay_record(std::string_view payload, uint32_t kind, uint64_t number, NearDupIndex& into) {
  const std::string which = "record " + std::to_string(number);
  internal::PayloadReader r(payload.data(), payload.size());
  try {
    const std::string id(r.bytes(r.get<uint32_t>()));
    if (kind == kAddRecord) {
      IndexSketch sk;
      const uint32_t n = r.get<uint32_t>();
      if (n != static_cast<size_t>(spec.num_perm)) damaged(which + " has a signature of another length");
      sk.sig.resize(n);
      std::memcpy(sk.sig.data(), r.bytes(uint64_t{n} * sizeof(SigValue)).data(), n * sizeof(SigValue));
      const uint64_t m = r.get<uint64_t>();
      if (m > payload.size() / sizeof(ShingleHash)) damaged(which + " is malformed");
      sk.set.resize(m);
      std::memcpy(sk.set.data(), r.bytes(m * sizeof(ShingleHash)).data(), m * sizeof(ShingleHash));
      apply_add(id, std::move(sk), &into);
    } else if (kind == kRemoveRecord) {
      apply_remove(id, &into);
    } else {
      damaged(which + " of unknown kind " + std::to_string(kind));
    }
  } catch (const std::out_of_range&) {
    damaged(which + " is malformed");
  }
  if (!r.done()) damaged(which + " is malformed");
}

// Replays the log over the index just opened: a log for another saved state was folded already
// (a crash between the index's rename and the log's) and is started afresh.
void LiveIndex::State::replay(NearDupIndex* into) {
  NearDupIndex& target = into ? *into : *index;
  const int fd = io::retry_eintr([&] { return ::open(log_path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) {
    if (errno != ENOENT) log_io_error(log_path, "cannot open the index's log");
    start_log(&target);
    return;
  }
  std::string data;
  {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      log_io_error(log_path, "cannot read the index's log");
    }
    data.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < data.size()) {
      const ssize_t r = ::pread(fd, data.data() + got, data.size() - got, static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        ::close(fd);
        log_io_error(log_path, "cannot read the index's log");
      }
      got += static_cast<size_t>(r);
    }
    ::close(fd);
  }
  // The log is created whole by rename, so a short or foreign header is damage, not a crash.
  std::string problem;
  const uint64_t base = internal::parse_log_header(data, problem);
  if (!problem.empty()) damaged(problem);
  salvaged_bytes = 0;
  if (base != target.file_identity()) {  // folded already
    start_log(&target);
    return;
  }
  size_t at = kLogHeaderBytes;
  uint64_t records = 0;
  LogRecord rec;
  while (at < data.size()) {
    if (!internal::whole_record_at(data, at, rec)) {
      // A record cut short or failing its checksum: the torn end of the last group (a crash while
      // it was written, never acknowledged), unless a later group starts after it (live_log.h).
      if (!internal::next_whole_record(data, at + 1, rec) || !internal::group_starts_after(data, rec.at)) break;
      if (!options.salvage_log) damaged_synced(records + 1, at);
      salvaged_bytes += rec.at - at;
      at = rec.at;
    }
    replay_record(std::string_view(data).substr(rec.at + internal::kRecordHeaderBytes, rec.payload), rec.kind,
                  records + 1, target);
    at = rec.end();
    ++records;
  }
  replayed = records;
  log_records = records;
  torn_bytes = data.size() - at;
  log_fd = io::retry_eintr([&] { return ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); });
  if (log_fd < 0) log_io_error(log_path, "cannot open the index's log");
  if (at != data.size()) {  // cut the torn record off, durably, before appending after it
    if (io::retry_eintr([&] { return ::ftruncate(log_fd, static_cast<off_t>(at)); }) != 0 || io::retry_eintr([&] { return ::fdatasync(log_fd); }) != 0)
      log_io_error(log_path, "cannot cut the torn end off the index's log");
  }
  log_bytes = at;
}

// After a failed write or sync of the log: the log cut back to what was synced, and the index
// built again from its file and the log, so that what the failed batch applied in memory (never
// acknowledged) is gone and the next batch can try again once there is room. Reading and
// cutting need no room. False if it cannot: changes are then refused until a restart.
bool LiveIndex::State::recover() noexcept {
  try {
    if (io::retry_eintr([&] { return ::ftruncate(log_fd, static_cast<off_t>(log_bytes.load())); }) != 0 ||
        io::retry_eintr([&] { return ::fdatasync(log_fd); }) != 0)
      return false;
    auto fresh = NearDupIndex::open(index->update_path(), /*pending_log_ok=*/true);
    const uint64_t replayed_at_start = replayed, records = log_records;
    ::close(log_fd);
    log_fd = -1;
    replay(fresh.get());
    replayed = replayed_at_start;
    log_records = records;
    fresh->take_update_lock(*index);
    std::lock_guard<RwLock> g(rw);
    index.swap(fresh);
    return true;
  } catch (...) {
    return false;
  }
}

void LiveIndex::State::do_fold() {
  const auto t0 = std::chrono::steady_clock::now();
  // Queries go on reading the old index (its mapping outlives the rename); only the writer
  // changes it, and the writer is here.
  std::unique_ptr<NearDupIndex> fresh = index->save_and_reopen();
  // Containment and top-k queries were asked: the folded index gets its inverted index now, not
  // on the first such query after the swap, which would wait for it.
  if (index->has_set_search()) fresh->build_set_search();
  const IndexStats st = fresh->stats();
  {
    std::lock_guard<RwLock> g(rw);
    index.swap(fresh);
    index_stats = st;
  }
  fresh.reset();  // the old index, unmapped outside the lock
  start_log();
  ++folds;
  last_fold_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void LiveIndex::State::run_batch(std::vector<std::shared_ptr<Ticket>>& batch) {
  std::string log;
  std::vector<IndexMatch> matches;
  uint64_t records = 0;
  bool fold_asked = false;
  for (auto& t : batch) {
    if (t->fold) fold_asked = true;
    if (stuck) continue;
    size_t add_i = 0;
    for (size_t i = 0; i < t->changes.size(); ++i) {
      LiveChange& c = t->changes[i];
      LiveResult& res = t->results[i];
      if (c.kind == LiveChange::Kind::Remove) {
        if (!index->contains(c.id)) {
          res.outcome = LiveResult::Outcome::Absent;
          continue;
        }
        internal::append_record(log, kRemoveRecord, [&](std::string& out) { put_id(out, c.id); });
        apply_remove(c.id);
        res.outcome = LiveResult::Outcome::Removed;
        ++records;
        continue;
      }
      IndexSketch& sk = t->sketches[add_i++];
      if (index->contains(c.id)) {
        res.outcome = LiveResult::Outcome::IdExists;
        continue;
      }
      if (c.dedup) {
        index->query(sk, spec.threshold, matches);  // only the writer changes the index: no lock needed
        if (!matches.empty()) {
          res.outcome = LiveResult::Outcome::Duplicate;
          for (const IndexMatch& m : matches) res.matches.push_back({std::string(index->id(m.doc)), m.similarity});
          continue;
        }
      }
      internal::append_record(log, kAddRecord, [&](std::string& out) {
        put_id(out, c.id);
        put<uint32_t>(out, static_cast<uint32_t>(sk.sig.size()));
        out.append(reinterpret_cast<const char*>(sk.sig.data()), sk.sig.size() * sizeof(SigValue));
        put<uint64_t>(out, sk.set.size());
        out.append(reinterpret_cast<const char*>(sk.set.data()), sk.set.size() * sizeof(ShingleHash));
      });
      apply_add(c.id, std::move(sk));
      res.outcome = LiveResult::Outcome::Added;
      ++records;
    }
  }
  std::exception_ptr error;
  if (stuck) {
    error = std::make_exception_ptr(IoError("changes are refused since the index's log could not be written (" + failed +
                                            ") nor cut back to what was synced; restart to replay the log", ErrorPlace{log_path}));
  } else if (!log.empty()) {
    try {
      write_all(log_fd, log, log_path);
      if (io::retry_eintr([&] { return ::fdatasync(log_fd); }) != 0) log_io_error(log_path, "cannot sync the index's log");
      ++syncs;
      log_bytes += log.size();
      log_records += records;
      changes += records;
      std::lock_guard<std::mutex> g(q_mu);  // stats() reads it
      failed.clear();
    } catch (const Error& e) {
      error = std::current_exception();
      const bool recovered = recover();  // the batch's changes undone
      std::lock_guard<std::mutex> g(q_mu);
      failed = e.what();
      stuck = !recovered;
    }
  }
  if (!error && (fold_asked || log_bytes >= options.fold_bytes) && log_records > 0) {
    try {
      do_fold();
    } catch (...) {
      // The log still holds every change: a failed fold loses nothing, and is tried again later.
      if (fold_asked) error = std::current_exception();
    }
  }
  for (auto& t : batch) {
    if (error && (!t->changes.empty() || t->fold))
      t->done.set_exception(error);
    else
      t->done.set_value();
  }
}

void LiveIndex::State::writer_loop() {
  std::vector<std::shared_ptr<Ticket>> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock<std::mutex> lk(q_mu);
      q_cv.wait(lk, [&] { return !queue.empty() || stopping; });
      if (queue.empty()) return;  // stopping, nothing left
      size_t n = 0;
      while (!queue.empty() && (batch.empty() || n + queue.front()->changes.size() <= options.max_batch)) {
        n += queue.front()->changes.size();
        queued_changes -= queue.front()->changes.size();
        batch.push_back(std::move(queue.front()));
        queue.pop_front();
      }
    }
    run_batch(batch);
  }
}

std::string LiveIndex::log_path(const std::string& index_path) { return internal::log_path(index_path); }

const PipelineSpec& LiveIndex::spec() const noexcept { return s_->spec; }

LiveIndex::LiveIndex(std::unique_ptr<State> state) : s_(std::move(state)) {}

std::unique_ptr<LiveIndex> LiveIndex::open(const std::string& path, const LiveIndexOptions& options, const LockWait& wait) {
  auto s = std::make_unique<State>();
  s->index_path = path;
  s->log_path = log_path(path);
  s->options = options;
  if (s->options.max_batch == 0) s->options.max_batch = 1;
  s->index = NearDupIndex::open_for_update(path, wait, /*pending_log_ok=*/true);
  s->spec = s->index->spec();
  s->replay();
  if (s->salvaged_bytes > 0) s->do_fold();  // the damaged bytes gone from the log for good
  s->index_stats = s->index->stats();
  s->writer = internal::start_thread([st = s.get()] { st->writer_loop(); });
  return std::unique_ptr<LiveIndex>(new LiveIndex(std::move(s)));
}

LiveIndex::~LiveIndex() {
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    s_->stopping = true;
  }
  s_->q_cv.notify_all();
  if (s_->writer.joinable()) s_->writer.join();
}

std::vector<LiveMatch> LiveIndex::query(std::string_view text, double threshold, std::string_view skip_id) const {
  return query(text, IndexQuery{IndexQuery::Kind::Similar, threshold, 0}, skip_id);
}

std::vector<LiveMatch> LiveIndex::query(std::string_view text, const IndexQuery& how, std::string_view skip_id) const {
  IndexSketch q;
  s_->sketch(text, q);
  std::vector<IndexMatch> m;
  std::vector<LiveMatch> out;
  IndexQuery ask = how;
  ask.skip_id = skip_id;
  SharedGuard g(s_->rw);
  s_->index->search(q, ask, m);
  out.reserve(m.size());
  for (const IndexMatch& x : m) out.push_back({std::string(s_->index->id(x.doc)), x.similarity});
  return out;
}

bool LiveIndex::contains(std::string_view id) const {
  SharedGuard g(s_->rw);
  return s_->index->contains(id);
}

std::vector<LiveResult> LiveIndex::apply(std::vector<LiveChange> changes) {
  auto t = std::make_shared<Ticket>();
  t->results.resize(changes.size());
  {  // refused before the work of sketching when the writer is far behind
    std::lock_guard<std::mutex> g(s_->q_mu);
    if (s_->queued_changes + changes.size() > s_->options.max_pending && !changes.empty()) {
      for (LiveResult& r : t->results) r.outcome = LiveResult::Outcome::Busy;
      return std::move(t->results);
    }
  }
  // Sketched here, on the caller's thread, so that many callers sketch in parallel.
  size_t adds = 0;
  for (const LiveChange& c : changes) adds += c.kind == LiveChange::Kind::Add;
  t->sketches.resize(adds);
  for (size_t i = 0, a = 0; i < changes.size(); ++i)
    if (changes[i].kind == LiveChange::Kind::Add) {
      s_->sketch(changes[i].text, t->sketches[a++]);
      std::string().swap(changes[i].text);  // the writer needs the sketch only
    }
  t->changes = std::move(changes);
  std::future<void> f = t->done.get_future();
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    if (s_->closed) throw UsageError("the live index is closed");
    if (s_->queued_changes + t->changes.size() > s_->options.max_pending && !t->changes.empty()) {
      for (LiveResult& r : t->results) r.outcome = LiveResult::Outcome::Busy;
      return std::move(t->results);
    }
    s_->queued_changes += t->changes.size();
    s_->queue.push_back(t);
  }
  s_->q_cv.notify_one();
  f.get();
  return std::move(t->results);
}

LiveResult LiveIndex::apply(LiveChange change) {
  std::vector<LiveChange> v;
  v.push_back(std::move(change));
  return std::move(apply(std::move(v)).front());
}

void LiveIndex::fold() {
  auto t = std::make_shared<Ticket>();
  t->fold = true;
  std::future<void> f = t->done.get_future();
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    if (s_->closed) throw UsageError("the live index is closed");
    s_->queue.push_back(t);
  }
  s_->q_cv.notify_one();
  f.get();
}

void LiveIndex::close() {
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    if (s_->closed) return;
  }
  std::exception_ptr error;
  try {
    fold();  // after every change submitted before it (the queue is in order)
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    s_->closed = true;
    s_->stopping = true;
  }
  s_->q_cv.notify_all();
  if (s_->writer.joinable()) s_->writer.join();
  if (error) std::rethrow_exception(error);
}

LiveStats LiveIndex::stats() const {
  LiveStats st;
  {
    SharedGuard g(s_->rw);
    st.documents = s_->index->size();
    st.index = s_->index_stats;
    st.search_bytes = s_->index->set_search_bytes();
  }
  {
    std::lock_guard<std::mutex> g(s_->q_mu);
    st.pending = s_->queued_changes;
    st.log_failure = s_->failed;
    st.log_failure_needs_restart = s_->stuck;
  }
  st.log_bytes = s_->log_bytes;
  st.log_records = s_->log_records;
  st.replayed = s_->replayed;
  st.torn_bytes = s_->torn_bytes;
  st.salvaged_bytes = s_->salvaged_bytes;
  st.folds = s_->folds;
  st.syncs = s_->syncs;
  st.changes = s_->changes;
  st.last_fold_seconds = s_->last_fold_seconds;
  return st;
}

}  // namespace neardup
