// `neardup pairs` and `neardup dedup`: the same pipeline, two kinds of output.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "json.h"
#include "options.h"
#include "neardup/neardup.h"

namespace neardup::cli {

void add_sketch_options(CLI::App* cmd, Options& o, bool index) {
  cmd->add_option("-t,--threshold", o.threshold, "Keep pairs with Jaccard similarity >= T")
      ->default_val(kDefaultThreshold)->check(unit_interval());
  cmd->add_option("-k,--shingle", o.shingle, "Words per shingle (word K-shingles)")
      ->default_val(kDefaultShingle)->check(rule_check("shingle"));
  cmd->add_option("--chars", o.chars, "Use character N-gram shingles instead of words (for scripts without spaces, very short texts)")
      ->check(rule_check("chars"));
  cmd->add_option("--normalize", o.normalize,
                  "nfkc: compare texts after Unicode NFKC normalisation with case and accent folding (NFC and NFD, "
                  "full-width and ASCII letters, 'café' and 'cafe' become the same words); changes the word "
                  "definition, so indexes built without it do not match")
      ->check(CLI::IsMember({"none", "nfkc"}))
      ->default_str("none");
  cmd->add_option("--words", o.words,
                  "How words are found: simple (runs of letters, marks and digits; fastest) or icu (ICU's dictionary "
                  "word break, for Chinese, Japanese, Thai and other scripts written without spaces; slower)")
      ->check(CLI::IsMember({"simple", "icu"}))
      ->default_str("simple");
  if (index) {
    add_choice<SketchMethod>(cmd, "--method", o.method, {{"minhash", SketchMethod::MinHash}, {"oph", SketchMethod::Oph}},
                             "Sketch: minhash (k-permutation MinHash) or oph (one-permutation hashing with densification; one "
                             "hash per shingle), with LSH bands");
  } else {
  add_choice<SketchMethod>(cmd, "--method", o.method, {{"minhash", SketchMethod::MinHash}, {"oph", SketchMethod::Oph}, {"bottomk", SketchMethod::BottomK}, {"simhash", SketchMethod::SimHash}, {"exact", SketchMethod::Exact}},
                            "Sketch: minhash (k-permutation MinHash + LSH), oph (one-permutation hashing with densification + LSH; "
                  "one hash per shingle), bottomk (bottom-k MinHash + exact all-pairs join), simhash (64-bit SimHash + permuted tables) or "
                  "exact (no sketch: every pair with J >= T by an exact join of the shingle sets; holds every set in memory)");
  cmd->add_option("--hamming", o.hamming, "Largest Hamming distance between SimHashes of a pair (--method simhash)")
      ->default_val(kDefaultHamming)->check(rule_check("hamming"));
  add_choice<SimHashWeights>(cmd, "--weights", o.weights, {{"tf", SimHashWeights::Tf}, {"set", SimHashWeights::Set}, {"logtf", SimHashWeights::LogTf}},
                            "SimHash feature weights: set (each distinct shingle once), tf (each occurrence; fastest), logtf (1 + ln tf)");
  cmd->add_option("--sketch-size", o.sketch_size, "Values per bottom-k fingerprint (--method bottomk)")
      ->default_val(kDefaultSketchSize)->check(rule_check("sketch_size"));
  }
  cmd->add_option("--num-perm", o.num_perm, "Signature length: MinHash permutations (--method minhash) or OPH bins (--method oph)")
      ->default_val(kDefaultNumPerm)->check(rule_check("num_perm"));
  cmd->add_option("--bands", o.bands, "LSH bands (with --rows; default: chosen from the threshold)")->check(rule_check("bands"));
  cmd->add_option("--rows", o.rows, "LSH rows per band (with --bands)")->check(rule_check("rows"));
  cmd->add_option("--seed", o.seed, "Seed of every hash (sketches from different seeds are not comparable)")
      ->default_val(kDefaultSeed);
  cmd->add_option("--spec", o.spec, "Pipeline spec, e.g. 'words:5 minhash:128 lsh:21x6 verify:0.8'; explicit flags override it");
  add_choice<VerifyMode>(cmd, "--verify", o.verify, {{"exact", VerifyMode::Exact}, {"estimate", VerifyMode::Estimate}},
                            index ? "exact: Jaccard of the shingle sets (the index keeps them); estimate: from signatures"
                                  : "exact: Jaccard of the shingle sets (re-reads the candidates); estimate: from signatures "
                                    "(default with simhash, unless --threshold is given: 1 - d/64)");
}

void add_no_mmap_flag(CLI::App* cmd, io::ReaderOptions& reader) {
  auto* never = cmd->add_flag_callback("--no-mmap", [&reader] { reader.memory_map = io::MemoryMap::Never; },
                                       "Read plain JSONL files with read(2), never mapping them into memory (for files that may be "
                                       "truncated while neardup reads them: a mapped file that shrinks ends the run with an I/O error)");
  cmd->add_flag_callback("--mmap", [&reader] { reader.memory_map = io::MemoryMap::Always; },
                         "Map plain JSONL files into memory and read them in place. Without either flag, files are mapped only "
                         "where that reads faster than read(2) on this machine (measured once per run, on the first 4 MiB "
                         "of the first file of that size)")
      ->excludes(never);
}

void add_reader_options(CLI::App* cmd, Options& o) {
  cmd->add_option("--text-field", o.reader.text_field, "JSONL field holding the text")->default_val("text");
  cmd->add_option("--id-field", o.reader.id_field, "JSONL field holding the id (missing: FILE:LINE)")->default_val("id");
  add_choice<io::InputFormat>(cmd, "--format", o.reader.format, {{"auto", io::InputFormat::Auto}, {"jsonl", io::InputFormat::Jsonl}, {"text", io::InputFormat::Text}},
                            "Input format: auto (by extension: .jsonl/.ndjson/.json, then .gz/.zst/.xz/.bz2, are JSONL), jsonl, text");
  cmd->add_option("--include", o.reader.include,
                  "In directories: read only files matching this glob (repeatable; without '/' it matches the name, "
                  "with '/' the path inside the directory)");
  cmd->add_option("--exclude", o.reader.exclude, "In directories: leave out files and folders matching this glob (repeatable)");
  cmd->add_flag("--hidden", o.reader.hidden, "In directories: also read hidden files and folders (names starting with '.')");
  cmd->add_option("--rejects", o.rejects,
                  "With --on-error skip: write each skipped record to this file as a JSON line with its input, line, "
                  "kind and reason");
  add_choice<io::OnError>(cmd, "--on-error", o.reader.on_error, {{"fail", io::OnError::Fail}, {"skip", io::OnError::Skip}},
                            "Bad records: fail (stop with an error) or skip (count and go on)");
  cmd->add_option("--max-record-bytes", o.reader.max_record_bytes,
                  "Longest JSONL line or text file read (decompressed; K/M/G suffixes); a longer one is a bad record, "
                  "never held in memory (guards against files without newlines and decompression bombs)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t{1}, io::kMaxRecordBytes))
      ->default_str("1G");
  cmd->add_option("--max-doc-bytes", o.reader.max_doc_bytes,
                  "Longest text sketched and verified (K/M/G suffixes); see --long-docs")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t{1}, io::kMaxRecordBytes))
      ->default_str("64M");
  add_no_mmap_flag(cmd, o.reader);
  add_choice<io::LongDocs>(cmd, "--long-docs", o.reader.long_docs, {{"truncate", io::LongDocs::Truncate}, {"skip", io::LongDocs::Skip}},
                            "A text longer than --max-doc-bytes: truncate (its first bytes are compared; the record is output "
                  "unchanged) or skip (a bad record, see --on-error)");
}

