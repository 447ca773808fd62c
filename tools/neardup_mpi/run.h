// neardup-mpi: `neardup pairs` and `neardup dedup` over MPI ranks, with the same options and
// byte for byte the same outputs, whatever the number of ranks. A thin driver over the engine's
// stages (stages.h): each rank reads and sketches its share of the inputs; band keys are shuffled
// so that each rank owns the buckets of a range of keys; the buckets' candidate components are
// found by label propagation, and each is verified and clustered, whole, on the rank that read
// its first document, with the shingle sets fetched from the ranks that read its documents; each
// document's fate goes to the rank that read it, which writes its part of the outputs.
// docs/distributed.md explains the design, its limits and its cost.
#pragma once

#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "comm.h"
#include "early_kept.h"
#include "commands.h"
#include "options.h"
#include "neardup/neardup.h"
#include "pipeline/document_table.h"
#include "pipeline/sketch_store.h"

namespace neardup::mpi {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- Failing together ----
//
// Work between exchanges is local, so a rank that fails there reaches the next check while the
// others finish theirs. There every rank learns of it; the failing rank first in input order (the
// lowest) prints its message, as `neardup` would for the same first bad record, and every rank
// returns its exit code, removing its temporary files on the way out.

// Thrown on every rank at once, after they agreed that one failed: go() returns its code.
struct Failed {
  int code;
};

class Steps {
 public:
  explicit Steps(Comm& c) : c_(c) {}
  /// Runs fn here, then learns from every rank whether it failed anywhere; if so, throws Failed
  /// on every rank at once (go() returns its code).
  void agree(const std::function<void()>& fn) {
    int code = 0;
    std::string msg;
    try {
      fn();
    } catch (const Error& e) {
      code = cli::exit_code(e);
      msg = "error: " + cli::flag_text(e);
    } catch (const std::bad_alloc&) {
      code = kExitInternal;
      msg = "error: out of memory on rank " + std::to_string(c_.rank()) + "; use more ranks or fewer threads per rank";
    } catch (const std::exception& e) {
      code = kExitInternal;
      msg = std::string("internal error: ") + e.what() + "; please report it";
    }
    const int lowest = c_.all_reduce(code != 0 ? c_.rank() : c_.size(), MPI_MIN);
    if (lowest == c_.size()) return;
    if (c_.rank() == lowest) std::fprintf(stderr, "neardup: %s\n", msg.c_str());
    MPI_Bcast(&code, 1, MPI_INT, lowest, MPI_COMM_WORLD);
    throw Failed{code};
  }

