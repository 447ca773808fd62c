// `neardup index create|add|query|remove|stats` and `neardup dedup --against IDX`: a persistent
// near-duplicate index (neardup/index.h).
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

#include "commands.h"
#include "options.h"

namespace neardup::cli {
namespace {

struct IndexOptions {
  Options common;
  std::string index;
  bool force = false;
  bool dedup = false;
  std::string output;
  std::vector<std::string> ids;
  std::string ids_from;
  bool json = false;
  bool skip_same_id = false;
  double containment = 0.0;
  size_t top = 0;
  bool salvage = false;
  OnDuplicateId on_duplicate_id = OnDuplicateId::Error;
};

}  // namespace

void add_on_duplicate_id(CLI::App* cmd, OnDuplicateId& v) {
  add_choice<OnDuplicateId>(cmd, "--on-duplicate-id", v, {{"error", OnDuplicateId::Error}, {"skip", OnDuplicateId::Skip}, {"replace", OnDuplicateId::Replace}},
                            "A document whose id is already indexed: error (stop), skip (keep the indexed one) or replace it");
}

namespace {

int threads_of(const Options& o) { return o.threads; }  // 0: the library uses every hardware thread

// An index finds the pairs its bands were chosen for: asked below its threshold, it misses
// what the S-curve says, silently unless told.
void warn_below_build_threshold(const NearDupIndex& idx, const std::string& path, double t, bool quiet) {
  const PipelineSpec& s = idx.spec();
  if (quiet || t + kSimilarityEpsilon >= s.threshold) return;
  std::fprintf(stderr,
               "neardup: warning: %s was built for threshold %g (%d bands x %d rows): at %g its bands find only %.1f%% of "
               "the pairs of that similarity (%.1f%% at %g; the S-curve); rebuild the index with --threshold %g to find "
               "them all\n",
               path.c_str(), s.threshold, s.lsh.bands, s.lsh.rows, t, 100 * idx.recall_at(t), 100 * idx.recall_at(s.threshold),
               s.threshold, t);
}

void print_walk(const char* what, const WalkStats& st, const NearDupIndex& idx, const std::string& path, bool quiet) {
  if (quiet) return;
  std::fprintf(stderr,
               "neardup: %s: %llu documents (%llu empty), %llu near-duplicates, %llu inserted (%llu replaced, %llu "
               "skipped for their id); %s holds %zu documents\n",
               what, static_cast<unsigned long long>(st.documents), static_cast<unsigned long long>(st.empty),
               static_cast<unsigned long long>(st.duplicates), static_cast<unsigned long long>(st.inserted),
               static_cast<unsigned long long>(st.replaced), static_cast<unsigned long long>(st.id_skipped), path.c_str(),
               idx.size());
}

int run_create(const CLI::App* cmd, const IndexOptions& o) {
  const PipelineSpec spec = make_spec(cmd, o.common);
  struct stat st {};
  if (!o.force && ::stat(o.index.c_str(), &st) == 0)
    throw UsageError(o.index + ": already exists; pass --force to replace it with an empty index");
  const auto idx = NearDupIndex::create(o.index, spec, lock_wait(o.common.wait_lock, o.common.quiet, o.index));
  if (!o.common.quiet) std::fprintf(stderr, "neardup: created %s [%s]\n", o.index.c_str(), idx->spec().to_string().c_str());
  return kExitOk;
}

int run_add(const CLI::App* cmd, const IndexOptions& o) {
  auto idx = NearDupIndex::open_for_update(o.index, lock_wait(o.common.wait_lock, o.common.quiet, o.index));
  io::InputSet in(o.common.inputs, o.common.reader);
  check_output_paths(in, {{o.index, "the index"}, {o.dedup ? o.output : std::string(), "--output"}, {o.common.rejects, "--rejects"}});
  io::ReaderOptions reader = o.common.reader;
  RejectsFile rejects;
  rejects.open(o.common.rejects, reader);
  std::unique_ptr<io::AtomicFile> out;
  if (o.dedup) out = open_output(o.output);
  WalkOptions w;
  w.threshold = idx->spec().threshold;
  w.on_duplicate_id = o.on_duplicate_id;
  w.threads = threads_of(o.common);
  w.insert_new = true;
  std::string line;
  // Without --dedup every document is added: the threshold is above any similarity.
  if (!o.dedup) w.threshold = 2.0;
  const WalkStats st = index_walk(*idx, in, reader, w, [&](const WalkRecord& r) {
    if (!out || !r.best()) return;
    line.assign(r.record.id).push_back('\t');
    line.append(idx->id(r.best()->doc)).push_back('\t');
    io::append_similarity(line, r.best()->similarity);
    line.push_back('\n');
    out->write(line);
  });
  // The index is replaced only after the walk's output is complete, together with the outputs.
  const auto index_file = idx->write_file();
  io::AtomicFile* const all[] = {out.get(), rejects.file(), index_file.get()};
  io::commit_together(all);
  if (!o.common.quiet) print_input_warnings(st.reader, st.documents, in.left_out(), cmd, reader);
  print_walk("index add", st, *idx, o.index, o.common.quiet);
  return kExitOk;
}

// What each input document asks: its near-duplicates at a Jaccard threshold (through the bands),
// the indexed documents containing it, or its most similar ones (both exact).
WalkOptions query_walk(const CLI::App* cmd, const IndexOptions& o, const NearDupIndex& idx) {
  const size_t asks = cmd->count("--threshold") + cmd->count("--containment") + cmd->count("--top");
  if (asks > 1) throw UsageError("index query: --threshold, --containment and --top exclude each other; give one");
  WalkOptions w;
  w.insert_new = false;
  w.skip_same_id = o.skip_same_id;
  w.threads = threads_of(o.common);
  if (cmd->count("--containment")) {
    w.kind = IndexQuery::Kind::Containing;
    w.threshold = o.containment;
  } else if (cmd->count("--top")) {
    w.kind = IndexQuery::Kind::Top;
    w.top = o.top;
  } else {
    w.threshold = cmd->count("--threshold") ? o.common.threshold : idx.spec().threshold;
    warn_below_build_threshold(idx, o.index, w.threshold, o.common.quiet);
  }
  return w;
}

int run_query(const CLI::App* cmd, const IndexOptions& o) {
  auto idx = NearDupIndex::open(o.index);
  const WalkOptions w = query_walk(cmd, o, *idx);
  io::InputSet in(o.common.inputs, o.common.reader);
  check_output_paths(in, {{o.output, "--output"}, {o.common.rejects, "--rejects"}}, {{o.index, "the index"}});
  io::ReaderOptions reader = o.common.reader;
  RejectsFile rejects;
  rejects.open(o.common.rejects, reader);
  const auto out_file = open_output(o.output);
  io::AtomicFile& out = *out_file;
  std::string line;
  uint64_t lines = 0;
  const WalkStats st = index_walk(*idx, in, reader, w, [&](const WalkRecord& r) {
    for (const IndexMatch& m : r.matches) {
      line.assign(r.record.id).push_back('\t');
      line.append(idx->id(m.doc)).push_back('\t');
      io::append_similarity(line, m.similarity);
      line.push_back('\n');
      out.write(line);
      ++lines;
    }
  });
  io::AtomicFile* const all[] = {&out, rejects.file()};
  io::commit_together(all);
  if (!o.common.quiet) print_input_warnings(st.reader, st.documents, in.left_out(), cmd, reader);
  if (!o.common.quiet)
    std::fprintf(stderr, "neardup: index query: %llu documents, %llu with answers in %s (%zu documents), %llu lines\n",
                 static_cast<unsigned long long>(st.documents), static_cast<unsigned long long>(st.duplicates),
                 o.index.c_str(), idx->size(), static_cast<unsigned long long>(lines));
  return kExitOk;
}

int run_remove(const IndexOptions& o) {
  std::vector<std::string> ids = o.ids;
  if (!o.ids_from.empty()) {
    std::ifstream f(o.ids_from);
    if (!f) throw IoError(o.ids_from + ": cannot read the list of ids; check the path");
    for (std::string line; std::getline(f, line);)
      if (!line.empty()) ids.push_back(line);
  }
  if (ids.empty()) throw UsageError("index remove: give the ids to remove, or --ids-from FILE");
  auto idx = NearDupIndex::open_for_update(o.index, lock_wait(o.common.wait_lock, o.common.quiet, o.index));
  const size_t found = idx->remove(ids);
  idx->save();
  if (!o.common.quiet)
    std::fprintf(stderr, "neardup: index remove: %zu of %zu ids found and removed; %s holds %zu documents\n", found,
                 ids.size(), o.index.c_str(), idx->size());
  if (found < ids.size())
    std::fprintf(stderr, "neardup: warning: %zu ids were not in the index\n", ids.size() - found);
  return kExitOk;
}

int run_fold(const IndexOptions& o) {
  LiveIndexOptions lo;
  lo.salvage_log = o.salvage;
  auto live = LiveIndex::open(o.index, lo, lock_wait(o.common.wait_lock, o.common.quiet, o.index));
  const LiveStats before = live->stats();
  live->close();
  if (!o.common.quiet)
    std::fprintf(stderr, "neardup: index fold: %llu changes from %s folded into %s (%llu documents)\n",
                 static_cast<unsigned long long>(before.replayed), LiveIndex::log_path(o.index).c_str(), o.index.c_str(),
                 static_cast<unsigned long long>(before.documents));
  if (before.salvaged_bytes > 0)  // said even with -q: changes were lost
    std::fprintf(stderr, "neardup: warning: %llu damaged bytes of %s were dropped; the changes they held are lost\n",
                 static_cast<unsigned long long>(before.salvaged_bytes), LiveIndex::log_path(o.index).c_str());
  return kExitOk;
}

int run_verify(const IndexOptions& o) {
  auto idx = NearDupIndex::open(o.index);
  idx->verify();
  if (!o.common.quiet)
    std::fprintf(stderr, "neardup: index verify: %s is whole (%zu documents, every section and set checksum holds)\n", o.index.c_str(),
                 idx->size());
  return kExitOk;
}

int run_stats(const IndexOptions& o) {
  auto idx = NearDupIndex::open(o.index);
  const IndexStats s = idx->stats();
  const double per_doc = s.documents ? static_cast<double>(s.file_bytes) / static_cast<double>(s.documents) : 0.0;
  const LshParams p = idx->spec().lsh;
  if (o.json) {
    std::printf("{\"documents\": %llu, \"file_bytes\": %llu, \"bytes_per_document\": %.1f, \"id_bytes\": %llu, "
                "\"signature_bytes\": %llu, \"band_bytes\": %llu, \"set_bytes\": %llu, \"shingles\": %llu, "
                "\"largest_bucket\": %llu, \"format_version\": %u, \"spec\": \"%s\"}\n",
                static_cast<unsigned long long>(s.documents), static_cast<unsigned long long>(s.file_bytes), per_doc,
                static_cast<unsigned long long>(s.id_bytes), static_cast<unsigned long long>(s.signature_bytes),
                static_cast<unsigned long long>(s.band_bytes), static_cast<unsigned long long>(s.set_bytes),
                static_cast<unsigned long long>(s.shingles), static_cast<unsigned long long>(s.largest_bucket),
                kIndexFormatVersion, idx->spec().to_string().c_str());
    return kExitOk;
  }
  std::printf("index:         %s (format version %u)\n", o.index.c_str(), kIndexFormatVersion);
  std::printf("spec:          %s\n", idx->spec().to_string().c_str());
  std::printf("documents:     %llu\n", static_cast<unsigned long long>(s.documents));
  std::printf("file:          %llu bytes (%.1f per document)\n", static_cast<unsigned long long>(s.file_bytes), per_doc);
  std::printf("  ids:         %llu bytes\n", static_cast<unsigned long long>(s.id_bytes));
  std::printf("  signatures:  %llu bytes (%d values of 4 bytes per document)\n",
              static_cast<unsigned long long>(s.signature_bytes), idx->spec().num_perm);
  std::printf("  bands:       %llu bytes (%d bands of %d rows, 12 bytes per document per band)\n",
              static_cast<unsigned long long>(s.band_bytes), p.bands, p.rows);
  std::printf("  sets:        %llu bytes (%llu shingles; %s)\n", static_cast<unsigned long long>(s.set_bytes),
              static_cast<unsigned long long>(s.shingles),
              idx->spec().verify == VerifyMode::Exact ? "exact verification" : "none: estimate verification");
  std::printf("largest bucket: %llu documents\n", static_cast<unsigned long long>(s.largest_bucket));
  return kExitOk;
}

}  // namespace

LockWait lock_wait(bool wait, bool quiet, const std::string& index) {
  LockWait w;
  w.wait = wait;
  if (wait && !quiet)
    w.waiting = [index, told = std::make_shared<bool>(false)](const std::string& holder) {
      if (*told) return;
      *told = true;
      std::fprintf(stderr, "neardup: waiting for %s, which %s is changing (Ctrl-C stops)\n", index.c_str(), holder.c_str());
    };
  return w;
}

void add_wait_flag(CLI::App* cmd, bool& wait) {
  cmd->add_flag("--wait", wait,
                "If another process is changing the index (neardup serve, index add, a Python writer), wait for it to "
                "finish rather than stop at once with exit 4");
}

int run_dedup_against(const CLI::App* cmd, const Options& o) {
  const std::string& against = o.against;
  const bool add_kept = o.add_kept;
  auto idx = add_kept ? NearDupIndex::open_for_update(against, lock_wait(o.wait_lock, o.quiet, against)) : NearDupIndex::open(against);
  // The documents are sketched as the index's were: a flag that says otherwise is an error.
  const PipelineSpec& is = idx->spec();
  const PipelineSpec given = make_spec(cmd, o);
  const auto differs = [&](const char* flag, bool same) {
    if (cmd->count(flag) && !same)
      throw UsageError(std::string(flag) + " differs from the index " + against + ", built with '" + is.to_string() +
                       "'; drop the flag (the index's parameters apply)");
  };
  differs("--shingle", given.shingle.k == is.shingle.k && given.shingle.kind == is.shingle.kind);
  differs("--chars", given.shingle.k == is.shingle.k && given.shingle.kind == is.shingle.kind);
  differs("--num-perm", given.num_perm == is.num_perm);
  differs("--bands", given.lsh == is.lsh);
  differs("--rows", given.lsh == is.lsh);
  differs("--seed", given.shingle.seed == is.shingle.seed);
  differs("--method", given.method == is.method);
  differs("--normalize", given.shingle.normalize == is.shingle.normalize);
  differs("--words", given.shingle.word_break == is.shingle.word_break);
  differs("--verify", given.verify == is.verify);
  differs("--spec", given.shingle.k == is.shingle.k && given.num_perm == is.num_perm && given.shingle.seed == is.shingle.seed);
  if (!o.clusters.empty()) throw UsageError("--clusters does not apply with --against (removed documents name their match in --removed)");
  io::InputSet in(o.inputs, o.reader);
  if (!in.all_jsonl() && !in.all_text())
    throw UsageError("dedup cannot mix JSONL and plain-text inputs in one run; run it once per kind, or force one with --format");
  const size_t indexed = idx->slots();
  if (!o.output_dir.empty()) throw UsageError("--output-dir applies to runs without --against; give -o FILE");
  std::vector<io::NamedPath> outputs = {{o.output, "--output"}, {o.removed, "--removed"}, {o.rejects, "--rejects"}};
  std::vector<io::NamedPath> read_only;
  (add_kept ? outputs : read_only).push_back({against, "the index"});
  check_output_paths(in, outputs, read_only);
  io::ReaderOptions reader = o.reader;
  RejectsFile rejects;
  rejects.open(o.rejects, reader);
  const auto out_file = open_output(o.output);
  io::AtomicFile& out = *out_file;
  std::unique_ptr<io::AtomicFile> removed;
  if (!o.removed.empty()) removed = open_output(o.removed);
  WalkOptions w;
  w.threshold = cmd->count("--threshold") ? o.threshold : is.threshold;
  warn_below_build_threshold(*idx, o.against, w.threshold, o.quiet);
  w.insert_new = true;  // later documents of NEW are compared with the kept earlier ones
  if (o.on_duplicate_id == "keep")
    throw UsageError("--on-duplicate-id keep applies without --against; with an index it is error, skip or replace");
  const OnDuplicateId policy = o.on_duplicate_id == "skip"      ? OnDuplicateId::Skip
                               : o.on_duplicate_id == "replace" ? OnDuplicateId::Replace
                                                                : OnDuplicateId::Error;
  w.on_duplicate_id = add_kept ? policy : OnDuplicateId::Skip;
  w.threads = threads_of(o);
  std::string line;
  const WalkStats st = index_walk(*idx, in, reader, w, [&](const WalkRecord& r) {
    const IndexMatch* m = r.best();
    if (!m) {
      out.write(r.record.raw);
      out.put('\n');
      return;
    }
    if (!removed) return;
    line.assign(r.record.id).push_back('\t');
    line.append(idx->id(m->doc)).push_back('\t');
    io::append_similarity(line, m->similarity);
    line.append(m->doc < indexed ? "\tindex\n" : "\tinput\n");
    removed->write(line);
  });
  const auto index_file = add_kept ? idx->write_file() : nullptr;
  io::AtomicFile* const all[] = {&out, removed.get(), rejects.file(), index_file.get()};
  io::commit_together(all);
  if (!o.quiet) print_input_warnings(st.reader, st.documents, in.left_out(), cmd, reader);
  if (!o.quiet)
    std::fprintf(stderr, "neardup: dedup --against %s: %llu documents, %llu removed, %llu kept%s\n", against.c_str(),
                 static_cast<unsigned long long>(st.documents), static_cast<unsigned long long>(st.duplicates),
                 static_cast<unsigned long long>(st.documents - st.duplicates),
                 add_kept ? (", added to the index (now " + std::to_string(idx->size()) + " documents)").c_str() : "");
  return kExitOk;
}

void add_index(CLI::App& app, std::function<int()>& run) {
  CLI::App* index = app.add_subcommand("index", "A persistent near-duplicate index: create, add, query, remove, stats, fold, verify");
  index->require_subcommand(1);

  auto c = std::make_shared<IndexOptions>();
  CLI::App* create = index->add_subcommand("create", "Create an empty index with the sketch, shingle and threshold options of pairs");
  create->add_option("index", c->index, "Index file")->required();
  add_sketch_options(create, c->common, true);
  create->add_flag("--force", c->force, "Replace an existing index");
  add_wait_flag(create, c->common.wait_lock);
  create->add_flag("-q,--quiet", c->common.quiet, "No summary on stderr");
  create->callback([&run, create, c] { run = [=] { return run_create(create, *c); }; });

  auto a = std::make_shared<IndexOptions>();
  CLI::App* add = index->add_subcommand("add", "Add documents; with --dedup, only those that are not near-duplicates of indexed ones");
  add->add_option("index", a->index, "Index file")->required();
  add->add_option("inputs", a->common.inputs, "JSONL files (optionally .gz/.zst/.xz/.bz2), plain-text files, directories, or - for stdin")->required();
  add->add_flag("--dedup", a->dedup,
                "Query each document first, in order, and add it only if it has no near-duplicate (the online walk); "
                "write new_id TAB indexed_id TAB similarity for the others");
  add->add_option("-o,--output", a->output, "With --dedup: where to write what duplicated what (default: stdout)");
  add_on_duplicate_id(add, a->on_duplicate_id);
  add_wait_flag(add, a->common.wait_lock);
  add_reader_options(add, a->common);
  add_run_options(add, a->common);
  add->callback([&run, add, a] { run = [=] { return run_add(add, *a); }; });

  auto q = std::make_shared<IndexOptions>();
  CLI::App* query = index->add_subcommand("query", "For each input document, its near-duplicates in the index: query_id TAB index_id TAB similarity");
  query->add_option("index", q->index, "Index file")->required();
  query->add_option("inputs", q->common.inputs, "JSONL files (optionally .gz/.zst/.xz/.bz2), plain-text files, directories, or - for stdin")->required();
  query->add_option("-t,--threshold", q->common.threshold, "Similarity threshold (default: the index's)")->check(unit_interval());
  query->add_option("-o,--output", q->output, "Output file (default: stdout)");
  query->add_option("--containment", q->containment,
                     "Instead of near-duplicates: the indexed documents holding at least this share of the query's "
                     "shingles, scored by that share (exact)")
      ->check(rule_check("containment"));
  query->add_option("--top", q->top, "Instead of near-duplicates: the K indexed documents of highest Jaccard, best first (exact)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  query->add_flag("--skip-same-id", q->skip_same_id, "Do not report an indexed document with the query's own id");
  add_reader_options(query, q->common);
  add_run_options(query, q->common);
  query->callback([&run, query, q] { run = [=] { return run_query(query, *q); }; });

  auto r = std::make_shared<IndexOptions>();
  CLI::App* remove = index->add_subcommand("remove", "Remove documents by id");
  remove->add_option("index", r->index, "Index file")->required();
  remove->add_option("ids", r->ids, "Document ids");
  remove->add_option("--ids-from", r->ids_from, "A file of ids, one per line");
  remove->add_flag("-q,--quiet", r->common.quiet, "No summary on stderr");
  add_wait_flag(remove, r->common.wait_lock);
  remove->callback([&run, r] { run = [=] { return run_remove(*r); }; });

  auto s = std::make_shared<IndexOptions>();
  CLI::App* stats = index->add_subcommand("stats", "Print what an index holds and its size");
  stats->add_option("index", s->index, "Index file")->required();
  stats->add_flag("--json", s->json, "One JSON object");
  stats->add_flag("-q,--quiet", s->common.quiet, "No messages on stderr (it prints none but errors)");
  stats->callback([&run, s] { run = [=] { return run_stats(*s); }; });

  auto f = std::make_shared<IndexOptions>();
  CLI::App* fold = index->add_subcommand("fold", "Fold the changes of a service's write-ahead log (INDEX.wal) into the index file");
  fold->add_option("index", f->index, "Index file")->required();
  fold->add_flag("-q,--quiet", f->common.quiet, "No summary on stderr");
  fold->add_flag("--salvage", f->salvage,
                 "Fold a log damaged inside its synced records: every whole record is folded, the damaged bytes dropped");
  add_wait_flag(fold, f->common.wait_lock);
  fold->callback([&run, f] { run = [=] { return run_fold(*f); }; });

  auto v = std::make_shared<IndexOptions>();
  CLI::App* verify = index->add_subcommand("verify", "Check every checksum of an index (its layout, every section, every shingle set)");
  verify->add_option("index", v->index, "Index file")->required();
  verify->add_flag("-q,--quiet", v->common.quiet, "No summary on stderr");
  verify->callback([&run, v] { run = [=] { return run_verify(*v); }; });
}

}  // namespace neardup::cli