void add_run_options(CLI::App* cmd, Options& o) {
  cmd->add_option("-j,--threads", o.threads, "Worker threads (default, or 0: all cores)")->check(rule_check("threads"));
  cmd->add_flag("-q,--quiet", o.quiet, "No progress bar, warnings or summary on stderr");
  cmd->add_flag("--stats", o.show_stats, "Also print the time of each stage and the kernel used");
}

void check_output_paths(const io::InputSet& inputs, const std::vector<io::NamedPath>& outputs,
                        const std::vector<io::NamedPath>& extra_inputs) {
  std::vector<io::NamedPath> ins = extra_inputs;
  for (const io::Source& s : inputs.sources())
    if (s.display != "<stdin>") ins.push_back({s.path, "the input"});
  std::vector<io::NamedPath> outs;
  for (const io::NamedPath& o : outputs)
    if (!o.path.empty() || o.role == "--output") outs.push_back({o.path.empty() ? "-" : o.path, o.role});
  io::check_outputs(ins, outs);
}

std::unique_ptr<io::AtomicFile> open_output(const std::string& path) {
  return std::make_unique<io::AtomicFile>(path.empty() ? "-" : path, io::OutputCompression::ByName);
}

void RejectsFile::open(const std::string& path, io::ReaderOptions& reader) {
  if (path.empty()) return;
  path_ = path;
  reader.on_reject = [this](const io::Rejected& r) {
    if (!file_) file_ = open_output(path_);
    line_.assign("{\"input\": ");
    append_json_string(line_, valid_utf8(r.input) ? r.input : std::string_view("(not UTF-8)"));
    line_ += ", \"line\": " + std::to_string(r.line) + ", \"byte\": " + std::to_string(r.offset) + ", \"kind\": ";
    append_json_string(line_, cli::flag_text(r.kind));
    line_ += ", \"reason\": ";
    append_json_string(line_, valid_utf8(r.reason) ? cli::flag_text(r.reason) : std::string("(not UTF-8)"));
    if (r.has_record && valid_utf8(r.record)) {
      line_ += ", \"record\": ";
      append_json_string(line_, r.record);
    } else if (r.has_record) {
      line_ += ", \"record_base64\": \"";
      append_base64(line_, r.record);
      line_ += '"';
    }
    line_ += "}\n";
    file_->write(line_);
  };
}