 private:
  Comm& c_;
};

// ---- The shares ----

// A rank's share of the inputs: sources [first, last), the lines of `first` from byte `begin`,
// those of last - 1 before byte `end` (io::RecordReader::read_sources).
struct Share {
  size_t first = 0, last = 0;
  uint64_t begin = 0, end = UINT64_MAX;
};

// Whether a source can be split between ranks at line boundaries: an uncompressed JSONL file
// (a compressed stream has no byte offsets to start at).
bool splittable(const io::Source& src);
// The inputs laid end to end are cut into N runs of about total / N bytes: position p belongs to
// rank p * N / total. A file that cannot be split goes whole to the rank its first byte belongs
// to; an uncompressed JSONL file (when `split`) is cut, each line going to the rank its first
// byte belongs to. Documents are numbered in input order, so every rank's documents are a
// contiguous range of the numbers one process gives them.
std::vector<Share> split_inputs(const io::InputSet& inputs, int ranks, bool split);

// What a rank keeps of the documents it read (global numbers base .. base + size - 1).
struct Local {
  DocId base = 0;
  std::vector<std::string> ids;
  std::vector<uint32_t> lengths;     // of the texts (at most max_doc_bytes)
  std::vector<uint64_t> line;        // JSONL: the record's line number (1-based)
  std::vector<io::RecordPos> pos;    // JSONL
  std::vector<uint32_t> source;
  // --keep-by: each record's value of the field (io::KeyValue).
  std::vector<uint8_t> key_kind;
  std::vector<double> key_num;
  std::vector<std::string> key_text;
  // What finds and verifies the pairs, as one process keeps it: with exact verification each
  // document's band keys (8 bytes per band), with estimated verification its signature.
  SketchStore sketches;
  // Under a memory limit (Run::choose_spill) the band keys are in sketches.spilled instead, a
  // column per band, mapped here after the first pass for the payloads (pack_payload).
  std::vector<const uint64_t*> key_columns;
  size_t num_perm = 0;
  uint64_t shingles = 0;
  std::span<const SigValue> signatures(size_t l) const noexcept { return sketches.signatures().subspan(l * num_perm, num_perm); }
  io::ReaderStats reader;
  size_t size() const noexcept { return ids.size(); }
  bool has(DocId d) const noexcept { return d >= base && d - base < ids.size(); }
};

// Where messages place a document: FILE:LINE for a JSONL record, the path (its id) for a text
// file, as one process names them.
inline ErrorPlace place_of(const io::Source& src, uint64_t line, std::string_view id) {
  if (src.kind == io::SourceKind::Jsonl) return ErrorPlace{src.display, line};
  return ErrorPlace{std::string(id.substr(0, 200)), 0};
}

inline std::string where_of(const io::Source& src, uint64_t line, std::string_view id) {
  const ErrorPlace p = place_of(src, line, id);
  return p.line ? p.source + ":" + std::to_string(p.line) : p.source;
}

// The rank that read document d, from every rank's first document number.
inline int owner_of(const std::vector<DocId>& bases, DocId d) {
  return static_cast<int>(std::upper_bound(bases.begin(), bases.end(), d) - bases.begin()) - 1;
}

inline uint64_t mix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// A set in a rank's answer that repeats one sent before in the same answer: in place of the set's
// count, kSameSet | the ordinal of the earlier document in the answer. Copies of one text (a
// cluster of hundreds of licence files) then cross once, and are held once on either side.
constexpr uint64_t kSameSet = uint64_t{1} << 63;
// In place of a set: the asking rank reads it itself from the record's position (Run::at_position).
constexpr uint64_t kAtPosition = uint64_t{1} << 62;

// A set a rank reads itself: the payload's document i, where its record lies, its text's length
// and its line (for messages).
struct SetAt {
  size_t i;
  io::RecordPos pos;
  uint32_t length;
  uint64_t line;
};

// The sets this rank computed for a group, by document; the copies of one text (a cluster of
// hundreds of licence files) share one stored set.
class LoadedSets {
 public:
  bool has(DocId d) const { return slot_.count(d) != 0; }
  void set(DocId d, std::vector<ShingleHash> s) {
    slot_[d] = static_cast<uint32_t>(sets_.size());
    sets_.push_back(std::move(s));
    users_.push_back(1);
  }
  void share(DocId d, DocId from) {
    const uint32_t s = slot_.at(from);
    slot_[d] = s;
    ++users_[s];
  }
  /// Which stored set d has: equal for copies.
  uint32_t slot(DocId d) const { return slot_.at(d); }
  std::span<const ShingleHash> get(DocId d) const { return sets_[slot_.at(d)]; }
  /// d's set, moved out when no other document uses it (else copied); d no longer has one.
  std::vector<ShingleHash> take(DocId d) {
    const uint32_t s = slot_.at(d);
    std::vector<ShingleHash> out = users_[s] == 1 ? std::move(sets_[s]) : sets_[s];
    release(d);
    return out;
  }
  void release(DocId d) {
    const auto it = slot_.find(d);
    if (--users_[it->second] == 0) std::vector<ShingleHash>().swap(sets_[it->second]);
    slot_.erase(it);
  }
  void clear() { *this = LoadedSets(); }

