// Options shared by the commands that sketch documents (pairs, dedup, index).
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "neardup/neardup.h"

namespace neardup::cli {

struct Options {
  std::vector<std::string> inputs;
  std::string output;
  std::string removed, clusters;
  std::string report;      ///< --report FILE.html
  std::string output_dir;  ///< dedup: one kept file per input file
  std::string rejects;     ///< --rejects FILE: every skipped record with its reason
  std::string spec;
  double threshold = kDefaultThreshold;
  int shingle = kDefaultShingle;
  int chars = 0;
  std::string normalize = "none";  ///< none | nfkc
  std::string words = "simple";    ///< simple | icu
  int num_perm = kDefaultNumPerm;
  SketchMethod method = SketchMethod::Oph;
  int sketch_size = kDefaultSketchSize;
  int hamming = kDefaultHamming;
  SimHashWeights weights = SimHashWeights::Set;
  size_t top = 0;
  std::string measure = "jaccard";  ///< pairs: jaccard or containment
  int bands = 0, rows = 0;
  uint64_t seed = kDefaultSeed;
  VerifyMode verify = VerifyMode::Exact;
  KeepPolicy keep = KeepPolicy::First;
  std::string keep_by;  ///< --keep-by FIELD[:asc|:desc]
  ClusterMode cluster = ClusterMode::Components;
  io::ReaderOptions reader;
  int threads = 0;
  bool quiet = false;
  bool show_stats = false;
  bool estimate_memory = false;  ///< print the expected memory of the run and stop
  uint64_t memory_limit = 0;     ///< --memory-limit (bytes; 0: not given)
  std::string against;  ///< dedup: an index to deduplicate against
  bool add_kept = false;
  bool wait_lock = false;  ///< --wait: wait for an index's update lock held by another process
  /// --on-duplicate-id: error or keep for pairs and dedup; error, skip or replace with --against.
  std::string on_duplicate_id = "error";
};

// Throttled one-line progress on stderr, only when stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && ::isatty(2)) {}
  ~ProgressBar() { clear(); }
  void update(const Progress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double pct = p.bytes_total ? 100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total) : 0;
    std::fprintf(stderr, "\r\033[K%-7s %5.1f%%  %.1f / %.1f MB  %llu documents", p.stage, pct > 100 ? 100 : pct,
                 static_cast<double>(p.bytes_done) / 1e6, static_cast<double>(p.bytes_total) / 1e6,
                 static_cast<unsigned long long>(p.documents));
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

/// The options of `pairs` and `dedup` (inputs, sketch, reader, threads), also neardup-mpi's;
/// `against`: dedup's --on-duplicate-id also takes skip and replace (with --against).
void add_pairs_dedup_options(CLI::App* cmd, Options& o, bool against = false);
/// dedup's --keep, --keep-by and --cluster.
void add_keep_options(CLI::App* cmd, Options& o);
/// The run's options from the parsed flags; UsageError on a bad combination.
RunOptions run_options(const CLI::App* cmd, const Options& o);
/// The outputs asked for make sense together (dedup's -o or --output-dir, --rejects with --on-error
/// skip); UsageError otherwise. neardup and neardup-mpi check them alike.
void check_output_flags(const Options& o, bool dedup);
/// --output-dir DIR: where each source's kept records go (its name inside DIR); UsageError for
/// plain-text inputs or two sources with one name.
std::vector<std::string> output_dir_paths(const io::InputSet& inputs, const std::string& dir);
/// How often an option was given (0 also when the command does not have it).
size_t given(const CLI::App* cmd, const char* name);

/// Refuses (UsageError) outputs that are the same file as an input, the index or each other,
/// before any work (io::check_outputs). `extra_inputs`: files read besides the inputs (an index
/// that is only read).
void check_output_paths(const io::InputSet& inputs, const std::vector<io::NamedPath>& outputs,
                        const std::vector<io::NamedPath>& extra_inputs = {});
/// Opens an output for data (.gz and .zst names compressed); "" is standard output.
std::unique_ptr<io::AtomicFile> open_output(const std::string& path);

/// --rejects FILE: each skipped record as a JSON line {"input", "line", "byte", "kind", "reason",
/// "record"} ("record_base64" when the line is not UTF-8; no record for an over-long line or a
/// file, which stay where they are).
class RejectsFile {
 public:
  /// Hooks `path` (nothing if empty) into `reader`; the file is opened at the first rejected
  /// record, or by commit(), so check the path (check_output_paths) before the run.
  void open(const std::string& path, io::ReaderOptions& reader);
  /// The file, opened now if no record was rejected (an empty file then); null without a path.
  /// Committed with the run's other outputs (io::commit_together).
  io::AtomicFile* file() {
    if (path_.empty()) return nullptr;
    if (!file_) file_ = open_output(path_);
    return file_.get();
  }