void print_input_warnings(const io::ReaderStats& s, uint64_t documents, const io::WalkCounts& w, const CLI::App* cmd,
                          const io::ReaderOptions& reader) {
  for (const auto& m : s.first_skips) std::fprintf(stderr, "neardup: warning: skipped %s\n", cli::flag_text(m).c_str());
  if (s.skipped > s.first_skips.size())
    std::fprintf(stderr, "neardup: warning: ... and %llu more bad records skipped\n",
                 static_cast<unsigned long long>(s.skipped - s.first_skips.size()));
  if (s.skipped > 0) {
    std::string kinds;
    for (const auto& [kind, n] : s.skip_kinds) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + cli::flag_text(kind);
    std::fprintf(stderr, "neardup: warning: %llu bad records skipped: %s%s\n", static_cast<unsigned long long>(s.skipped),
                 kinds.c_str(), cmd->count("--rejects") ? " (each in --rejects)" : " (--rejects FILE keeps each with its reason)");
  }
  if (w.hidden + w.excluded + s.binary + w.other > 0) {
    std::string parts;
    auto add = [&](uint64_t n, const char* what) {
      if (n) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    add(w.hidden, "hidden files or folders (--hidden reads them)");
    add(s.binary, "binary files");
    add(w.excluded, "excluded by --include/--exclude");
    add(w.other, "special files (FIFOs, sockets, devices)");
    std::fprintf(stderr, "neardup: left out of the folders: %s\n", parts.c_str());
  }
  if (cmd->count("--id-field") && s.missing_ids > 0) {
    if (s.missing_ids == documents)
      std::fprintf(stderr, "neardup: warning: no record has the id field \"%s\"; every record is named FILE:LINE (check the field's name)\n",
                   reader.id_field.c_str());
    else
      std::fprintf(stderr, "neardup: warning: %llu records have no id field \"%s\" and are named FILE:LINE\n",
                   static_cast<unsigned long long>(s.missing_ids), reader.id_field.c_str());
  }
}

// Which document of a cluster is kept, and how clusters are formed (dedup only).
void add_keep_options(CLI::App* cmd, Options& o) {
  add_choice<KeepPolicy>(cmd, "--keep", o.keep, {{"first", KeepPolicy::First}, {"longest", KeepPolicy::Longest}},
                            "Which document of a cluster is kept: first (input order) or longest");
  cmd->add_option("--keep-by", o.keep_by,
                  "Keep the document of a cluster with the largest value of this JSONL field (numbers, or strings such "
                  "as ISO dates); FIELD:asc keeps the smallest. Records without it come last; ties by input order");
  add_choice<ClusterMode>(cmd, "--cluster", o.cluster, {{"components", ClusterMode::Components}, {"leader", ClusterMode::Leader}},
                            "components: connected components of the verified pairs (a removed document may be less similar "
                  "than T to the kept one, through a chain); leader: every removed document has J >= T with the "
                  "document kept in its place");
}

void add_pairs_dedup_options(CLI::App* cmd, Options& o, bool against) {
  cmd->add_option("inputs", o.inputs,
                  "JSONL files (.jsonl/.ndjson/.json, optionally .gz/.zst/.xz/.bz2), plain-text files, directories, or - for stdin")
      ->required();
  add_sketch_options(cmd, o);
  if (against)
    cmd->add_option("--on-duplicate-id", o.on_duplicate_id,
                    "Two records with one id: error (stop, naming both) or keep (separate documents). With --against: "
                    "a document whose id is already indexed: error, skip (keep the indexed one) or replace it")
        ->check(CLI::IsMember({"error", "keep", "skip", "replace"}))
        ->default_str("error");
  else
    cmd->add_option("--on-duplicate-id", o.on_duplicate_id, "Two records with one id: error (stop, naming both) or keep (separate documents)")
        ->check(CLI::IsMember({"error", "keep"}))
        ->default_str("error");
  add_reader_options(cmd, o);
  add_run_options(cmd, o);
  cmd->add_option("--report", o.report,
                  "Write an HTML report of the run to FILE.html (one self-contained page: similarities, clusters, the "
                  "S-curve against the measured rate, documents side by side)");
  cmd->add_flag("--estimate-memory", o.estimate_memory,
                "Print the expected memory of the run, estimated from a 4 MB sample of the inputs, and stop (it is "
                "printed before every run over 256 MB of input, unless --quiet)");
  cmd->add_option("--memory-limit", o.memory_limit,
                  "The most memory the run should take (K/M/G suffixes; default: 80% of the memory available). With "
                  "minhash or oph and exact verification, a run expected to take more keeps its LSH band keys in "
                  "$TMPDIR instead (8 bytes per band and document; the same outputs)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
}

// How often an option was given; 0 also when the command does not have it.
size_t given(const CLI::App* cmd, const char* name) {
  const CLI::Option* opt = cmd->get_option_no_throw(name);
  return opt ? opt->count() : 0;
}

PipelineSpec make_spec(const CLI::App* cmd, const Options& o) {
  PipelineSpec s = o.spec.empty() ? PipelineSpec{} : PipelineSpec::parse(o.spec);
  const bool given_spec = !o.spec.empty();
  auto set = [&](const char* name) { return !given_spec || given(cmd, name) > 0; };
  if (set("--threshold")) s.threshold = o.threshold;
  if (given(cmd, "--chars")) {
    s.shingle.kind = ShingleKind::Chars;
    s.shingle.k = o.chars;
  } else if (set("--shingle")) {
    s.shingle.k = o.shingle;
  }
  if (set("--normalize")) s.shingle.normalize = o.normalize == "nfkc" ? Normalization::Nfkc : Normalization::None;
  if (set("--words")) s.shingle.word_break = o.words == "icu" ? WordBreak::Icu : WordBreak::Simple;
  if (s.shingle.word_break == WordBreak::Icu && s.shingle.kind == ShingleKind::Chars)
    throw UsageError("--words icu finds words; it does not apply with --chars");
  if (set("--method")) s.method = o.method;
  if (set("--num-perm")) s.num_perm = o.num_perm;
  if (set("--sketch-size")) s.sketch_size = o.sketch_size;
  if (set("--hamming")) s.hamming = o.hamming;
  if (set("--weights")) s.weights = o.weights;
  if (!uses_signatures(s.method) && given(cmd, "--num-perm"))
    throw UsageError("--num-perm applies to --method minhash and oph; bottomk takes --sketch-size, simhash --hamming");
  if (s.method != SketchMethod::BottomK && given(cmd, "--sketch-size"))
    throw UsageError("--sketch-size applies to --method bottomk; minhash takes --num-perm, simhash --hamming");
  if (s.method != SketchMethod::SimHash && (given(cmd, "--hamming") || given(cmd, "--weights")))
    throw UsageError("--hamming and --weights apply to --method simhash");
  if (given(cmd, "--seed")) s.shingle.seed = o.seed;
  if (set("--verify")) s.verify = o.verify;
  // SimHash: without --verify, pairs within the distance are scored 1 - d/64, unless a Jaccard
  // threshold asks for exact verification; scored by the estimate, the threshold follows the
  // distance unless given.
  if (s.method == SketchMethod::SimHash) {
    const bool cli_threshold = given(cmd, "--threshold") > 0;
    if (!given_spec && !given(cmd, "--verify")) s.verify = cli_threshold ? VerifyMode::Exact : VerifyMode::Estimate;
    if (s.verify == VerifyMode::Estimate && !cli_threshold && (!given_spec || given(cmd, "--hamming")))
      s.threshold = simhash_similarity(s.hamming);
  }
  if (given(cmd, "--bands") || given(cmd, "--rows")) {
    if (!given(cmd, "--bands") || !given(cmd, "--rows")) throw UsageError("--bands and --rows go together; give both");
    s.lsh = {o.bands, o.rows};
  }
  return s;
}

namespace {
std::string g_command_line;
}

void remember_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i) g_command_line += ' ';
    const std::string a = i == 0 ? std::filesystem::path(argv[0]).filename().string() : argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t'\"$`\\*?") != std::string::npos;
    g_command_line += quote ? "'" + a + "'" : a;
  }
}

