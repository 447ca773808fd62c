// neardup-mpi's run: its steps in order, each agreed on by every rank (run.h).
#include "run.h"
#include "internal/free_heap.h"

namespace neardup::mpi {

std::string Run::piece_path(const char* what) const {
  return io::temp_directory() + "/neardup-mpi-" + std::to_string(::getpid()) + "-" + what;
}

double peak_rss_mib() {
  struct rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

int ranks_on_this_node() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int here = 1;
  MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  return std::max(here, 1);
}

int Run::go() {
  try {
    return run();
  } catch (const Failed& f) {
    // The pieces committed for rank 0 and not yet read are listed as temporary files: gone too.
    io::remove_temporary_files();
    return f.code;
  }
}

int Run::run() {
  const auto t_start = Clock::now();
  Outputs outs;
  steps_.agree([&] { set_up(outs.per_source); });
  const Share& share = shares_[static_cast<size_t>(c_.rank())];
  steps_.agree([&] { open_outputs(outs, share); });

  // 1. Read and sketch the share.
  auto t = Clock::now();
  steps_.agree([&] { read_share(share); });
  if (const char* kill = std::getenv("NEARDUP_MPI_TEST_KILL_RANK"); kill && std::atoi(kill) == c_.rank()) ::raise(SIGKILL);
  number_documents();
  Counts k;
  k.documents = bases_.back();
  k.skipped = c_.all_reduce(local_.reader.skipped, MPI_SUM);
  const io::ReaderStats read_stats = gather_reader_stats();
  {
    // Every record bad: the first message of the first rank that skipped one, as one process says it.
    const int first_skipper = c_.all_reduce(local_.reader.first_skips.empty() ? c_.size() : c_.rank(), MPI_MIN);
    steps_.agree([&] {
          if (k.documents == 0 && k.skipped > 0 && c_.rank() == first_skipper)
            throw FormatError("every record was bad (" + std::to_string(k.skipped) + " skipped, the first: " +
                              local_.reader.first_skips.front() + "); nothing to deduplicate: check --text-field, --format and the inputs");
        });
  }
  check_duplicate_ids();
  if (ro_.keep == KeepPolicy::Field) check_key_kinds();
  k.t_read = seconds_since(t);
  internal::release_free_memory();

  // 2. Buckets, by band key, each sent to the rank where its candidate component starts.
  t = Clock::now();
  const auto buckets = find_buckets();
  k.t_lsh = seconds_since(t);
  internal::release_free_memory();
  std::unique_ptr<EarlyKept> early = copy_kept_early(buckets, outs);

  // 3. Verification (and, for dedup, clustering) of whole components, a group of them at a time.
  t = Clock::now();
  std::vector<ScoredPair> verified;  // pairs
  std::vector<Fate> fates;           // dedup
  in_groups(buckets, [&](std::span<const std::vector<DocId>> group, const Payloads& pl) {
    const std::vector<ScoredPair> found = verify_buckets(group, pl);
    k.verified += found.size();
    if (dedup_) {
      const size_t before = fates.size();
      cluster_group(pl, found, fates);
      if (early) decided(*early, buckets, group, std::span<const Fate>(fates).subspan(before));
    } else
      verified.insert(verified.end(), found.begin(), found.end());
  });
  k.t_verify = seconds_since(t);
  k.candidates = c_.all_reduce(candidates_, MPI_SUM);
  k.largest = c_.all_reduce(largest_bucket_, MPI_MAX);

  // 4. Each clustered document's fate (dedup), to the rank that read it; or the pairs, each on the
  // rank that read its first document.
  t = Clock::now();
  std::vector<std::pair<DocId, DocId>> my_removed;  // (removed, keeper), removed read here
  if (dedup_) {
    k.verified = c_.all_reduce(k.verified, MPI_SUM);
    settle(std::move(fates), outs, k, my_removed);
  } else {
    send_pairs(verified, outs, k);
  }
  k.clusters = c_.all_reduce(k.clusters, MPI_SUM);
  k.removed = c_.all_reduce(k.removed, MPI_SUM);
  k.below = c_.all_reduce(k.below, MPI_SUM);
  k.t_cluster = seconds_since(t);

  // 5. The outputs: kept records of the files read here; then the merged files on rank 0.
  internal::release_free_memory();
  t = Clock::now();
  if (dedup_) write_kept(my_removed, outs, share, early.get());
  commit_outputs(outs);
  k.t_write = seconds_since(t);
  print_summary(read_stats, k, seconds_since(t_start));
  return kExitOk;
}

// Options, inputs, shares and outputs: the same on every rank; only rank 0 speaks.
void Run::set_up(std::vector<std::string>& per_source) {
  if (o_.estimate_memory) throw UsageError("--estimate-memory runs in one process (neardup dedup --estimate-memory)");
  cli::check_output_flags(o_, dedup_);
  if (!o_.against.empty()) throw UsageError("--against runs in one process (neardup dedup --against)");
  if (!o_.report.empty()) throw UsageError("--report runs in one process (neardup dedup --report)");
  ro_ = cli::run_options(cmd_, o_);
  spec_ = ro_.spec.resolved();
  if (!uses_signatures(spec_.method))
    throw UsageError("neardup-mpi runs --method oph and minhash; bottomk, simhash and exact run in one process (neardup)");

  threads_ = o_.threads > 0 ? o_.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_on_this_node());
  copy_read_once_inputs();
  inputs_ = std::make_unique<io::InputSet>(o_.inputs, ro_.reader);
  std::vector<io::NamedPath> outputs = {{o_.output_dir.empty() ? o_.output : std::string(), "--output"},
                                        {o_.removed, "--removed"}, {o_.clusters, "--clusters"}, {o_.rejects, "--rejects"}};
  if (!o_.output_dir.empty()) {
    per_source = cli::output_dir_paths(*inputs_, o_.output_dir);
    for (const std::string& p : per_source) outputs.push_back({p, "--output-dir file"});
    outputs.front().path.clear();
  }
  cli::check_output_paths(*inputs_, outputs);
  if (dedup_ && !inputs_->all_jsonl() && !inputs_->all_text())
    throw UsageError("dedup cannot mix JSONL and plain-text inputs in one run (its output is either JSONL "
                     "records or a list of paths); run it once per kind, or force one with --format");
  apply_keep(ro_, *inputs_);  // as Pipeline does
  // --output-dir: each file's output is written by one rank, so files are not cut.
  shares_ = split_inputs(*inputs_, c_.size(), o_.output_dir.empty());
  choose_spill();
}