 private:
  std::unordered_map<DocId, uint32_t> slot_;
  std::vector<std::vector<ShingleHash>> sets_;
  std::vector<uint32_t> users_;
};

// What verification compares of a document: its shingle set (exact) or its signature; and, for
// clustering, what the outputs and the keep order need.
struct Payloads {
  Payloads(std::vector<DocId> docs, const PipelineSpec& spec, bool for_clusters);
  Payloads(std::vector<DocId> docs, size_t bands, size_t k, bool for_clusters, bool exact);
  /// The payloads of `some` (sorted, among docs), their sets to read included (no set is copied).
  Payloads subset(std::vector<DocId> some) const;
  /// Document i's payload from `u` (Run::pack_payload's, after the set when with_set; a set sent
  /// as kSameSet | j is document first + j's, the answer's j-th).
  void take(size_t i, Unpacker& u, bool with_set, size_t first);
  std::vector<DocId> docs;  // sorted
  ShingleSets sets;
  std::vector<SigValue> sigs;        // estimate: docs.size() x k
  std::vector<uint64_t> band_keys;   // exact: docs.size() x bands
  DocumentTable table;  // for clustering: ids, lengths, keep-by values
  std::vector<SetAt> to_read;  // exact: the sets this rank reads itself (Run::read_sets_at), by i
  bool clusters = false;
  size_t bands = 0, k = 0;
  size_t index(DocId d) const { return place_in(docs, d); }
};

// A component's text (Buckets::text), or the part of it read on one rank.
struct ComponentText {
  uint64_t component, bytes;  // its first document (64 bits: no padding travels)
};

// The buckets a rank verifies, sorted by their candidate component (its first document).
struct Buckets {
  std::vector<std::vector<DocId>> lists;
  std::vector<DocId> component;  // per list
  std::vector<uint64_t> text;    // per component, in order: its documents' text (bytes + 1 each; Run::by_component)
};

// A clustered document's fate, decided on the rank that verified its component and sent to the
// rank that read it: the document kept in its place (itself if kept), the first document of its
// cluster, and (removed) its similarity to the kept one and the kept one's id.
struct Fate {
  DocId doc, keeper, first;
  double similarity;
  std::string keeper_id;
};

/// The ranks of the job on this machine (a node's threads and memory are theirs to share).
int ranks_on_this_node();

class Run {
 public:
  Run(Comm& c, const CLI::App* cmd, const cli::Options& o, bool dedup) : c_(c), steps_(c), cmd_(cmd), o_(o), dedup_(dedup) {}

  int go();