const std::string& command_line() { return g_command_line; }

RunOptions run_options(const CLI::App* cmd, const Options& o) {
  RunOptions ro;
  ro.spec = make_spec(cmd, o);
  ro.reader = o.reader;
  ro.tuning.threads = o.threads;
  ro.keep = o.keep;
  ro.cluster = o.cluster;
  if (!o.keep_by.empty()) {
    if (given(cmd, "--keep")) throw UsageError("--keep and --keep-by exclude each other; give one");
    set_keep_by(ro, o.keep_by);
  }
  ro.duplicate_ids = o.on_duplicate_id == "keep" ? DuplicateIds::Keep : DuplicateIds::Error;
  ro.top = o.top;
  ro.measure = measure_of(o.measure);
  if (ro.measure == Measure::Containment && !o.report.empty())
    throw UsageError("--report charts Jaccard similarities and the LSH S-curve; it does not describe --measure containment "
                     "(leave out one of the two)");
  // Containment is found by the exact join alone: it is the method unless another is named.
  if (ro.measure == Measure::Containment && !given(cmd, "--method") && o.spec.empty()) ro.spec.method = SketchMethod::Exact;
  ro.tuning.stream_pairs = true;  // pairs within clusters are verified as they are written, not held
  // `pairs` writes pairs, and clusters them only for its report.
  ro.tuning.cluster_pairs = !o.report.empty();
  // A run that would not fit spills rather than fails: by default the limit is most of the
  // memory available now.
  ro.tuning.memory_limit = o.memory_limit > 0 ? o.memory_limit : default_memory_limit();
  if (o.top > 0 && ro.spec.method != SketchMethod::BottomK)
    throw UsageError("--top needs --method bottomk (minhash and simhash find the pairs above a threshold only)");
  return ro;
}