 private:
  std::string path_;
  std::unique_ptr<io::AtomicFile> file_;
  std::string line_;
};

/// The counts a run's summary line gives, in one wording for neardup and neardup-mpi.
struct SummaryCounts {
  uint64_t documents, empty, skipped;
  uint64_t shingles;  ///< UINT64_MAX: not counted (neardup-mpi)
  uint64_t candidates, verified, pairs, clusters, removed;
  uint64_t below;  ///< removed documents below the threshold to their kept one (components)
};
/// "D documents (E empty, K skipped), S shingles, C candidates, P pairs reported" for pairs, or
/// "..., V verified pairs, X clusters, R removed" for dedup.
std::string summary_counts(const SummaryCounts& c, bool pairs_mode);

/// The warnings after a run that read records: skipped records by kind, files left out of
/// folders, records without the id field asked for.
void print_input_warnings(const io::ReaderStats& s, uint64_t documents, const io::WalkCounts& left_out, const CLI::App* cmd,
                          const io::ReaderOptions& reader);

/// An option that takes one of `choices` by name: help lists the names and the default (the
/// target's value when added); nothing else is accepted (no enum numbers).
template <class E>
CLI::Option* add_choice(CLI::App* cmd, const std::string& flags, E& target, const std::vector<std::pair<std::string, E>>& choices,
                        const std::string& help) {
  std::vector<std::string> names;
  std::string current;
  for (const auto& [name, value] : choices) {
    names.push_back(name);
    if (value == target && current.empty()) current = name;
  }
  return cmd
      ->add_option_function<std::string>(
          flags,
          [&target, choices](const std::string& v) {
            for (const auto& [name, value] : choices)
              if (name == v) target = value;
          },
          help)
      ->check(CLI::IsMember(names))
      ->default_str(current);
}

/// A number checked against a rule (neardup/option_rules.h); help shows its range, "in (0, 1]".
inline CLI::Validator rule_validator(const NumberRule& rule) {
  return CLI::Validator(
      [rule](std::string& s) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != s.size()) return "'" + s + "' is not a number";
        const std::string problem = rule_problem(rule, v);
        return problem.empty() ? problem : s + " " + problem;
      },
      rule_range(rule));
}
/// A number in an interval, open or closed at each end.
inline CLI::Validator interval(double lo, double hi, bool lo_open, bool hi_open) {
  return rule_validator(NumberRule{"", lo, hi, lo_open, hi_open, false, ""});
}
/// A numeric option checked by its rule, as every driver checks it.
inline CLI::Validator rule_check(std::string_view name) { return rule_validator(number_rule(name)); }
/// A similarity threshold: in (0, 1].
inline CLI::Validator unit_interval() { return rule_check("threshold"); }

/// --on-duplicate-id error|skip|replace.
void add_on_duplicate_id(CLI::App* cmd, OnDuplicateId& v);
/// How a command takes an index's update lock: at once, or with --wait, waiting with a message
/// (unless quiet) naming the holder.
LockWait lock_wait(bool wait, bool quiet, const std::string& index);
/// The --wait flag of the commands that change an index.
void add_wait_flag(CLI::App* cmd, bool& wait);

/// dedup --against IDX: the online walk of NEW against the index (cmd_index.cpp).
int run_dedup_against(const CLI::App* cmd, const Options& o);

/// --threshold, --shingle, --chars, --method and the sketch sizes, --bands/--rows, --seed,
/// --spec, --verify.
/// `index`: only what an index takes (--method minhash or oph; no bottom-k or SimHash sizes).
void add_sketch_options(CLI::App* cmd, Options& o, bool index = false);
/// --text-field, --id-field, --format, --on-error.
void add_reader_options(CLI::App* cmd, Options& o);
/// --no-mmap and --mmap: plain JSONL files read as streams or mapped (ReaderOptions::memory_map;
/// without either, MemoryMap::Auto).
void add_no_mmap_flag(CLI::App* cmd, io::ReaderOptions& reader);
/// -j, --quiet, --stats.
void add_run_options(CLI::App* cmd, Options& o);
/// The spec from --spec and the flags given (flags override the spec). Throws UsageError.
PipelineSpec make_spec(const CLI::App* cmd, const Options& o);

}  // namespace neardup::cli
