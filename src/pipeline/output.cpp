// The outputs: pairs (held or streamed), kept records (written while verification runs, by a
// writer thread), removed documents and clusters.
#include "pipeline/impl.h"
#include "io/range_appender.h"
#include "pipeline/pair_writer.h"

namespace neardup {

void Pipeline::Impl::each_pair(const std::function<void(std::span<const ScoredPair>)>& emit) {
  const ThreadPool::Use use(options_.tuning.pool);
  throw_if_pairs_dropped();
  if (!expand_on_write_) {
    emit(pairs_);
    return;
  }
  // Pairs streamed from the join are verified as they are handed out: what the caller does with
  // them (write_pairs: the write stage) is not verification.
  const auto t = Clock::now();
  uint64_t n = 0;
  double in_emit = 0;
  expand_pairs([&](std::span<const ScoredPair> chunk) {
    const auto t_emit = Clock::now();
    emit(chunk);
    in_emit += seconds_since(t_emit);
    n += chunk.size();
  });
  stats_.pairs = n;
  // Verification still, so part of the run's time too: the summary of a `pairs` run is the time
  // it took.
  const double verifying = seconds_since(t) - in_emit;
  stats_.times.verify += verifying;
  stats_.seconds += verifying;
}

void Pipeline::Impl::expand_pairs(const std::function<void(std::span<const ScoredPair>)>& emit) const {
  // pairs_ (sorted by pair) holds every pair verified directly, and the joins' connecting edges:
  // the joins leave those out (in dense clusters most pairs of a large bucket are also in a small
  // one) and the merge puts them in their places.
  PairMerger merge(pairs_, emit);
  std::vector<const SetJoin*> joins;
  for (const auto& j : joins_) joins.push_back(j.get());
  SetJoin::pairs_of(joins, pair_filter(), [&](std::span<const ScoredPair> chunk) { merge.add(chunk); }, pairs_);
  merge.finish();
}

void Pipeline::Impl::write_pairs(io::AtomicFile& out, const std::function<void(std::span<const ScoredPair>)>& also) {
  DocumentTable::Behind behind(docs_);  // pairs come by their first document
  const auto id_of = [&](DocId d) {
    behind.at(d);
    return id(d);
  };
  const std::span<const uint64_t> distances = spec_.method == SketchMethod::SimHash ? std::span<const uint64_t>(sketches_.simhashes) : std::span<const uint64_t>();
  const auto write = [&](std::span<const ScoredPair> chunk) {
    io::write_pairs(out, chunk, id_of, distances);
    if (also) also(chunk);
  };
  if (!expand_on_write_) {  // held pairs: nothing to list meanwhile, so no thread and no copies
    const auto t = Clock::now();
    each_pair(write);
    stats_.times.write += seconds_since(t);
    return;
  }
  // Pairs listed from the joins can be hundreds of MB (4 M pairs of dense licence files: 335 MB):
  // written directly to the disk from two small buffers (where the file system takes it), not
  // through the page cache, whose fresh page per 4 KiB costs CPU the listing needs, and whose
  // write-back was still 0.16-0.19 s behind at the end (0.14 s directly, the device's flush).
  out.limit_direct_buffers(2, size_t{2} << 20);
  out.write_directly();
  // The write's own time is what the run waited for it: the listing held up by a writer that is
  // behind, and the writer's tail; the writer's busy time while the pairs were listed is
  // write_during_run, as with the kept records of a dedup.
  double busy = 0;  // by the writer's thread, read once it has ended
  PairWriter writer([&](std::span<const ScoredPair> chunk) {
    const auto t = Clock::now();
    write(chunk);
    busy += seconds_since(t);
  });
  double waited = 0;
  each_pair([&](std::span<const ScoredPair> chunk) {
    const auto t = Clock::now();
    writer.add(chunk);
    waited += seconds_since(t);
  });
  const auto t = Clock::now();
  writer.finish();
  const double tail = seconds_since(t);
  stats_.times.write += waited + tail;
  stats_.times.write_during_run += std::max(0.0, busy - tail);
}

std::vector<io::AtomicFile*> Pipeline::Impl::every_source_to(io::AtomicFile& out) const {
  return std::vector<io::AtomicFile*>(inputs_->sources().size(), &out);
}

void Pipeline::Impl::write_kept(io::AtomicFile& out) { write_kept(every_source_to(out)); }

void Pipeline::Impl::write_kept(std::span<io::AtomicFile* const> outs) {
  const ThreadPool::Use use(options_.tuning.pool);
  const auto t = Clock::now();
  if (outs.size() != inputs_->sources().size()) throw UsageError("write_kept: one output per source is needed");
  throw_if_not_clustered();
  write_kept_records(outs, nullptr);
  stats_.times.write += seconds_since(t);
}

void Pipeline::Impl::write_kept_records(std::span<io::AtomicFile* const> outs, Decisions* decisions) {
  check_inputs_unchanged();
  const auto kept = [&](DocId d) { return decisions ? decisions->kept(d) : clustering_.kept(d); };
  // Progress from this thread when it is the run's, or counted for the run's thread to report.
  const auto progress = [&](uint64_t bytes, uint64_t docs) {
    if (decisions) {
      writer_.bytes.store(bytes, std::memory_order_relaxed);
      writer_.docs.store(docs, std::memory_order_relaxed);
    } else if (options_.tuning.progress) {
      options_.tuning.progress({"write", bytes, inputs_->total_bytes(), docs});
    }
  };
  if (docs_.has_positions()) {
    // JSONL: the kept lines are copied by position, runs of consecutive kept lines at once,
    // without parsing them again (a plain file is copied in the kernel). Following the decisions,
    // what is known is appended before waiting for more, and at least every 32 MiB.
    constexpr uint64_t kAppendBytes = uint64_t{32} << 20;
    DocumentTable::Behind behind(docs_);
    const auto& sources = inputs_->sources();
    std::vector<io::ByteRange> ranges;
    uint64_t bytes_done = 0, pending = 0;
    size_t d = 0;
    const size_t n = docs_.size();
    for (uint32_t s = 0; s < sources.size(); ++s) {
      std::optional<io::RangeAppender> appender;
      const auto append = [&] {
        if (ranges.empty()) return;
        if (!appender) appender.emplace(sources[s].path, sources[s].display, inputs_->read_from_copy(s));
        appender->append(ranges, *outs[s]);
        ranges.clear();
        pending = 0;
      };
      for (; d < n && docs_.pos(d).source == s; ++d) {
        const DocId doc = static_cast<DocId>(d);
        behind.at(static_cast<DocId>(d));
        if (decisions && !decisions->decided(doc)) {
          append();
          progress(bytes_done + docs_.pos(d).offset, d);
        }
        if (!kept(doc)) continue;
        pending += io::add_record_line(ranges, docs_.pos(d));
        if (decisions && pending >= kAppendBytes) {
          append();
          progress(bytes_done + docs_.pos(d).offset + docs_.pos(d).length + 1, d + 1);
        }
      }
      append();
      // The writes still running count as writing (and their errors are this writer's); an
      // output left for another holds no buffers.
      if (s + 1 == sources.size() || outs[s + 1] != outs[s]) outs[s]->flush_appends();
      bytes_done += input_stamps_[s].first;
      progress(bytes_done, d);
    }
    return;
  }
  io::RecordReader reader(*inputs_, options_.reader);
  io::Record rec;
  uint64_t ordinal = 0;
  const uint64_t n = docs_.size();
  while (reader.next(rec)) {
    const DocId doc = static_cast<DocId>(ordinal++);
    check_same_record(rec, doc);
    if (!kept(doc)) continue;
    io::AtomicFile& out = *outs[rec.source];
    out.write(rec.raw);
    out.put('\n');
    if ((ordinal & 0x3FFF) == 0) progress(reader.bytes_read(), ordinal);
  }
  if (ordinal != n)
    throw IoError("the input changed while neardup was running (" + std::to_string(ordinal) + " records instead of " +
                  std::to_string(n) + "); do not modify inputs during a run");
}

// Dedup with the kept records written while verification still runs (verify_in_groups starts
// the writer once the documents in no bucket are known to be kept). The writes and their disk
// traffic then overlap the verification instead of following it. Methods and inputs that are
// not verified in groups write after the run, as write_kept.
void Pipeline::Impl::run_dedup(std::span<io::AtomicFile* const> outs) {
  if (outs.size() != inputs_->sources().size()) throw UsageError("run_dedup: one output per source is needed");
  kept_outs_.assign(outs.begin(), outs.end());
  try {
    run(Mode::Dedup);
  } catch (...) {
    stop_writer();
    kept_outs_.clear();
    throw;
  }
  if (!writer_.running()) {
    kept_outs_.clear();
    return write_kept(outs);
  }
  const auto t = Clock::now();
  writer_.wait(std::chrono::milliseconds(100), [&] {
    if (options_.tuning.progress)
      options_.tuning.progress({"write", writer_.bytes.load(std::memory_order_relaxed), inputs_->total_bytes(),
                                writer_.docs.load(std::memory_order_relaxed)});
  });
  stats_.times.write_during_run = std::chrono::duration<double>(t - writer_.started).count();
  join_writer();
  // The writer may have copied its last records before verification ended: an input changed
  // since (its size or time) fails the run here, before the output is put in place.
  check_inputs_unchanged();
  stats_.times.write = seconds_since(t);
}

void Pipeline::Impl::start_writer() {
  writer_.start([this] {
    try {
      write_kept_records(kept_outs_, decisions_.get());
    } catch (const Decisions::Stopped&) {
      // the run stopped: its own error is the one reported
    }
  });
}

void Pipeline::Impl::join_writer() {
  // The job's error is thrown after the decisions and outputs are let go.
  struct Release {
    Impl& impl;
    ~Release() {
      impl.decisions_.reset();
      impl.kept_outs_.clear();
    }
  } release{*this};
  writer_.join();
}

void Pipeline::Impl::throw_if_the_writer_failed() {
  if (writer_.failed()) join_writer();
}

void Pipeline::Impl::stop_writer() noexcept {
  if (!writer_.running()) return;
  decisions_->stop();
  writer_.join_quietly();
  decisions_.reset();
}

void Pipeline::Impl::write_removed(io::AtomicFile& out) const {
  throw_if_not_clustered();
  DocumentTable::Behind behind(docs_);  // in input order
  io::write_removed(out, clustering_, removed_similarity_, [&](DocId d) {
    behind.at(d);
    return id(d);
  });
}

void Pipeline::Impl::write_clusters(io::AtomicFile& out) const {
  throw_if_not_clustered();
  DocumentTable::Behind behind(docs_);  // by their first documents
  io::write_clusters(out, clustering_, [&](DocId d) {
    behind.at(d);
    return id(d);
  });
}

}  // namespace neardup