void check_output_flags(const Options& o, bool dedup) {
  if (dedup && o.output.empty() && o.output_dir.empty() && !o.estimate_memory)
    throw UsageError("dedup needs -o/--output FILE (or - for stdout) or --output-dir DIR for the kept records");
  if (!o.output_dir.empty() && !o.output.empty())
    throw UsageError("-o/--output and --output-dir exclude each other: one file for all kept records, or one per input file");
  if (!o.rejects.empty() && o.reader.on_error != io::OnError::Skip)
    throw UsageError("--rejects applies with --on-error skip (without it, the first bad record stops the run)");
}

std::vector<std::string> output_dir_paths(const io::InputSet& inputs, const std::string& dir) {
  if (!inputs.all_jsonl())
    throw UsageError("--output-dir writes JSONL records per input file; the inputs include plain-text files (use -o for the list of kept paths)");
  std::vector<std::string> paths;
  std::map<std::string, std::string> seen;
  for (const io::Source& src : inputs.sources()) {
    const std::string path = (std::filesystem::path(dir) / src.name).lexically_normal().string();
    auto [it, fresh] = seen.emplace(path, src.display);
    if (!fresh)
      throw UsageError("--output-dir: " + it->second + " and " + src.display + " would both be written to " + path +
                       "; give inputs with distinct names, or run once per folder");
    paths.push_back(path);
  }
  return paths;
}