 private:
  int run();
  void read_share(const Share& share);
  /// Every rank's reading counts, merged in input order (on rank 0; the others get their own).
  io::ReaderStats gather_reader_stats();
  void number_documents();
  void check_duplicate_ids();
  ErrorPlace local_place(size_t l) const { return place_of(inputs_->sources()[local_.source[l]], local_.line[l], local_.ids[l]); }
  std::string local_where(size_t l) const { return where_of(inputs_->sources()[local_.source[l]], local_.line[l], local_.ids[l]); }
  void check_key_kinds();
  Buckets find_buckets();
  Buckets by_component(std::vector<std::vector<DocId>> found);
  /// The components moved between the ranks so that each verifies about as much text.
  Buckets balance(Buckets mine);
  std::vector<Unpacker> ask_owners(const std::vector<DocId>& docs, const std::function<void(std::span<const DocId>, Packer&)>& answer,
                                   std::vector<std::string>& storage, const std::function<void(std::vector<DocId>)>& prepare = nullptr,
                                   const std::function<void()>& answered = nullptr);
  Payloads fetch(std::vector<DocId> docs, bool for_clusters);
  void pack_payload(size_t l, bool for_clusters, Packer& p) const;
  // What shingle_again hands each record over to: the k-th record's text length in the first
  // pass and its place for messages; put(k, its set), or share(k, j) when it repeats the text of
  // the j-th.
  struct Reread {
    std::function<uint64_t(size_t)> length;
    std::function<ErrorPlace(size_t)> place;
    std::function<void(size_t, std::vector<ShingleHash>)> put;
    std::function<void(size_t, size_t)> share;
  };
  /// Shingles again the `count` records `reader` gives; throws IoError where one is not what the
  /// first pass read (the input changed).
  void shingle_again(io::RecordReader& reader, size_t count, const Reread& to);
  void load_sets(std::vector<DocId> docs);
  bool at_position(size_t l);
  const std::vector<bool>& plain_sources();
  bool every_set_at_position();
  void read_sets_at(Payloads& pl);
  std::vector<bool> plain_;  // per source: read at positions by any rank (at_position)
  LoadedSets loaded_sets_;
  /// Where each group of buckets ends: whole components whose distinct documents' texts stay
  /// within a budget.
  std::vector<size_t> group_ends(const Buckets& buckets);
  /// use(group, its payloads) for each group of buckets (group_ends), the payloads of one group
  /// at a time; every rank takes part in as many rounds as the rank with the most groups.
  void in_groups(const Buckets& buckets, const std::function<void(std::span<const std::vector<DocId>>, const Payloads&)>& use);
  std::vector<ScoredPair> verify_buckets(std::span<const std::vector<DocId>> buckets, const Payloads& pl);
  Scorer scorer(const Payloads& pl) const;
  struct Components;
  Components components(const std::vector<DocPair>& edges);
  void cluster_group(const Payloads& pl, std::span<const ScoredPair> edges, std::vector<Fate>& fates);
  std::vector<Fate> deliver(std::vector<Fate> fates);
  void write_clusters(const std::vector<Fate>& fates, io::AtomicFile* out);
  void write_piece(const std::string& final_path, io::AtomicFile* piece, io::AtomicFile* final_out);
  bool compressed(size_t s) const;
  void append_kept(const std::vector<std::string>& got, uint64_t bytes_follow, const std::string& piece,
                   const std::vector<uint64_t>& piece_bytes, int piece_slot, io::AtomicFile& final_out);
  std::string piece_path(const char* what) const;
  void copy_read_once_inputs();
  // The outputs of a run: rank 0's merged files, each rank's --output-dir files, and the pieces
  // each rank writes for rank 0 to merge.
  struct Outputs {
    std::vector<std::string> per_source;  // --output-dir: each source's file
    std::unique_ptr<io::AtomicFile> out, removed, clusters, rejects_out;
    std::vector<std::unique_ptr<io::AtomicFile>> dir_files;
    std::unique_ptr<io::AtomicFile> piece, removed_piece;
    cli::RejectsFile rejects;
    bool one_output = true;  // -o (not --output-dir)
  };
  // What the summary line says, and the stages' times.
  struct Counts {
    uint64_t documents = 0, skipped = 0, candidates = 0, largest = 0;
    uint64_t verified = 0, pairs = 0, clusters = 0, removed = 0, below = 0;
    double t_read = 0, t_lsh = 0, t_verify = 0, t_cluster = 0, t_write = 0;
  };
  void set_up(std::vector<std::string>& per_source);
  void choose_spill();
  /// The band keys of local document l: from memory, or from the spilled columns.
  uint64_t band_key(size_t band, size_t l) const {
    return local_.key_columns.empty() ? local_.sketches.band_keys[band][l] : local_.key_columns[band][l];
  }
  void open_outputs(Outputs& outs, const Share& share);
  void settle(std::vector<Fate> fates, Outputs& outs, Counts& counts, std::vector<std::pair<DocId, DocId>>& my_removed);
  void send_pairs(const std::vector<ScoredPair>& verified, Outputs& outs, Counts& k);
  std::unique_ptr<EarlyKept> copy_kept_early(const Buckets& buckets, Outputs& outs);
  void decided(EarlyKept& early, const Buckets& buckets, std::span<const std::vector<DocId>> group, std::span<const Fate> fates);
  void write_kept(std::vector<std::pair<DocId, DocId>>& my_removed, Outputs& outs, const Share& share, EarlyKept* early);
  void commit_outputs(Outputs& outs);
  void print_summary(const io::ReaderStats& read_stats, const Counts& k, double seconds);
  std::unique_ptr<io::OnceCopy> receive_copy(const std::string& input, int in);

  Comm& c_;
  Steps steps_;
  const CLI::App* cmd_;
  const cli::Options& o_;
  bool dedup_;
  RunOptions ro_;
  PipelineSpec spec_;
  int threads_ = 1;
  std::vector<std::unique_ptr<io::OnceCopy>> once_copies_;  // outlive inputs_, which reads them
  std::unique_ptr<io::InputSet> inputs_;
  std::vector<Share> shares_;
  Local local_;
  std::vector<DocId> bases_;  // per rank, and the total at the end
  uint64_t candidates_ = 0, largest_bucket_ = 0;
  int label_rounds_ = 0;
  // Under --memory-limit: whether this rank keeps its band keys on disk, and the bytes of
  // entries a rank sends per round of the shuffle.
  bool spill_keys_ = false;
  uint64_t round_bytes_ = uint64_t{64} << 20;
  std::vector<std::string> temp_paths_;
};

// The components of the clustered documents a rank holds (Run::components).
struct Run::Components {
  std::vector<DocId> docs;   // this rank's vertices, ascending
  std::vector<DocId> first;  // per vertex: its component's first document
  int rounds = 0;
};

}  // namespace neardup::mpi