// Every output is opened before the work: rank 0 the merged ones, each rank its files.
void Run::open_outputs(Outputs& outs, const Share& share) {
  const size_t my_first = share.first, my_last = share.last;
  const auto& per_source = outs.per_source;
  outs.dir_files.resize(per_source.size());
  outs.one_output = per_source.empty();
  const bool one_output = outs.one_output;
  if (c_.rank() == 0) {
    if (one_output) outs.out = cli::open_output(o_.output);
    if (!o_.removed.empty()) outs.removed = cli::open_output(o_.removed);
    if (!o_.clusters.empty()) outs.clusters = cli::open_output(o_.clusters);
    if (!o_.rejects.empty()) outs.rejects_out = cli::open_output(o_.rejects);
  }
  for (size_t s = my_first; s < my_last && !per_source.empty(); ++s) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(per_source[s]).parent_path(), ec);
    if (ec) throw IoError(per_source[s] + ": cannot create its directory: " + ec.message() + "; check --output-dir");
    outs.dir_files[s] = cli::open_output(per_source[s]);
  }
  // -o: pairs, or the kept paths of text files, go through a piece per rank.
  if (one_output && !(dedup_ && inputs_->all_jsonl())) outs.piece = std::make_unique<io::AtomicFile>(piece_path("output"));
  if (dedup_ && !o_.removed.empty()) outs.removed_piece = std::make_unique<io::AtomicFile>(piece_path("removed"));
  outs.rejects.open(o_.rejects.empty() ? std::string() : piece_path("rejects"), ro_.reader);
}

// pairs: each to the rank that read its first document, which writes them in order.
void Run::send_pairs(const std::vector<ScoredPair>& verified, Outputs& outs, Counts& k) {
  // Pairs: each to the rank that read its first document, which writes them in order.
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (const ScoredPair& p : verified)
    send[static_cast<size_t>(owner_of(bases_, p.a))].append(reinterpret_cast<const char*>(&p), sizeof p);
  const auto got = c_.exchange(std::move(send));
  std::vector<ScoredPair> pairs;
  for (const std::string& g : got) {
    const size_t at = pairs.size();
    pairs.resize(at + g.size() / sizeof(ScoredPair));
    std::memcpy(pairs.data() + at, g.data(), g.size());
  }
  std::sort(pairs.begin(), pairs.end(), by_pair);
  pairs.erase(std::unique(pairs.begin(), pairs.end(), [](const ScoredPair& x, const ScoredPair& y) { return x.a == y.a && x.b == y.b; }),
              pairs.end());
  k.pairs = c_.all_reduce(static_cast<uint64_t>(pairs.size()), MPI_SUM);
  k.verified = k.pairs;
  std::vector<DocId> others;
  for (const ScoredPair& p : pairs) others.push_back(p.b);
  // The ids of the second documents read elsewhere.
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  std::vector<std::string> other_ids;
  {
    std::vector<std::string> storage;
    auto told = ask_owners(others, [&](std::span<const DocId> want, Packer& p) {
      for (const DocId d : want) p.put_string(local_.ids[d - local_.base]);
    }, storage);
    for (const DocId d : others) other_ids.emplace_back(told[static_cast<size_t>(owner_of(bases_, d))].get_string());
  }
  steps_.agree([&] {
        io::write_pairs(*outs.piece, pairs, [&](DocId d) {
          return local_.has(d) ? std::string_view(local_.ids[d - local_.base]) : std::string_view(other_ids[place_in(others, d)]);
        });
      });
}