namespace {

// 1234567 -> "1.2 MB", decimal units as `ls -h --si` and the progress bar print them.
std::string human_bytes(double b) {
  static const char* const units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 || b >= 100 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

// 12345678 -> "12.3M".
std::string human_count(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1fG", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else if (n >= 1e4)
    std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}


// Large runs state their expected memory before they start (--estimate-memory: every run, then stop).
constexpr double kAnnounceBytes = 256.0 * (1 << 20);

void print_memory_estimate(const MemoryEstimate& m, uint64_t limit) {
  const io::InputSample& in = m.input;
  std::string line = "neardup: " + std::string(in.whole ? "" : "about ") + human_count(in.records) + (in.records == 1 ? " document, " : " documents, ") +
                     human_bytes(in.text_bytes) + " of text (" +
                     (in.whole ? std::string("read whole") : "estimated from a sample of " + human_bytes(static_cast<double>(in.sampled_bytes))) +
                     "); expected memory " + human_bytes(m.peak()) + ": " + human_bytes(m.state) + " of state (" +
                     human_bytes(m.per_document) + " per document) and " + human_bytes(m.search) + " more to find candidates";
  if (m.verify_per_document > 0)
    line += "; exact verification then adds " + human_bytes(m.verify_per_document) + " per document in a candidate pair (" +
            human_bytes(m.verify_all) + " if all were)";
  if (in.compressed_jsonl_bytes > 0)
    line += "; the compressed inputs are kept decompressed on disk in " + io::temp_directory() + " while it runs: about " +
            human_bytes(in.compressed_jsonl_bytes);
  const bool spills = m.spills_under(limit);
  if (spills)
    line += "; that is over the memory limit of " + human_bytes(static_cast<double>(limit)) +
            (m.spill_keys ? ": the document table and the band keys go to disk in " : ": the document table goes to disk in ") +
            io::temp_directory() + " (" + human_bytes(m.spill_disk) + "), and the run is expected to take " + human_bytes(m.peak_spilled()) +
            (m.peak_spilled() > static_cast<double>(limit) ? ", still over it: the rest of its state stays in memory" : "");
  std::fprintf(stderr, "%s\n", line.c_str());
  const auto avail = static_cast<double>(available_memory());
  if (avail > 0 && (spills ? m.peak_spilled() : m.peak()) > avail)
    std::fprintf(stderr,
                 "neardup: warning: that is more than the %s of memory available; fewer threads (-j) shrink the search, "
                 "--method simhash keeps 8 bytes per document, or split the input\n",
                 human_bytes(avail).c_str());
}

}  // namespace

std::string summary_counts(const SummaryCounts& c, bool pairs_mode) {
  const auto n = [](uint64_t v) { return std::to_string(v); };
  std::string out = n(c.documents) + " documents (" + n(c.empty) + " empty, " + n(c.skipped) + " skipped), ";
  if (c.shingles != UINT64_MAX) out += n(c.shingles) + " shingles, ";
  out += n(c.candidates) + " candidates, ";
  // pairs: what was written (a pairs run neither clusters nor removes; the pairs verified to
  // link clusters are the engine's, not the user's); dedup: what was verified and removed.
  if (pairs_mode) return out + n(c.pairs) + " pairs reported";
  out += n(c.verified) + " verified pairs, " + n(c.clusters) + " clusters, " + n(c.removed) + " removed";
  if (c.below > 0)
    out += " (" + n(c.below) + " less similar than the threshold to their kept document, through a chain; --cluster leader avoids it)";
  return out;
}

namespace {

// sync_seconds: the time the outputs took to commit (their fsync and rename), after the
// pipeline's own write stage: part of the run's time, and on a slow disk much of it.
void print_summary(const Pipeline& p, bool pairs_mode, bool stages, const CLI::App* cmd, const io::ReaderOptions& reader,
                   double sync_seconds, const std::string& flags) {
  {
    const RunStats& r = p.stats();
    print_input_warnings(r.reader, r.documents, r.left_out, cmd, reader);
  }
  const RunStats& s = p.stats();
  if (s.unspaced_bytes * 20 >= s.text_bytes && s.unspaced_bytes > 0)
    std::fprintf(stderr,
                 "neardup: warning: %.0f%% of the text is Chinese, Japanese, Thai or another script written without spaces: "
                 "word shingles take a whole run of it for one word and find almost no near-duplicates there; use "
                 "--words icu (dictionary word break) or --chars 3\n",
                 100.0 * static_cast<double>(s.unspaced_bytes) / static_cast<double>(std::max<uint64_t>(s.text_bytes, 1)));
  if (s.reader.invalid_utf8 > 0)
    std::fprintf(stderr, "neardup: warning: %llu records had invalid UTF-8 or lone surrogate escapes (replaced by U+FFFD)\n",
                 static_cast<unsigned long long>(s.reader.invalid_utf8));
  if (s.duplicate_ids > 0)
    std::fprintf(stderr, "neardup: warning: %llu records reuse the id of an earlier one (kept as separate documents)\n",
                 static_cast<unsigned long long>(s.duplicate_ids));
  const SummaryCounts c{s.documents, s.empty, s.reader.skipped, s.shingles, s.candidates, s.verified, s.pairs,
                        s.clusters, s.removed, s.removed_below_threshold};
  // The spec and the flags not a part of it (--top, --measure): what reproduces the run.
  const std::string how = p.spec().to_string() + "]" + flags;
  std::fprintf(stderr, "neardup: %s, %.2f s [%s\n", summary_counts(c, pairs_mode).c_str(), s.seconds + s.times.write + sync_seconds,
               how.c_str());
  if (!stages) return;
  const double mb = static_cast<double>(s.text_bytes) / 1e6;
  const StageTimes& t = s.times;
  char during[64] = "";
  if (t.write_during_run > 0) std::snprintf(during, sizeof during, " more after %.3f s during verification", t.write_during_run);
  std::fprintf(stderr,
               "neardup: stages: %.1f MB of text; read+shingle+sketch %.3f s wall (%.1f MB/s; CPU: parse %.3f s, shingle %.3f s, "
               "sketch %.3f s; %llu copies of an earlier text, verified through it); %s %.3f s; verify %.3f s (%llu groups; %llu documents re-read, %llu of them copies of a text read before, %llu sets from the first pass, %.1f MB of sets at most at once, %llu documents sharing an identical set's copy); cluster %.3f s; write %.3f s%s "
               "(then %.3f s to sync the outputs to disk); "
               "kernel %s; largest bucket %llu\n",
               mb, t.pass1, t.pass1 > 0 ? mb / t.pass1 : 0.0, t.parse, t.shingle, t.sketch, static_cast<unsigned long long>(s.text_copies),
               p.spec().method == SketchMethod::BottomK || p.spec().method == SketchMethod::Exact ? "join"
               : p.spec().method == SketchMethod::SimHash ? "tables"
                                                          : "lsh",
               t.lsh, t.verify, static_cast<unsigned long long>(s.verify_groups),
               static_cast<unsigned long long>(s.verify_docs), static_cast<unsigned long long>(s.verify_copies),
               static_cast<unsigned long long>(s.verify_kept), static_cast<double>(s.set_bytes) / 1e6,
               static_cast<unsigned long long>(s.verify_shared), t.cluster, t.write, during, sync_seconds, isa_name(active_isa()),
               static_cast<unsigned long long>(s.largest_bucket));
  if (s.copied_bytes > 0)
    std::fprintf(stderr, "neardup: compressed inputs read again from a decompressed copy of %.1f MB%s%s\n", static_cast<double>(s.copied_bytes) / 1e6,
                 s.copy_note.empty() ? "" : "; not all: ", s.copy_note.c_str());
  else if (!s.copy_note.empty())
    std::fprintf(stderr, "neardup: compressed inputs decompressed again: %s\n", s.copy_note.c_str());
}

// pairs with --report: the pairs written, and the report's histogram and borderline pairs taken
// as they go.
void write_pairs_for_report(Pipeline& pipeline, io::AtomicFile& out, ReportRun& report_run) {
  report_run.pair_bins.assign(kSimilarityBins, 0);
  const double t = pipeline.spec().threshold;
  std::vector<ScoredPair> near;
  pipeline.write_pairs(out, [&](std::span<const ScoredPair> chunk) {
    for (const ScoredPair& p : chunk) {
      ++report_run.pair_bins[similarity_bin(p.similarity)];
      if (p.similarity < t + 0.05 && near.size() < 1000) near.push_back(p);
    }
  });
  for (size_t i = 0; i < near.size(); i += std::max<size_t>(1, near.size() / 3)) report_run.borderline.push_back(near[i]);
}

int run_command(const CLI::App* cmd, const Options& o, bool dedup) {
  const bool one_heap = one_heap_for_all_threads();
  check_output_flags(o, dedup);
  if (dedup && !o.against.empty()) {
    if (o.estimate_memory) throw UsageError("--estimate-memory applies to runs without --against (they keep no per-document state)");
    if (given(cmd, "--cluster") || given(cmd, "--keep-by"))
      throw UsageError("--cluster and --keep-by apply to runs without --against (which walks the inputs in order, keeping "
                       "each document that nearly copies nothing indexed or kept before it)");
    return run_dedup_against(cmd, o);
  }
  if (dedup && given(cmd, "--add-kept")) throw UsageError("--add-kept applies with --against IDX");
  if (dedup && given(cmd, "--wait")) throw UsageError("--wait applies with --against IDX --add-kept (the runs that change an index)");
  if (o.on_duplicate_id != "error" && o.on_duplicate_id != "keep")
    throw UsageError("--on-duplicate-id " + o.on_duplicate_id + " applies with --against IDX; without it: error or keep");
  RunOptions ro = run_options(cmd, o);
  // With one heap for every thread (above), verification reuses the first pass's free memory,
  // which malloc_trim would give back only to fault it in again. The crowded mix, `pairs`: CPU
  // 3.17 against 3.47 s, page faults 6.1k against 15.0k, about the same peak (9 alternating runs).
  ro.tuning.release_memory_after_first_pass = !one_heap;
  ro.tuning.keep_sets = !o.report.empty();  // the report shows similarities within clusters
  RejectsFile rejects;
  rejects.open(o.rejects, ro.reader);
  ProgressBar bar(!o.quiet);
  ro.tuning.progress = [&bar](const Progress& p) { bar.update(p); };

  Pipeline pipeline(o.inputs, ro);
  // --output-dir: each input file's kept records under its own name (its path inside the folder
  // walked, or its file name), compressed as the name says.
  std::vector<std::string> per_source;
  std::vector<io::NamedPath> outputs = {{o.output_dir.empty() ? o.output : std::string(), "--output"},
                                        {o.removed, "--removed"}, {o.clusters, "--clusters"}, {o.rejects, "--rejects"},
                                        {o.report, "--report"}};
  if (!o.output_dir.empty()) {
    per_source = output_dir_paths(pipeline.inputs(), o.output_dir);
    for (const std::string& path : per_source) outputs.push_back({path, "--output-dir file"});
    outputs.front().path.clear();
  }
  check_output_paths(pipeline.inputs(), outputs);
  if (dedup && !pipeline.inputs().all_jsonl() && !pipeline.inputs().all_text())
    throw UsageError("dedup cannot mix JSONL and plain-text inputs in one run (its output is either JSONL "
                     "records or a list of paths); run it once per kind, or force one with --format");
  if (o.estimate_memory || (!o.quiet && (o.memory_limit > 0 || static_cast<double>(pipeline.inputs().total_bytes()) * 4 >= kAnnounceBytes))) {
    // Compressed inputs may hold several times their size: sampled from a quarter of the threshold on.
    const MemoryEstimate m = pipeline.estimate_memory();
    const uint64_t limit = ro.tuning.memory_limit;
    if (o.estimate_memory || m.spills_under(limit) || m.input.data_bytes >= kAnnounceBytes || m.peak() >= kAnnounceBytes) print_memory_estimate(m, limit);
    if (o.estimate_memory) return kExitOk;
  }
  // Open every output first, so that a bad output path fails before the work.
  std::unique_ptr<io::AtomicFile> out, removed, clusters;
  std::vector<std::unique_ptr<io::AtomicFile>> dir_files;
  std::vector<io::AtomicFile*> dir_outs;
  if (per_source.empty()) {
    out = open_output(o.output);
  } else {
    std::map<std::string, io::AtomicFile*> by_path;
    for (const std::string& path : per_source) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
      if (ec) throw IoError(path + ": cannot create its directory: " + ec.message() + "; check --output-dir");
      dir_files.push_back(open_output(path));
      dir_outs.push_back(dir_files.back().get());
    }
  }
  if (!o.removed.empty()) removed = open_output(o.removed);
  if (!o.clusters.empty()) clusters = open_output(o.clusters);
  std::unique_ptr<io::AtomicFile> report;
  if (!o.report.empty()) report = open_output(o.report);