// dedup -o of JSONL: rank 0 copies the kept records of its share as they are decided
// (early_kept.h), up to the first component another rank verifies. Null elsewhere.
std::unique_ptr<EarlyKept> Run::copy_kept_early(const Buckets& buckets, Outputs& outs) {
  if (!dedup_ || !outs.one_output || !inputs_->all_jsonl()) return nullptr;
  const uint64_t mine = buckets.component.empty() ? UINT64_MAX : buckets.component.front();
  const uint64_t others = c_.all_reduce(c_.rank() == 0 ? UINT64_MAX : mine, MPI_MIN);
  std::unique_ptr<EarlyKept> early;
  steps_.agree([&] {
    if (c_.rank() != 0) return;
    early = std::make_unique<EarlyKept>(local_, *inputs_, shares_[0].first, *outs.out, others);
    early->decided_below(mine);  // the documents before rank 0's first component are in none
  });
  return early;
}

// After a group of rank 0's components is clustered: its removed documents read here, and every
// document before the next component is decided.
void Run::decided(EarlyKept& early, const Buckets& buckets, std::span<const std::vector<DocId>> group, std::span<const Fate> fates) {
  for (const Fate& f : fates)
    if (f.keeper != f.doc && local_.has(f.doc)) early.removed(f.doc);
  const auto end = static_cast<size_t>(group.data() + group.size() - buckets.lists.data());
  early.decided_below(end < buckets.component.size() ? buckets.component[end] : UINT64_MAX);
}

// dedup: the kept records of the files read here, into --output-dir's files, or to rank 0 for -o
// (their byte ranges, or the bytes of compressed files).
void Run::write_kept(std::vector<std::pair<DocId, DocId>>& my_removed, Outputs& outs, const Share& share, EarlyKept* early) {
  const size_t my_first = share.first, my_last = share.last;
  const bool one_output = outs.one_output;
  Packer kept_ranges;
  // -o with compressed inputs: a rank other than 0 copies the kept records of its compressed
  // files itself (from its decompressed copy) into a piece, and sends their bytes to rank 0,
  // which would otherwise decompress every other rank's files again, one after the other.
  constexpr uint64_t kBytesFollow = uint64_t{1} << 63;  // in kept_ranges: a source sent as bytes
  std::unique_ptr<io::AtomicFile> kept_piece;
  std::vector<uint64_t> kept_piece_bytes;  // per source in the piece, in order
  int kept_slot = -1;
  steps_.agree([&] {
        std::sort(my_removed.begin(), my_removed.end());
        size_t ri = 0;
        auto kept = [&](size_t i) {
          const DocId d = static_cast<DocId>(local_.base + i);
          while (ri < my_removed.size() && my_removed[ri].first < d) ++ri;
          return !(ri < my_removed.size() && my_removed[ri].first == d);
        };
        if (early) {
          early->finish(kept);  // rank 0's share, after what it copied during verification
        } else if (inputs_->all_jsonl()) {
          std::vector<io::ByteRange> ranges;
          size_t i = 0;
          for (size_t s = my_first; s < my_last; ++s) {
            ranges.clear();
            for (; i < local_.size() && local_.source[i] == s; ++i) {
              if (kept(i)) io::add_record_line(ranges, local_.pos[i]);
            }
            const io::Source& src = inputs_->sources()[s];
            if (one_output && c_.rank() != 0 && compressed(s)) {
              if (!kept_piece) kept_piece = std::make_unique<io::AtomicFile>(piece_path("kept"));
              io::append_ranges(src.path, src.display, ranges, *kept_piece, inputs_->read_from_copy(s));
              uint64_t bytes = 0;
              for (const io::ByteRange& r : ranges) bytes += r.length;  // a last line's newline written if missing
              kept_piece_bytes.push_back(bytes);
              kept_ranges.put(static_cast<uint64_t>(s) | kBytesFollow);
            } else if (one_output) {
              // -o: rank 0 copies every rank's kept ranges from the inputs, in the kernel where
              // it can, as one process does; only the ranges travel.
              kept_ranges.put(static_cast<uint64_t>(s));
              kept_ranges.put_vector(ranges);
            } else {
              io::append_ranges(src.path, src.display, ranges, *outs.dir_files[s], inputs_->read_from_copy(s));
              outs.dir_files[s]->flush_appends();  // written whole: its buffers go to the next
            }
          }
          if (kept_piece) kept_piece->commit();
          if (kept_piece) kept_slot = io::register_temporary_file(kept_piece->path());  // removed on a signal until sent
        } else {
          for (size_t i = 0; i < local_.size(); ++i)
            if (kept(i)) {
              outs.piece->write(local_.ids[i]);
              outs.piece->put('\n');
            }
        }
      });
  if (one_output && inputs_->all_jsonl()) {
    std::vector<std::string> send(static_cast<size_t>(c_.size()));
    send[0] = std::move(kept_ranges.bytes());
    const auto got = c_.exchange(std::move(send));
    append_kept(got, kBytesFollow, kept_piece ? kept_piece->path() : std::string(), kept_piece_bytes, kept_slot, *outs.out);
  }
}