  const auto t_start = std::chrono::steady_clock::now();
  // dedup writes its kept records while it still verifies (Pipeline::run_dedup).
  if (dedup && out) {
    pipeline.run_dedup(*out);
  } else if (dedup) {
    pipeline.run_dedup(dir_outs);
  } else {
    pipeline.run(Pipeline::Mode::Pairs);
  }
  ReportRun report_run;
  report_run.dedup = dedup;
  if (!dedup && report) {
    write_pairs_for_report(pipeline, *out, report_run);
  } else if (!dedup) {
    pipeline.write_pairs(*out);
  }
  if (removed) pipeline.write_removed(*removed);
  if (clusters) pipeline.write_clusters(*clusters);
  if (report) {
    struct rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    report_run.peak_memory_bytes = static_cast<double>(u.ru_maxrss) * 1024.0;
    report_run.command = command_line();
    report_run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    write_report(*report, pipeline, report_run);
  }
  // Commit only once everything is written, every output together: a failure leaves none of them
  // in place.
  const auto t_sync = std::chrono::steady_clock::now();
  std::vector<io::AtomicFile*> all{out.get()};
  for (auto& f : dir_files) all.push_back(f.get());
  for (auto* f : {rejects.file(), removed.get(), clusters.get(), report.get()}) all.push_back(f);
  io::commit_together(all);
  const double sync_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_sync).count();
  bar.clear();
  if (!o.quiet) {
    const std::string flags = (o.top > 0 ? " --top " + std::to_string(o.top) : "") +
                              (o.measure != "jaccard" ? " --measure " + o.measure : "");
    print_summary(pipeline, !dedup, o.show_stats, cmd, o.reader, sync_seconds, flags);
  }
  return kExitOk;
}

}  // namespace