// The pieces merged on rank 0, then, once every rank has written everything, every output
// renamed into place.
void Run::commit_outputs(Outputs& outs) {
  if (outs.piece) write_piece(outs.piece->path(), outs.piece.get(), outs.out.get());
  if (outs.removed_piece) write_piece(outs.removed_piece->path(), outs.removed_piece.get(), outs.removed.get());
  if (!o_.rejects.empty()) {
    const std::string path = piece_path("rejects");
    steps_.agree([&] {
      if (io::AtomicFile* f = outs.rejects.file()) f->commit();
    });
    write_piece(path, nullptr, outs.rejects_out.get());
  }
  // Every rank has written and synced everything: only then is anything moved into place, and
  // if a rank cannot move one of its outputs, every rank puts back what it moved.
  std::vector<io::AtomicFile*> mine;
  for (auto& f : outs.dir_files) mine.push_back(f.get());
  for (auto* f : {outs.out.get(), outs.removed.get(), outs.clusters.get(), outs.rejects_out.get()}) mine.push_back(f);
  io::OutputCommit commit(mine);
  steps_.agree([&] { commit.finish(); });
  try {
    steps_.agree([&] { commit.place(); });
  } catch (const Failed&) {
    for (const std::string& path : commit.undo())
      std::fprintf(stderr, "neardup: rank %d: %s was replaced and its previous file could not be put back\n", c_.rank(), path.c_str());
    throw;
  }
  commit.done();
}

// The summary line (and --stats) on rank 0, from every rank's counts.
void Run::print_summary(const io::ReaderStats& read_stats, const Counts& k, double seconds) {
  const double rss = c_.all_reduce(peak_rss_mib(), MPI_MAX);
  const uint64_t shuffled = c_.all_reduce(c_.shuffled, MPI_SUM);
  const double t_read_max = c_.all_reduce(k.t_read, MPI_MAX);
  uint64_t empty = static_cast<uint64_t>(std::count(local_.sketches.empty.begin(), local_.sketches.empty.end(), 1));
  empty = c_.all_reduce(empty, MPI_SUM);
  uint64_t text_bytes = 0;
  for (const uint32_t l : local_.lengths) text_bytes += l;
  text_bytes = c_.all_reduce(text_bytes, MPI_SUM);
  if (c_.rank() == 0 && !o_.quiet) {
    cli::print_input_warnings(read_stats, k.documents, inputs_->left_out(), cmd_, ro_.reader);
    const cli::SummaryCounts counts{k.documents, empty, k.skipped, UINT64_MAX, k.candidates, k.verified, k.pairs, k.clusters, k.removed, k.below};
    std::fprintf(stderr, "neardup: %s, %.2f s on %d ranks [%s]\n", cli::summary_counts(counts, !dedup_).c_str(), seconds,
                 c_.size(), spec_.to_string().c_str());
    if (o_.show_stats)
      std::fprintf(stderr,
                   "neardup: stages: %.1f MB of text; read+shingle+sketch %.3f s (slowest rank); buckets and components %.3f s (%d label rounds); "
                   "verify and cluster %.3f s; fates %.3f s; write %.3f s; shuffled %.0f bytes per document (%.1f MB over all ranks); largest bucket %llu; "
                   "peak memory %.0f MiB (largest rank); %d threads per rank\n",
                   static_cast<double>(text_bytes) / 1e6, t_read_max, k.t_lsh, label_rounds_, k.t_verify, k.t_cluster, k.t_write,
                   k.documents ? static_cast<double>(shuffled) / static_cast<double>(k.documents) : 0.0, static_cast<double>(shuffled) / 1e6,
                   static_cast<unsigned long long>(k.largest), rss, threads_);
  }
}

}  // namespace neardup::mpi