void add_pairs_and_dedup(CLI::App& app, std::function<int()>& run) {
  auto pairs_opts = std::make_shared<Options>();
  CLI::App* pairs = app.add_subcommand(
      "pairs", "Write every near-duplicate pair: id1 TAB id2 TAB similarity (TAB distance with --method simhash)");
  add_pairs_dedup_options(pairs, *pairs_opts);
  pairs->add_option("-o,--output", pairs_opts->output, "Output file (default: stdout)");
  pairs->add_option("--top", pairs_opts->top,
                    "With --method bottomk: the M most similar pairs, best first, instead of those above --threshold")
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  pairs->add_option("--measure", pairs_opts->measure,
                    "jaccard, or containment: pairs where the smaller document shares at least --threshold of its "
                    "shingles with the larger, scored by that share (exact; --method exact)")
      ->check(CLI::IsMember({"jaccard", "containment"}))
      ->default_str("jaccard");
  pairs->callback([&run, pairs, pairs_opts] { run = [=] { return run_command(pairs, *pairs_opts, false); }; });

  auto dedup_opts = std::make_shared<Options>();
  CLI::App* dedup = app.add_subcommand(
      "dedup", "Remove near-duplicates: write the kept records exactly as they were (JSONL) or the kept paths");
  add_pairs_dedup_options(dedup, *dedup_opts, /*against=*/true);
  add_keep_options(dedup, *dedup_opts);
  dedup->add_option("-o,--output", dedup_opts->output, "Output file for the kept records ('-' for stdout; required)");
  dedup->add_option("--output-dir", dedup_opts->output_dir,
                    "Instead of -o: write each input file's kept records to DIR under the same name (its path inside "
                    "a folder input), compressed as the name says (JSONL inputs)");
  dedup->add_option("--removed", dedup_opts->removed, "Write removed_id TAB kept_id TAB similarity per removed document");
  dedup->add_option("--clusters", dedup_opts->clusters, "Write cluster TAB id TAB kept|removed per clustered document");
  dedup->add_option("--against", dedup_opts->against,
                    "An index (neardup index create): remove the documents that are near-duplicates of indexed ones "
                    "or of earlier kept ones, walking the inputs in order; --removed then names the match and where "
                    "it is (index or input)");
  dedup->add_flag("--add-kept", dedup_opts->add_kept, "With --against: add the kept documents to the index");
  add_wait_flag(dedup, dedup_opts->wait_lock);
  dedup->callback([&run, dedup, dedup_opts] { run = [=] { return run_command(dedup, *dedup_opts, true); }; });
}

}  // namespace neardup::cli
