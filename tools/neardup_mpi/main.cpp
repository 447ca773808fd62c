// neardup-mpi: `neardup pairs` and `neardup dedup` over MPI ranks, with the same options and
// byte for byte the same outputs, whatever the number of ranks. A thin driver over the engine's
// stages (stages.h): each rank reads and sketches its share of the inputs; band keys are shuffled
// so that each rank owns the buckets of a range of keys; each bucket is verified on its owner
// with the shingle sets (or signatures) fetched from the ranks that read the documents; the
// spanning edges are clustered on rank 0; each rank writes the kept records of the files it read.
// docs/distributed.md explains the design, its limits and its cost.
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
#include "commands.h"
#include "options.h"
#include "neardup/neardup.h"

namespace neardup::mpi {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
bool splittable(const io::Source& src) {
  if (src.kind != io::SourceKind::Jsonl) return false;
  unsigned char magic[6] = {};
  std::FILE* f = std::fopen(src.path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  return io::compression_of_magic(magic, n) == io::Compression::None;
}

// The inputs laid end to end are cut into N runs of about total / N bytes: position p belongs to
// rank p * N / total. A file that cannot be split goes whole to the rank its first byte belongs
// to; an uncompressed JSONL file (when `split`) is cut, each line going to the rank its first
// byte belongs to. Documents are numbered in input order, so every rank's documents are a
// contiguous range of the numbers one process gives them.
std::vector<Share> split_inputs(const io::InputSet& inputs, int ranks, bool split) {
  const auto& sources = inputs.sources();
  std::vector<uint64_t> start(sources.size() + 1, 0);
  std::vector<bool> cut(sources.size(), false);
  for (size_t s = 0; s < sources.size(); ++s) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(sources[s].path, ec);
    start[s + 1] = start[s] + (ec ? 0 : size);
    cut[s] = split && !ec && size > 0 && splittable(sources[s]);
  }
  const uint64_t total = std::max<uint64_t>(1, start.back());
  const auto n = static_cast<uint64_t>(ranks);
  auto owner = [&](uint64_t p) { return static_cast<int>(std::min<uint64_t>(n - 1, static_cast<uint64_t>((static_cast<__uint128_t>(p) * n) / total))); };
  // The first position of rank r: the smallest p with p * N / total >= r.
  auto lo = [&](int r) { return static_cast<uint64_t>((static_cast<__uint128_t>(r) * total + n - 1) / n); };
  std::vector<Share> shares(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    Share& sh = shares[static_cast<size_t>(r)];
    const uint64_t from = lo(r), to = r + 1 == ranks ? UINT64_MAX : lo(r + 1);
    bool any = false;
    for (size_t s = 0; s < sources.size(); ++s) {
      const bool mine = cut[s] ? start[s] < to && start[s + 1] > from : owner(start[s]) == r;
      if (!mine) continue;
      if (!any) {
        sh.first = s;
        sh.begin = cut[s] && start[s] < from ? from - start[s] : 0;
        any = true;
      }
      sh.last = s + 1;
      sh.end = cut[s] && start[s + 1] > to ? to - start[s] : UINT64_MAX;
    }
    if (!any) sh.first = sh.last = r == 0 ? 0 : shares[static_cast<size_t>(r) - 1].last;
  }
  return shares;
}

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
  Sketches sketches;
  io::ReaderStats reader;
  size_t size() const noexcept { return ids.size(); }
  bool has(DocId d) const noexcept { return d >= base && d - base < ids.size(); }
};

// Where messages place a document: FILE:LINE for a JSONL record, the path (its id) for a text
// file, as one process names them.
ErrorPlace place_of(const io::Source& src, uint64_t line, std::string_view id) {
  if (src.kind == io::SourceKind::Jsonl) return ErrorPlace{src.display, line};
  return ErrorPlace{std::string(id.substr(0, 200)), 0};
}

std::string where_of(const io::Source& src, uint64_t line, std::string_view id) {
  const ErrorPlace p = place_of(src, line, id);
  return p.line ? p.source + ":" + std::to_string(p.line) : p.source;
}

// The rank that read document d, from every rank's first document number.
int owner_of(const std::vector<DocId>& bases, DocId d) {
  return static_cast<int>(std::upper_bound(bases.begin(), bases.end(), d) - bases.begin()) - 1;
}

uint64_t mix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// What verification compares of a document: its shingle set (exact) or its signature.
struct Payloads {
  std::vector<DocId> docs;  // sorted
  ShingleSets sets;
  std::vector<SigValue> sigs;  // docs.size() x k
  std::vector<std::string> ids;
  size_t index(DocId d) const { return place_in(docs, d); }
};

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
  std::vector<std::vector<DocId>> find_buckets();
  std::vector<Unpacker> ask_owners(const std::vector<DocId>& docs, const std::function<void(std::span<const DocId>, Packer&)>& answer,
                                   std::vector<std::string>& storage, const std::function<void(std::vector<DocId>)>& prepare = nullptr);
  Payloads fetch(std::vector<DocId> docs, bool with_ids);
  void load_sets(std::vector<DocId> docs);
  std::unordered_map<DocId, std::vector<ShingleHash>> set_cache_;
  std::vector<ScoredPair> verify_buckets(const std::vector<std::vector<DocId>>& buckets, const Payloads& pl);
  Scorer scorer(const Payloads& pl) const;
  struct Components;
  Components components(const std::vector<ScoredPair>& edges);
  /// A clustered document's fate: the document kept in its place (itself if kept), and the
  /// first document of its cluster; clustered: the cluster has two documents or more.
  struct Fate {
    DocId doc, keeper, first;
    bool clustered;
  };
  std::vector<Fate> decide(const Components& comp);
  void write_clusters(const std::vector<Fate>& fates, io::AtomicFile* out);
  void write_piece(const std::string& final_path, io::AtomicFile* piece, io::AtomicFile* final_out);
  bool compressed(size_t s) const;
  void append_kept(const std::vector<std::string>& got, uint64_t bytes_follow, const std::string& piece,
                   const std::vector<uint64_t>& piece_bytes, int piece_slot, io::AtomicFile& final_out);
  std::string piece_path(const char* what) const;
  void copy_read_once_inputs();
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
  std::vector<std::string> temp_paths_;
};

std::string Run::piece_path(const char* what) const {
  return io::temp_directory() + "/neardup-mpi-" + std::to_string(::getpid()) + "-" + what;
}

// ---- Inputs that can be read only once ----
//
// Standard input, a FIFO or a pipe can be read once, by one process: mpirun hands standard
// input to rank 0 alone, and ranks that each opened a FIFO would each get a part of it. So rank 0
// reads each such input and broadcasts its bytes; every rank keeps a copy (io::OnceCopy, in its
// own temporary folder) and reads that, as one process reads its spooled copy. A process
// substitution's descriptor (/dev/fd/N) belongs to the shell that started mpirun, which does not
// pass it on: refused with what to do instead.

constexpr size_t kCopyChunk = size_t{4} << 20;

// Whether rank 0 must read `p` once for every rank; UsageError for a descriptor it cannot see.
bool read_once(const std::string& p) {
  if (p == "-") return true;
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  if (p.starts_with("/dev/fd/") || p.starts_with("/proc/self/fd/"))
    throw UsageError(p + ": a process substitution's descriptor, which mpirun does not pass on to the ranks; pipe the "
                     "command into neardup-mpi's standard input instead (cmd | mpirun ... neardup-mpi dedup - ...), or "
                     "write its output to a file");
  return false;  // missing: InputSet says so
}

// One input's bytes from rank 0 (which reads them from descriptor `in`) into a copy on every
// rank. Every rank takes part in every broadcast whatever fails here, so that none waits for
// ever: a failure is remembered and thrown after the last chunk.
std::unique_ptr<io::OnceCopy> Run::receive_copy(const std::string& input, int in) {
  const std::string display = input == "-" ? "<stdin>" : input;
  std::vector<char> buf(kCopyChunk);
  bool drained = false;
  std::string read_error;
  std::exception_ptr write_error;
  const auto stream = [&](int fd) {
    drained = true;
    for (;;) {
      long long n = 0;
      if (c_.rank() == 0) {
        for (;;) {
          const ssize_t r = ::read(in, buf.data(), buf.size());
          if (r < 0 && errno == EINTR) continue;
          n = r;
          if (r < 0) read_error = std::strerror(errno);
          break;
        }
      }
      MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
      if (n <= 0) {
        if (n < 0 && c_.rank() == 0) throw IoError("cannot read: " + read_error, ErrorPlace{display});
        if (n < 0) throw UsageError("rank 0 could not read " + display);  // rank 0 says why
        break;
      }
      MPI_Bcast(buf.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
      if (fd >= 0 && !write_error) {
        try {
          io::write_copy(fd, buf.data(), static_cast<size_t>(n), display, ro_.temp_dir);
        } catch (...) {
          write_error = std::current_exception();
        }
      }
    }
    if (write_error) std::rethrow_exception(write_error);
  };
  try {
    return std::make_unique<io::OnceCopy>(display, ro_.temp_dir, stream);
  } catch (...) {
    if (!drained) stream(-1);  // the copy could not be made here: take part, then fail
    throw;
  }
}

void Run::copy_read_once_inputs() {
  std::vector<char> once(o_.inputs.size(), 0);
  int refused = 0;
  std::string why;
  if (c_.rank() == 0) {
    try {
      for (size_t i = 0; i < once.size(); ++i) once[i] = read_once(o_.inputs[i]) ? 1 : 0;
    } catch (const UsageError& e) {
      refused = 1;
      why = e.what();
    }
  }
  MPI_Bcast(&refused, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (refused) throw UsageError(c_.rank() == 0 ? why : std::string("refused on rank 0"));
  MPI_Bcast(once.data(), static_cast<int>(once.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  for (size_t i = 0; i < once.size(); ++i) {
    if (!once[i]) continue;
    const std::string& p = o_.inputs[i];
    int in = -1;
    if (c_.rank() == 0) in = p == "-" ? 0 : ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    int opened = in >= 0 ? 1 : 0;
    const int open_errno = errno;
    MPI_Bcast(&opened, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!opened) {
      if (c_.rank() == 0)
        throw IoError(std::string("cannot read: ") + std::strerror(open_errno) + "; check its permissions", ErrorPlace{p});
      throw UsageError("rank 0 could not open " + p);
    }
    std::unique_ptr<io::OnceCopy> copy;
    try {
      copy = receive_copy(p, in);
    } catch (...) {
      if (in > 0) ::close(in);
      throw;
    }
    if (in > 0) ::close(in);
    ro_.reader.copied_once.emplace_back(p, copy->path());
    once_copies_.push_back(std::move(copy));
  }
}

// The share's records through the engine's first pass (sketch_records): read here, parsed,
// shingled and sketched on every thread, taken in input order; bad records are reported as one
// process reports them (the first stops the run, or each is counted and skipped).
void Run::read_share(const Share& share) {
  io::RecordReader reader(*inputs_, ro_.reader);
  reader.read_sources(share.first, share.last, share.begin, share.end);
  // The compressed JSONL files this rank reads whole are kept decompressed (io::ScratchCopy), so
  // that verification and the kept records' copy read them by position instead of decompressing
  // them again, as one process does (where none can be made, they are).
  reader.keep_decompressed_copies(io::temp_directory());
  io::BadRecords bad(ro_.reader);
  local_.sketches.spec = spec_;
  const bool keep_by = !ro_.reader.key_field.empty();
  const SketchTotals totals = sketch_records(reader, *inputs_, spec_, ro_.reader, threads_, bad, [&](const SketchedRecord& r) {
    local_.line.push_back(r.line);
    local_.pos.push_back({r.source, r.raw_length, r.offset});
    local_.source.push_back(r.source);
    local_.ids.emplace_back(r.id);
    if (keep_by) {
      local_.key_kind.push_back(static_cast<uint8_t>(r.key.kind));
      local_.key_num.push_back(r.key.number);
      local_.key_text.emplace_back(r.key.text);
    }
    // The texts are not kept: verification reads them again.
    local_.lengths.push_back(static_cast<uint32_t>(r.text_length));  // <= max_doc_bytes
    local_.sketches.signatures.insert(local_.sketches.signatures.end(), r.signature.begin(), r.signature.end());
    local_.sketches.empty.push_back(r.empty);
  });
  auto copies = reader.take_decompressed_copies();
  for (size_t i = 0; i < copies.size(); ++i)
    if (copies[i]) inputs_->read_again_from(i, std::move(copies[i]));
  local_.sketches.shingles += totals.shingles;
  local_.reader.invalid_utf8 += totals.invalid_utf8;
  local_.reader.missing_ids += totals.missing_ids;
  local_.reader.binary = reader.stats().binary;
  local_.reader.skipped = bad.skipped();
  local_.reader.first_skips = bad.first();
  local_.reader.skip_kinds = bad.kinds();
}

io::ReaderStats Run::gather_reader_stats() {
  const io::ReaderStats& mine = local_.reader;
  Packer p;
  p.put(mine.skipped);
  p.put(mine.invalid_utf8);
  p.put(mine.missing_ids);
  p.put(mine.binary);
  p.put(static_cast<uint64_t>(mine.first_skips.size()));
  for (const std::string& m : mine.first_skips) p.put_string(m);
  p.put(static_cast<uint64_t>(mine.skip_kinds.size()));
  for (const auto& [kind, n] : mine.skip_kinds) {
    p.put_string(kind);
    p.put(n);
  }
  const auto all = c_.all_gather(p.bytes());
  if (c_.rank() != 0) return mine;
  io::ReaderStats out;
  io::BadRecords merged(ro_.reader);
  for (const std::string& g : all) {  // in rank order: the shares' order in the inputs
    Unpacker u(g);
    const auto skipped = u.get<uint64_t>();
    out.invalid_utf8 += u.get<uint64_t>();
    out.missing_ids += u.get<uint64_t>();
    out.binary += u.get<uint64_t>();
    std::vector<std::string> first(u.get<uint64_t>());
    for (std::string& m : first) m = std::string(u.get_string());
    std::vector<std::pair<std::string, uint64_t>> kinds(u.get<uint64_t>());
    for (auto& [kind, n] : kinds) {
      kind = std::string(u.get_string());
      n = u.get<uint64_t>();
    }
    merged.add(skipped, first, kinds);
  }
  out.skipped = merged.skipped();
  out.first_skips = merged.first();
  out.skip_kinds = merged.kinds();
  return out;
}

void Run::number_documents() {
  Packer p;
  p.put(static_cast<uint64_t>(local_.size()));
  const auto all = c_.all_gather(p.bytes());
  bases_.assign(static_cast<size_t>(c_.size()) + 1, 0);
  for (int r = 0; r < c_.size(); ++r)
    bases_[static_cast<size_t>(r) + 1] = bases_[static_cast<size_t>(r)] + static_cast<DocId>(Unpacker(all[static_cast<size_t>(r)]).get<uint64_t>());
  local_.base = bases_[static_cast<size_t>(c_.rank())];
}

// Ids name documents in the outputs: each id goes to the rank its hash names, which finds the
// records that reuse an earlier one's id; the first such record in input order is reported, as
// one process reports it.
void Run::check_duplicate_ids() {
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  std::vector<Packer> packs(static_cast<size_t>(c_.size()));
  for (size_t i = 0; i < local_.size(); ++i) {
    const auto h = std::hash<std::string>{}(local_.ids[i]);
    Packer& p = packs[static_cast<size_t>(mix64(h) % static_cast<uint64_t>(c_.size()))];
    p.put(static_cast<DocId>(local_.base + i));
    p.put_string(local_.ids[i]);
    p.put(local_.source[i]);
    p.put(local_.line[i]);
  }
  for (int r = 0; r < c_.size(); ++r) out[static_cast<size_t>(r)] = std::move(packs[static_cast<size_t>(r)].bytes());
  const auto in = c_.exchange(std::move(out));
  struct Entry {
    std::string_view id;
    DocId doc;
    uint32_t source;
    uint64_t line;
  };
  std::vector<Entry> entries;
  for (const std::string& buf : in) {
    Unpacker u(buf);
    while (!u.done()) {
      const auto doc = u.get<DocId>();
      const auto id = u.get_string();
      const auto source = u.get<uint32_t>();
      entries.push_back({id, doc, source, u.get<uint64_t>()});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.id != b.id ? a.id < b.id : a.doc < b.doc; });
  uint64_t dups = 0;
  const Entry* later = nullptr;
  const Entry* earlier = nullptr;
  for (size_t i = 0; i < entries.size();) {
    size_t j = i + 1;
    while (j < entries.size() && entries[j].id == entries[i].id) ++j;
    dups += j - i - 1;
    if (j - i > 1 && (!later || entries[i + 1].doc < later->doc)) {
      later = &entries[i + 1];
      earlier = &entries[i];
    }
    i = j;
  }
  const uint64_t total = c_.all_reduce(dups, MPI_SUM);
  const uint64_t first = c_.all_reduce(later ? uint64_t{later->doc} : UINT64_MAX, MPI_MIN);
  steps_.agree([&] {
    if (total == 0 || ro_.duplicate_ids != DuplicateIds::Error || !later || later->doc != first) return;
    const std::string shown(later->id.substr(0, 200));
    if (inputs_->all_text())
      throw FormatError("the same file is given twice (directly or inside a folder); give each file once, or pass "
                        "--on-duplicate-id keep to treat the copies as separate documents", ErrorPlace{shown});
    const auto& sources = inputs_->sources();
    throw FormatError(std::string("id \"") + shown + "\" is already used by " +
                          where_of(sources[earlier->source], earlier->line, earlier->id) + " (" +
                          std::to_string(total) + (total == 1 ? " record reuses" : " records reuse") +
                          " an earlier id); ids name documents in the outputs, so make them unique, or pass "
                          "--on-duplicate-id keep to treat them as separate documents",
                      place_of(sources[later->source], later->line, later->id));
  });
}

// --keep-by compares numbers with numbers and strings with strings: a field that is a number in
// one record and a string in another stops the run, naming the first of each as one process does.
void Run::check_key_kinds() {
  using Kind = io::KeyValue::Kind;
  uint64_t number = UINT64_MAX, string = UINT64_MAX;
  for (size_t i = 0; i < local_.size(); ++i) {
    const auto kind = static_cast<Kind>(local_.key_kind[i]);
    if (kind == Kind::Number) number = std::min<uint64_t>(number, local_.base + i);
    if (kind == Kind::String) string = std::min<uint64_t>(string, local_.base + i);
  }
  number = c_.all_reduce(number, MPI_MIN);
  string = c_.all_reduce(string, MPI_MIN);
  if (number == UINT64_MAX || string == UINT64_MAX) return;
  const auto earlier = static_cast<DocId>(std::min(number, string)), later = static_cast<DocId>(std::max(number, string));
  std::vector<std::string> storage;
  auto told = ask_owners({earlier}, [&](std::span<const DocId> want, Packer& p) {
    for (const DocId d : want) p.put_string(local_where(d - local_.base));
  }, storage);
  const std::string where_earlier(told[static_cast<size_t>(owner_of(bases_, earlier))].get_string());
  steps_.agree([&] {
    if (!local_.has(later)) return;
    const bool later_number = later == number;
    throw FormatError(std::string("keep-by field \"") + ro_.reader.key_field + "\" is a " + (later_number ? "number" : "string") +
                          " here but a " + (later_number ? "string" : "number") + " in " + where_earlier +
                          "; give every record the same kind of value (numbers, or strings such as ISO dates)",
                      local_place(later - local_.base));
  });
}

// Shuffle by band key, bands in rounds of at most --shuffle-mb per rank; each rank groups the
// entries it owns into buckets (documents whose band agrees), then sends each bucket to the
// rank its member list hashes to, so that a bucket found in many bands (a cluster of copies)
// is verified once.
std::vector<std::vector<DocId>> Run::find_buckets() {
  const LshParams lsh = spec_.lsh;
  // Bands per round so that a rank sends at most kShuffleRoundBytes of entries (16 bytes each).
  constexpr uint64_t kShuffleRoundBytes = uint64_t{512} << 20;
  const uint64_t budget = kShuffleRoundBytes;
  const size_t per_band = std::max<size_t>(1, local_.size()) * 16;
  const int bands_per_round = static_cast<int>(std::clamp<uint64_t>(budget / per_band, 1, static_cast<uint64_t>(lsh.bands)));
  const int nranks = c_.size();
  std::vector<std::vector<DocId>> found;
  struct Entry {
    uint64_t key;
    uint32_t band;
    DocId doc;
  };
  for (int b0 = 0; b0 < lsh.bands; b0 += bands_per_round) {
    const int b1 = std::min(lsh.bands, b0 + bands_per_round);
    std::vector<std::string> out(static_cast<size_t>(nranks));
    for (size_t i = 0; i < local_.size(); ++i) {
      if (local_.sketches.empty[i]) continue;
      const auto sig = local_.sketches.signature(static_cast<DocId>(i));
      for (int band = b0; band < b1; ++band) {
        const Entry e{signature_band_key(sig, band, lsh, spec_.shingle.seed), static_cast<uint32_t>(band), static_cast<DocId>(local_.base + i)};
        out[static_cast<size_t>(mix64(e.key ^ (uint64_t{e.band} << 40)) % static_cast<uint64_t>(nranks))].append(
            reinterpret_cast<const char*>(&e), sizeof e);
      }
    }
    const auto in = c_.exchange(std::move(out));
    std::vector<Entry> entries;
    for (const std::string& buf : in) {
      const size_t n = buf.size() / sizeof(Entry);
      const size_t at = entries.size();
      entries.resize(at + n);
      std::memcpy(entries.data() + at, buf.data(), n * sizeof(Entry));
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.band != b.band ? a.band < b.band : a.key != b.key ? a.key < b.key : a.doc < b.doc;
    });
    for (size_t i = 0; i < entries.size();) {
      size_t j = i + 1;
      while (j < entries.size() && entries[j].band == entries[i].band && entries[j].key == entries[i].key) ++j;
      if (j - i >= 2) {
        std::vector<DocId> members;
        for (size_t x = i; x < j; ++x) members.push_back(entries[x].doc);
        found.push_back(std::move(members));
      }
      i = j;
    }
  }
  // The same bucket from several bands (or rounds) once, on the rank its members hash to.
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<std::string> out(static_cast<size_t>(nranks));
  for (const auto& m : found) {
    uint64_t h = m.size();
    for (const DocId d : m) h = mix64(h ^ d);
    Packer p;
    p.put_vector(m);
    out[static_cast<size_t>(h % static_cast<uint64_t>(nranks))] += p.bytes();
  }
  const auto in = c_.exchange(std::move(out));
  std::vector<std::vector<DocId>> buckets;
  for (const std::string& buf : in) {
    Unpacker u(buf);
    while (!u.done()) buckets.push_back(u.get_vector<DocId>());
  }
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  for (const auto& b : buckets) largest_bucket_ = std::max<uint64_t>(largest_bucket_, b.size());
  return buckets;
}

// Asks the ranks that read `docs` (sorted, distinct) about them: on each, prepare(everything
// asked of it) runs once, then answer(the documents a rank asks for, packer) packs one item per
// document; returns a reader per rank, from which the items come in the order of `docs`
// (`storage` holds the bytes).
std::vector<Unpacker> Run::ask_owners(const std::vector<DocId>& docs, const std::function<void(std::span<const DocId>, Packer&)>& answer,
                                      std::vector<std::string>& storage, const std::function<void(std::vector<DocId>)>& prepare) {
  std::vector<std::string> ask(static_cast<size_t>(c_.size()));
  {
    std::vector<std::vector<DocId>> per(static_cast<size_t>(c_.size()));
    for (const DocId d : docs) per[static_cast<size_t>(owner_of(bases_, d))].push_back(d);
    for (int r = 0; r < c_.size(); ++r) {
      Packer p;
      p.put_vector(per[static_cast<size_t>(r)]);
      ask[static_cast<size_t>(r)] = std::move(p.bytes());
    }
  }
  const auto asked = c_.exchange(std::move(ask));
  if (prepare) {  // everything asked of this rank, once, before the answers
    std::vector<DocId> all;
    for (const std::string& a : asked) {
      const auto want = Unpacker(a).get_vector<DocId>();
      all.insert(all.end(), want.begin(), want.end());
    }
    prepare(std::move(all));
  }
  std::vector<std::string> replies(static_cast<size_t>(c_.size()));
  for (int r = 0; r < c_.size(); ++r) {
    const auto want = Unpacker(asked[static_cast<size_t>(r)]).get_vector<DocId>();
    Packer p;
    answer(want, p);
    replies[static_cast<size_t>(r)] = std::move(p.bytes());
  }
  storage = c_.exchange(std::move(replies));
  std::vector<Unpacker> readers;
  for (const std::string& g : storage) readers.emplace_back(g);
  return readers;
}

// Computes the shingle sets of documents read here (ascending) that are not cached yet, from the
// inputs read again through the engine (shingle_set_records, as one process's verification
// reads): JSONL records by position, text files in runs of consecutive needed files. Sets are
// cached for the rest of the run (one process likewise keeps the sets of the documents in
// candidate pairs).
void Run::load_sets(std::vector<DocId> docs) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  std::erase_if(docs, [&](DocId d) { return set_cache_.count(d) != 0; });
  // Reads what `reader` gives, the k-th record being document read_docs[k].
  auto read = [&](io::RecordReader& reader, const std::vector<DocId>& read_docs) {
    shingle_set_records(reader, *inputs_, spec_, ro_.reader, threads_, [&](ShingledRecord& r) {
      if (r.ordinal >= read_docs.size()) throw IoError("the input changed while neardup-mpi was running (do not modify inputs during a run)");
      const DocId d = read_docs[r.ordinal];
      if (r.text_length != local_.lengths[d - local_.base])
        throw IoError("the record changed while neardup-mpi was running (do not modify inputs during a run)", local_place(d - local_.base));
      // A copy of the text of a record handed over before: its set.
      std::vector<ShingleHash> set = r.same_as != ShingledRecord::kNone ? set_cache_.at(read_docs[r.same_as]) : std::move(r.set);
      set_cache_.emplace(d, std::move(set));
    });
    if (!read_docs.empty() && set_cache_.count(read_docs.back()) == 0)
      throw IoError("the input changed while neardup-mpi was running (do not modify inputs during a run)", local_place(read_docs.back() - local_.base));
  };
  std::vector<io::RecordPos> positions;
  std::vector<DocId> by_position, files;
  for (const DocId d : docs) {
    const size_t l = d - local_.base;
    if (inputs_->sources()[local_.source[l]].kind == io::SourceKind::Jsonl) {
      positions.push_back(local_.pos[l]);
      by_position.push_back(d);
    } else {
      files.push_back(d);  // a text file: its one record
    }
  }
  if (!positions.empty()) {
    io::RecordReader reader(*inputs_, ro_.reader);
    reader.select(std::move(positions));
    read(reader, by_position);
  }
  for (size_t i = 0; i < files.size();) {
    size_t j = i + 1;
    const uint32_t first = local_.source[files[i] - local_.base];
    while (j < files.size() && local_.source[files[j] - local_.base] == first + (j - i)) ++j;
    io::RecordReader reader(*inputs_, ro_.reader);
    reader.read_sources(first, first + (j - i));
    read(reader, std::vector<DocId>(files.begin() + static_cast<ptrdiff_t>(i), files.begin() + static_cast<ptrdiff_t>(j)));
    i = j;
  }
}

// The payloads (and ids) of `docs`, from the ranks that read them: each computes the sets of
// its documents asked for (in parallel), as the single process's verification pass does.
Payloads Run::fetch(std::vector<DocId> docs, bool with_ids) {
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  const bool exact = spec_.verify == VerifyMode::Exact;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  std::vector<std::string> storage;
  // A failure while reading the sets again (an input changed) is agreed on after the exchange,
  // so that no rank leaves it halfway.
  std::exception_ptr failed;
  auto readers = ask_owners(docs, [&](std::span<const DocId> want, Packer& p) {
    if (failed) return;
    for (size_t i = 0; i < want.size(); ++i) {
      const size_t l = want[i] - local_.base;
      if (exact) p.put_vector(set_cache_.at(want[i]));
      // The signature too: the estimate, or (exact) whether two documents share a band.
      p.put_vector(local_.sketches.signature(static_cast<DocId>(l)));
      p.put_string(with_ids ? std::string_view(local_.ids[l]) : std::string_view());
    }
  }, storage, exact ? std::function<void(std::vector<DocId>)>([&](std::vector<DocId> all) {
    try {
      load_sets(std::move(all));
    } catch (...) {
      failed = std::current_exception();
    }
  }) : nullptr);
  steps_.agree([&] {
        if (failed) std::rethrow_exception(failed);
      });
  Payloads pl;
  pl.docs = docs;
  pl.sets = ShingleSets(docs.size());
  pl.sigs.resize(docs.size() * k);
  pl.ids.resize(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    Unpacker& u = readers[static_cast<size_t>(owner_of(bases_, docs[i]))];
    if (exact) pl.sets.set(static_cast<DocId>(i), u.get_vector<ShingleHash>());
    const auto sig = u.get_vector<SigValue>();
    std::copy(sig.begin(), sig.end(), pl.sigs.begin() + static_cast<ptrdiff_t>(i * k));
    pl.ids[i] = std::string(u.get_string());
  }
  return pl;
}

Scorer Run::scorer(const Payloads& pl) const {
  if (spec_.verify == VerifyMode::Exact) return Scorer::exact(pl.sets);
  return Scorer::signature_estimate(pl.sigs, static_cast<size_t>(spec_.num_perm));
}

// Verifies this rank's buckets (payloads in pl, numbered by pl.index), as one process does:
// dedup connects every pair of a bucket with similarity >= t (star edges first; then, in a
// bucket the stars left split, the pairs across its parts: pair by pair in a small bucket, by the
// exact join in a large one); pairs lists every such pair (the join for large buckets). The join
// keeps only pairs that share a band, so it adds no pair that LSH would not have proposed.
// Estimated similarities have no sets to join: large buckets are compared pair by pair.
// Returns the edges (dedup) or pairs, in global numbers.
std::vector<ScoredPair> Run::verify_buckets(const std::vector<std::vector<DocId>>& buckets, const Payloads& pl) {
  const Scorer score = scorer(pl);
  const double t = spec_.threshold;
  const bool exact = spec_.verify == VerifyMode::Exact;
  const size_t k = static_cast<size_t>(spec_.num_perm);
  constexpr size_t kDirect = 64;  // larger buckets: the join (exact), or one pair at a time
  auto local = [&](DocId d) { return static_cast<DocId>(pl.index(d)); };
  const PairFilter share = [&](DocId a, DocId b) {
    return share_band(std::span<const SigValue>(pl.sigs).subspan(a * k, k), std::span<const SigValue>(pl.sigs).subspan(b * k, k), spec_.lsh);
  };
  auto join_over = [&](const std::vector<const std::vector<DocId>*>& large) {
    std::vector<DocId> docs;
    for (const auto* b : large)
      for (const DocId d : *b) docs.push_back(local(d));
    std::sort(docs.begin(), docs.end());
    docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
    return std::make_unique<SetJoin>(docs, [&](DocId d) { return pl.sets.get(d); }, t, threads_);
  };
  std::vector<ScoredPair> out;
  auto to_global = [&](const std::vector<ScoredPair>& v) {
    for (const ScoredPair& p : v) out.push_back({pl.docs[p.a], pl.docs[p.b], p.similarity});
  };
  std::vector<DocPair> pairs;
  std::vector<const std::vector<DocId>*> large;
  if (!dedup_) {
    for (const auto& b : buckets) {
      if (exact && b.size() > kDirect) {
        large.push_back(&b);
        continue;
      }
      for (size_t y = 1; y < b.size(); ++y)
        for (size_t x = 0; x < y; ++x) pairs.push_back({local(b[x]), local(b[y])});
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    candidates_ += pairs.size();
    std::vector<ScoredPair> found = verify_pairs(pairs, score, t, threads_);
    if (!large.empty()) {
      const auto join = join_over(large);
      std::vector<ScoredPair> more = join->all_pairs(share);
      candidates_ += join->stats().verified;
      found.insert(found.end(), more.begin(), more.end());
    }
    to_global(found);
    return out;
  }
  for (const auto& b : buckets)
    for (size_t y = 1; y < b.size(); ++y) pairs.push_back({local(b[0]), local(b[y])});
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  candidates_ += pairs.size();
  UnionFind uf(pl.docs.size());
  std::vector<ScoredPair> edges;
  auto take = [&](const ScoredPair& e) {
    if (uf.unite(e.a, e.b)) edges.push_back(e);
  };
  for (const ScoredPair& e : verify_pairs(pairs, score, t, threads_)) take(e);
  std::vector<DocPair> direct;
  for (const auto& b : buckets) {
    bool split = false;
    for (const DocId d : b) split |= uf.find(local(d)) != uf.find(local(b[0]));
    if (!split) continue;
    if (b.size() <= kDirect) {
      for (size_t y = 2; y < b.size(); ++y)  // the pairs with b[0] are stars
        for (size_t x = 1; x < y; ++x)
          if (uf.find(local(b[x])) != uf.find(local(b[y]))) direct.push_back({local(b[x]), local(b[y])});
    } else if (exact) {
      large.push_back(&b);
    } else {
      for (size_t y = 1; y < b.size(); ++y)
        for (size_t x = 0; x < y; ++x) {
          const DocId lx = local(b[x]), ly = local(b[y]);
          if (uf.find(lx) == uf.find(ly)) continue;
          ++candidates_;
          const double sim = score(lx, ly);
          if (sim + kSimilarityEpsilon >= t) take({lx, ly, sim});
        }
    }
  }
  std::sort(direct.begin(), direct.end());
  direct.erase(std::unique(direct.begin(), direct.end()), direct.end());
  candidates_ += direct.size();
  for (const ScoredPair& e : verify_pairs(direct, score, t, threads_)) take(e);
  if (!large.empty()) {
    const auto join = join_over(large);
    for (const ScoredPair& e : join->connect(pl.docs.size(), edges, share)) take(e);
    candidates_ += join->stats().verified;
  }
  to_global(edges);
  return out;
}

// The connected components of the verified edges, without gathering them: every document in an
// edge (a vertex) stays on the rank that read it, labelled with the first document of its
// component. Each rank first joins its vertices along the edges it holds (union-find), then
// labels cross to the other ranks along the edges between them, round after round, until no
// label changes anywhere: as many rounds as the longest chain of ranks a component crosses, plus
// one.
struct Run::Components {
  std::vector<DocId> docs;   // this rank's vertices, ascending
  std::vector<DocId> first;  // per vertex: its component's first document
  int rounds = 0;
};

Run::Components Run::components(const std::vector<ScoredPair>& edges) {
  // Each edge to the ranks that read its two documents.
  std::vector<std::string> out(static_cast<size_t>(c_.size()));
  for (const ScoredPair& e : edges) {
    const int ra = owner_of(bases_, e.a), rb = owner_of(bases_, e.b);
    const DocPair p{e.a, e.b};
    out[static_cast<size_t>(ra)].append(reinterpret_cast<const char*>(&p), sizeof p);
    if (rb != ra) out[static_cast<size_t>(rb)].append(reinterpret_cast<const char*>(&p), sizeof p);
  }
  std::vector<DocPair> mine;
  for (const std::string& g : c_.exchange(std::move(out))) {
    const size_t at = mine.size();
    mine.resize(at + g.size() / sizeof(DocPair));
    std::memcpy(mine.data() + at, g.data(), g.size());
  }
  Components comp;
  for (const DocPair& p : mine) {
    if (local_.has(p.a)) comp.docs.push_back(p.a);
    if (local_.has(p.b)) comp.docs.push_back(p.b);
  }
  std::sort(comp.docs.begin(), comp.docs.end());
  comp.docs.erase(std::unique(comp.docs.begin(), comp.docs.end()), comp.docs.end());
  const size_t m = comp.docs.size();
  auto vertex = [&](DocId d) { return place_in(comp.docs, d); };
  UnionFind uf(m);
  std::vector<std::pair<uint32_t, DocId>> cross;  // (local vertex, remote document)
  for (const DocPair& p : mine) {
    const bool la = local_.has(p.a), lb = local_.has(p.b);
    if (la && lb) {
      uf.unite(vertex(p.a), vertex(p.b));
    } else {
      cross.push_back(la ? std::make_pair(vertex(p.a), p.b) : std::make_pair(vertex(p.b), p.a));
    }
  }
  // Labels per local part (its root): the part's first document to start with.
  std::vector<DocId> first(m, std::numeric_limits<DocId>::max());
  for (uint32_t i = 0; i < m; ++i) first[uf.find(i)] = std::min(first[uf.find(i)], comp.docs[i]);
  for (;;) {
    ++comp.rounds;
    std::vector<std::string> send(static_cast<size_t>(c_.size()));
    for (const auto& [v, d] : cross) {
      const DocId msg[2] = {d, first[uf.find(v)]};
      send[static_cast<size_t>(owner_of(bases_, d))].append(reinterpret_cast<const char*>(msg), sizeof msg);
    }
    int changed = 0;
    for (const std::string& g : c_.exchange(std::move(send))) {
      for (size_t at = 0; at + sizeof(DocId[2]) <= g.size(); at += sizeof(DocId[2])) {
        DocId msg[2];
        std::memcpy(msg, g.data() + at, sizeof msg);
        const size_t r = uf.find(vertex(msg[0]));
        if (msg[1] < first[r]) first[r] = msg[1], changed = 1;
      }
    }
    if (c_.all_reduce(changed, MPI_MAX) == 0) break;
  }
  comp.first.resize(m);
  for (uint32_t i = 0; i < m; ++i) comp.first[i] = first[uf.find(i)];
  return comp;
}

// Who keeps whom. Each component's members go to the rank that read its first document, with
// what their keep order needs (length, or the --keep-by value); that rank orders them as
// cluster.h and Pipeline do (ties by input order), then keeps the first of each component, or,
// with --cluster leader, runs the leader clustering over them with the sets of its members
// fetched. Each member's fate (its kept document, and the first document of its cluster for the
// numbering of --clusters) goes back to the rank that read it.
std::vector<Run::Fate> Run::decide(const Components& comp) {
  using Kind = io::KeyValue::Kind;
  const bool by_field = ro_.keep == KeepPolicy::Field;
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (size_t i = 0; i < comp.docs.size(); ++i) {
    const size_t l = comp.docs[i] - local_.base;
    Packer p;
    p.put(comp.first[i]);
    p.put(comp.docs[i]);
    p.put(local_.lengths[l]);
    p.put(by_field ? local_.key_kind[l] : uint8_t{0});
    p.put(by_field ? local_.key_num[l] : 0.0);
    p.put_string(by_field ? std::string_view(local_.key_text[l]) : std::string_view());
    send[static_cast<size_t>(owner_of(bases_, comp.first[i]))] += p.bytes();
  }
  struct Member {
    DocId first, doc;
    uint32_t length;
    Kind kind;
    double num;
    std::string_view text;
  };
  const auto got = c_.exchange(std::move(send));
  std::vector<Member> members;
  for (const std::string& g : got) {
    Unpacker u(g);
    while (!u.done()) {
      Member mb{};
      mb.first = u.get<DocId>();
      mb.doc = u.get<DocId>();
      mb.length = u.get<uint32_t>();
      mb.kind = static_cast<Kind>(u.get<uint8_t>());
      mb.num = u.get<double>();
      mb.text = u.get_string();
      members.push_back(mb);
    }
  }
  // Keep order: by the policy, then input order.
  const bool desc = ro_.keep_descending;
  auto before = [&](const Member& a, const Member& b) {
    if (ro_.keep == KeepPolicy::Longest && a.length != b.length) return a.length > b.length;
    if (by_field) {
      const bool ma = a.kind == Kind::Missing, mb = b.kind == Kind::Missing;
      if (ma != mb) return mb;
      if (!ma && a.kind == Kind::Number && a.num != b.num) return desc ? a.num > b.num : a.num < b.num;
      if (!ma && a.kind == Kind::String && a.text != b.text) return desc ? a.text > b.text : a.text < b.text;
    }
    return a.doc < b.doc;
  };
  std::sort(members.begin(), members.end(), [&](const Member& a, const Member& b) { return a.first != b.first ? a.first < b.first : before(a, b); });
  // keeper[i] for members[i]; with --cluster leader, each member kept in favour of the first
  // leader (in keep order) it is similar to, or a leader itself.
  std::vector<DocId> keeper(members.size());
  const bool leader = ro_.cluster == ClusterMode::Leader;
  Payloads pl;
  if (leader) {
    std::vector<DocId> docs;
    for (const Member& mb : members) docs.push_back(mb.doc);
    pl = fetch(std::move(docs), false);
  }
  const Scorer score = scorer(pl);
  std::vector<std::pair<size_t, size_t>> spans;  // components, in `members`
  for (size_t i = 0; i < members.size();) {
    size_t j = i + 1;
    while (j < members.size() && members[j].first == members[i].first) ++j;
    spans.push_back({i, j});
    i = j;
  }
  ThreadPool::current().parallel_for(spans.size(), leader ? threads_ : 1, [&](size_t c, size_t) {
    const auto [i, j] = spans[c];
    std::vector<DocId> leaders;
    for (size_t x = i; x < j; ++x) {
      DocId kept = members[x].doc;
      if (!leader) {
        kept = members[i].doc;
      } else {
        const DocId lx = static_cast<DocId>(pl.index(members[x].doc));
        for (const DocId l : leaders) {
          const DocId ll = static_cast<DocId>(pl.index(l));
          if (score(std::min(lx, ll), std::max(lx, ll)) + kSimilarityEpsilon >= spec_.threshold) {
            kept = l;
            break;
          }
        }
        if (kept == members[x].doc) leaders.push_back(kept);
      }
      keeper[x] = kept;
    }
  });
  // Each cluster (a kept document and those removed in its favour) is numbered by its first
  // document.
  std::unordered_map<DocId, DocId> group_first;
  for (size_t x = 0; x < members.size(); ++x) {
    auto [it, fresh] = group_first.emplace(keeper[x], members[x].doc);
    if (!fresh) it->second = std::min(it->second, members[x].doc);
  }
  std::unordered_map<DocId, uint32_t> group_size;
  for (size_t x = 0; x < members.size(); ++x) ++group_size[keeper[x]];
  std::vector<std::string> back(static_cast<size_t>(c_.size()));
  for (size_t x = 0; x < members.size(); ++x) {
    const Fate f{members[x].doc, keeper[x], group_first[keeper[x]], group_size[keeper[x]] >= 2};
    back[static_cast<size_t>(owner_of(bases_, f.doc))].append(reinterpret_cast<const char*>(&f), sizeof f);
  }
  std::vector<Fate> fates;
  for (const std::string& g : c_.exchange(std::move(back))) {
    const size_t at = fates.size();
    fates.resize(at + g.size() / sizeof(Fate));
    std::memcpy(fates.data() + at, g.data(), g.size());
  }
  std::sort(fates.begin(), fates.end(), [](const Fate& a, const Fate& b) { return a.doc < b.doc; });
  return fates;
}

// --clusters: each member goes to the rank that read its cluster's first document, which numbers
// its clusters after those of the ranks before it (clusters are numbered in the order of their
// first documents) and writes them, members in input order; rank 0 joins the pieces.
void Run::write_clusters(const std::vector<Fate>& fates, io::AtomicFile* out) {
  std::vector<std::string> send(static_cast<size_t>(c_.size()));
  for (const Fate& f : fates) {
    if (!f.clustered) continue;
    Packer p;
    p.put(f.first);
    p.put(f.doc);
    p.put(static_cast<uint8_t>(f.keeper == f.doc));
    p.put_string(local_.ids[f.doc - local_.base]);
    send[static_cast<size_t>(owner_of(bases_, f.first))] += p.bytes();
  }
  struct Member {
    DocId first, doc;
    bool kept;
    std::string_view id;
  };
  const auto got = c_.exchange(std::move(send));
  std::vector<Member> members;
  for (const std::string& g : got) {
    Unpacker u(g);
    while (!u.done()) {
      Member mb;
      mb.first = u.get<DocId>();
      mb.doc = u.get<DocId>();
      mb.kept = u.get<uint8_t>() != 0;
      mb.id = u.get_string();
      members.push_back(mb);
    }
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.first != b.first ? a.first < b.first : a.doc < b.doc; });
  uint64_t here = 0;
  for (size_t i = 0; i < members.size(); ++i) here += i == 0 || members[i].first != members[i - 1].first;
  uint64_t before = 0;
  MPI_Exscan(&here, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (c_.rank() == 0) before = 0;
  std::unique_ptr<io::AtomicFile> piece;
  const std::string path = piece_path("clusters");
  steps_.agree([&] {
        piece = std::make_unique<io::AtomicFile>(path);
        std::string line;
        uint64_t g = before;
        for (size_t i = 0; i < members.size(); ++i) {
          if (i > 0 && members[i].first != members[i - 1].first) ++g;
          line.assign(std::to_string(g)).push_back('\t');
          line.append(members[i].id).push_back('\t');
          line.append(members[i].kept ? "kept" : "removed").push_back('\n');
          piece->write(line);
        }
      });
  write_piece(path, piece.get(), out);
}

// Pieces of an output travel to rank 0 as chunks of up to kChunkBytes, each piece (or part)
// ended by an empty message.
constexpr size_t kChunkBytes = size_t{32} << 20;

// Sends up to `bytes` of `f` to rank 0 with `tag`, then the empty message; false if the file
// ended first (what was read is sent, and the empty message still ends it).
bool send_chunks(std::FILE* f, uint64_t bytes, int tag, std::string& buf) {
  buf.resize(kChunkBytes);
  bool whole = true;
  for (uint64_t left = bytes; left > 0 && f;) {
    const size_t n = std::fread(buf.data(), 1, static_cast<size_t>(std::min<uint64_t>(left, kChunkBytes)), f);
    if (n == 0) {
      whole = bytes == UINT64_MAX;  // to the end of the file: not short
      break;
    }
    MPI_Send(buf.data(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD);
    left -= n;
  }
  MPI_Send(buf.data(), 0, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
  return whole && f;
}

// Rank 0: receives rank r's chunks with `tag` up to the empty message, handing each to `put`
// until one throws; the first error is kept in `failed`, and the chunks after it are received
// and dropped, so that rank r is never left blocked in a send.
void receive_chunks(int r, int tag, std::string& buf, const std::function<void(std::string_view)>& put, std::exception_ptr& failed) {
  buf.resize(kChunkBytes);
  for (;;) {
    MPI_Status st;
    MPI_Probe(r, tag, MPI_COMM_WORLD, &st);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    MPI_Recv(buf.data(), n, MPI_BYTE, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (n == 0) return;
    try {
      if (!failed) put(std::string_view(buf.data(), static_cast<size_t>(n)));
    } catch (...) {
      failed = std::current_exception();
    }
  }
}

// Whether JSONL source s is compressed (read from its decompressed copy, or decompressed).
bool Run::compressed(size_t s) const { return inputs_->read_from_copy(s) || !splittable(inputs_->sources()[s]); }

// -o of JSONL: rank 0 writes every rank's kept records in rank order, each rank's sources in
// order: by copying the ranges a rank sent from the inputs, or, for a source flagged
// `bytes_follow`, by receiving its bytes from that rank, which sends them from its piece
// (`piece`, per source `piece_bytes`; listed for removal on a signal as `piece_slot`), a chunk at
// a time and an empty message after each source.
// Rank 0 keeps receiving after a failed write, so that no rank is left blocked in a send.
void Run::append_kept(const std::vector<std::string>& got, uint64_t bytes_follow, const std::string& piece,
                      const std::vector<uint64_t>& piece_bytes, int piece_slot, io::AtomicFile& final_out) {
  constexpr int kTag = 8;
  std::exception_ptr failed;  // the first error, raised once every byte was received
  std::string buf;
  if (c_.rank() == 0) {
    for (size_t r = 0; r < got.size(); ++r) {
      Unpacker u(got[r]);
      while (!u.done()) {
        const uint64_t word = u.get<uint64_t>();
        const size_t s = static_cast<size_t>(word & ~bytes_follow);
        const bool follow = (word & bytes_follow) != 0;
        std::vector<io::ByteRange> ranges;
        if (!follow) ranges = u.get_vector<io::ByteRange>();
        try {
          if (!follow && !failed) {
            const io::Source& src = inputs_->sources()[s];
            io::append_ranges(src.path, src.display, ranges, final_out, inputs_->read_from_copy(s));
          }
        } catch (...) {
          failed = std::current_exception();
        }
        if (!follow) continue;
        receive_chunks(static_cast<int>(r), kTag, buf, [&](std::string_view chunk) { final_out.write(chunk); }, failed);
      }
    }
  } else if (!piece.empty()) {
    // Each source's bytes end with an empty message, even from a short piece, whose error then
    // fails the run on every rank below.
    std::FILE* f = std::fopen(piece.c_str(), "rb");
    if (!f) failed = std::make_exception_ptr(IoError(piece + ": cannot open a piece of the output"));
    for (const uint64_t bytes : piece_bytes)
      if (!send_chunks(failed ? nullptr : f, bytes, kTag, buf) && !failed)
        failed = std::make_exception_ptr(IoError(piece + ": a piece of the output is shorter than was written"));
    if (f) std::fclose(f);
    std::remove(piece.c_str());
    io::unregister_temporary_file(piece_slot);
  }
  steps_.agree([&] {
    if (failed) std::rethrow_exception(failed);
  });
}

// Rank 0 writes `final_out` (opened before the work): its own piece, then each other rank's in
// rank order, sent over MPI a chunk at a time. Pieces are written to temporary files first.
void Run::write_piece(const std::string& path, io::AtomicFile* piece, io::AtomicFile* final_out) {
  int slot = -1;  // the committed piece, removed on a signal until it is read
  steps_.agree([&] {
        if (piece) piece->commit();
        if (piece) slot = io::register_temporary_file(path);
      });
  std::exception_ptr failed;
  std::string buf;
  if (c_.rank() == 0) {
    try {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw IoError(path + ": cannot open a piece of the output");
      for (uint64_t off = 0;; off += kChunkBytes)
        if (final_out->append_from(fd, off, kChunkBytes, path) < kChunkBytes) break;
      ::close(fd);
    } catch (...) {
      failed = std::current_exception();
    }
    for (int r = 1; r < c_.size(); ++r)
      receive_chunks(r, 7, buf, [&](std::string_view chunk) { final_out->write(chunk); }, failed);
  } else {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    send_chunks(f, UINT64_MAX, 7, buf);
    if (f) std::fclose(f);
  }
  std::remove(path.c_str());
  io::unregister_temporary_file(slot);
  steps_.agree([&] {
    if (failed) std::rethrow_exception(failed);
  });
}

double peak_rss_mib() {
  struct rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
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
  double t_read = 0, t_lsh = 0, t_verify = 0, t_cluster = 0, t_write = 0;
  // Options, inputs, shares and outputs: the same on every rank; only rank 0 speaks.
  std::vector<std::string> per_source;
  steps_.agree([&] {
        if (dedup_ && o_.output.empty() && o_.output_dir.empty())
          throw UsageError("dedup needs -o/--output FILE (or - for stdout) or --output-dir DIR for the kept records");
        if (!o_.output_dir.empty() && !o_.output.empty())
          throw UsageError("-o/--output and --output-dir exclude each other: one file for all kept records, or one per input file");
        if (!o_.rejects.empty() && o_.reader.on_error != io::OnError::Skip)
          throw UsageError("--rejects applies with --on-error skip (without it, the first bad record stops the run)");
        if (!o_.against.empty()) throw UsageError("--against runs in one process (neardup dedup --against)");
        if (!o_.report.empty()) throw UsageError("--report runs in one process (neardup dedup --report)");
        if (o_.estimate_memory) throw UsageError("--estimate-memory runs in one process (neardup dedup --estimate-memory)");
        ro_ = cli::run_options(cmd_, o_);
        spec_ = ro_.spec.resolved();
        if (!uses_signatures(spec_.method))
          throw UsageError("neardup-mpi runs --method oph and minhash; bottomk, simhash and exact run in one process (neardup)");

        if (o_.threads > 0) {
          threads_ = o_.threads;
        } else {
          MPI_Comm node;
          MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
          int here = 1;
          MPI_Comm_size(node, &here);
          MPI_Comm_free(&node);
          threads_ = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / here);
        }
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
      });
  const Share& share = shares_[static_cast<size_t>(c_.rank())];
  const size_t my_first = share.first, my_last = share.last;

  // Every output is opened before the work: rank 0 the merged ones, each rank its files.
  std::unique_ptr<io::AtomicFile> out, removed, clusters, rejects_out;
  std::vector<std::unique_ptr<io::AtomicFile>> dir_files(per_source.size());
  std::unique_ptr<io::AtomicFile> piece, removed_piece;
  cli::RejectsFile rejects;
  const bool one_output = per_source.empty();
  steps_.agree([&] {
        if (c_.rank() == 0) {
          if (one_output) out = cli::open_output(o_.output);
          if (!o_.removed.empty()) removed = cli::open_output(o_.removed);
          if (!o_.clusters.empty()) clusters = cli::open_output(o_.clusters);
          if (!o_.rejects.empty()) rejects_out = cli::open_output(o_.rejects);
        }
        for (size_t s = my_first; s < my_last && !per_source.empty(); ++s) {
          std::error_code ec;
          std::filesystem::create_directories(std::filesystem::path(per_source[s]).parent_path(), ec);
          if (ec) throw IoError(per_source[s] + ": cannot create its directory: " + ec.message() + "; check --output-dir");
          dir_files[s] = cli::open_output(per_source[s]);
        }
        // -o: pairs, or the kept paths of text files, go through a piece per rank.
        if (one_output && !(dedup_ && inputs_->all_jsonl())) piece = std::make_unique<io::AtomicFile>(piece_path("output"));
        if (dedup_ && !o_.removed.empty()) removed_piece = std::make_unique<io::AtomicFile>(piece_path("removed"));
        rejects.open(o_.rejects.empty() ? std::string() : piece_path("rejects"), ro_.reader);
      });

  // 1. Read and sketch the share.
  auto t = Clock::now();
  steps_.agree([&] { read_share(share); });

  if (const char* kill = std::getenv("NEARDUP_MPI_TEST_KILL_RANK"); kill && std::atoi(kill) == c_.rank()) ::raise(SIGKILL);
  number_documents();
  const uint64_t n = bases_.back();
  const uint64_t skipped = c_.all_reduce(local_.reader.skipped, MPI_SUM);
  const io::ReaderStats read_stats = gather_reader_stats();
  {
    // Every record bad: the first message of the first rank that skipped one, as one process says it.
    const int first_skipper = c_.all_reduce(local_.reader.first_skips.empty() ? c_.size() : c_.rank(), MPI_MIN);
    steps_.agree([&] {
          if (n == 0 && skipped > 0 && c_.rank() == first_skipper)
            throw FormatError("every record was bad (" + std::to_string(skipped) + " skipped, the first: " +
                              local_.reader.first_skips.front() + "); nothing to deduplicate: check --text-field, --format and the inputs");
        });
  }
  check_duplicate_ids();
  if (ro_.keep == KeepPolicy::Field) check_key_kinds();
  t_read = seconds_since(t);

  // 2. Buckets, by band key.
  t = Clock::now();
  const auto buckets = find_buckets();
  t_lsh = seconds_since(t);

  // 3. Verification where the buckets are.
  t = Clock::now();
  std::vector<ScoredPair> verified;
  {
    std::vector<DocId> members;
    for (const auto& b : buckets) members.insert(members.end(), b.begin(), b.end());
    const Payloads pl = fetch(std::move(members), false);
    steps_.agree([&] { verified = verify_buckets(buckets, pl); });
  }
  t_verify = seconds_since(t);
  const uint64_t candidates = c_.all_reduce(candidates_, MPI_SUM);
  const uint64_t largest = c_.all_reduce(largest_bucket_, MPI_MAX);

  // 4. Clusters (dedup), by label propagation over the verified edges; or the pairs, each on the
  // rank that read its first document.
  t = Clock::now();
  uint64_t clusters_n = 0, removed_n = 0, below = 0, pairs_n = 0, verified_n = 0;
  std::vector<std::pair<DocId, DocId>> my_removed;  // (removed, keeper), removed read here
  if (dedup_) {
    verified_n = c_.all_reduce(static_cast<uint64_t>(verified.size()), MPI_SUM);
    const Components comp = components(verified);
    label_rounds_ = comp.rounds;
    const std::vector<Fate> fates = decide(comp);
    for (const Fate& f : fates) {
      if (f.keeper != f.doc) my_removed.push_back({f.doc, f.keeper});
      if (f.clustered && f.keeper == f.doc) ++clusters_n;
    }
    removed_n = my_removed.size();
    if (!o_.clusters.empty()) write_clusters(fates, clusters.get());
    // Each removed document's similarity to its kept one, on the rank that read it.
    std::vector<DocId> need;
    for (const auto& [r, k] : my_removed) {
      need.push_back(r);
      need.push_back(k);
    }
    const Payloads pl = fetch(std::move(need), true);
    const Scorer score = scorer(pl);
    steps_.agree([&] {
          std::string line;
          for (const auto& [r, k] : my_removed) {
            const double s = score(static_cast<DocId>(pl.index(r)), static_cast<DocId>(pl.index(k)));
            if (s + kSimilarityEpsilon < spec_.threshold) ++below;
            if (!removed_piece) continue;
            line.assign(local_.ids[r - local_.base]).push_back('\t');
            line.append(pl.ids[pl.index(k)]).push_back('\t');
            io::append_similarity(line, s);
            line.push_back('\n');
            removed_piece->write(line);
          }
        });
  } else {
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
    std::sort(pairs.begin(), pairs.end(), [](const ScoredPair& x, const ScoredPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    pairs.erase(std::unique(pairs.begin(), pairs.end(), [](const ScoredPair& x, const ScoredPair& y) { return x.a == y.a && x.b == y.b; }),
                pairs.end());
    pairs_n = c_.all_reduce(static_cast<uint64_t>(pairs.size()), MPI_SUM);
    verified_n = pairs_n;
    std::vector<DocId> others;
    for (const ScoredPair& p : pairs) others.push_back(p.b);
    // The ids of the second documents read elsewhere.
    std::sort(others.begin(), others.end());
    others.erase(std::unique(others.begin(), others.end()), others.end());
    Payloads names;
    names.docs = others;
    {
      std::vector<std::string> storage;
      auto told = ask_owners(others, [&](std::span<const DocId> want, Packer& p) {
        for (const DocId d : want) p.put_string(local_.ids[d - local_.base]);
      }, storage);
      for (const DocId d : others) names.ids.emplace_back(told[static_cast<size_t>(owner_of(bases_, d))].get_string());
    }
    steps_.agree([&] {
          io::write_pairs(*piece, pairs, [&](DocId d) {
            return local_.has(d) ? std::string_view(local_.ids[d - local_.base]) : std::string_view(names.ids[names.index(d)]);
          });
        });
  }
  clusters_n = c_.all_reduce(clusters_n, MPI_SUM);
  removed_n = c_.all_reduce(removed_n, MPI_SUM);
  below = c_.all_reduce(below, MPI_SUM);
  t_cluster = seconds_since(t);

  // 5. The outputs: kept records of the files read here; then the merged files on rank 0.
  t = Clock::now();
  Packer kept_ranges;
  // -o with compressed inputs: a rank other than 0 copies the kept records of its compressed
  // files itself (from its decompressed copy) into a piece, and sends their bytes to rank 0,
  // which would otherwise decompress every other rank's files again, one after the other.
  constexpr uint64_t kBytesFollow = uint64_t{1} << 63;  // in kept_ranges: a source sent as bytes
  std::unique_ptr<io::AtomicFile> kept_piece;
  std::vector<uint64_t> kept_piece_bytes;  // per source in the piece, in order
  int kept_slot = -1;
  if (dedup_) steps_.agree([&] {
        std::sort(my_removed.begin(), my_removed.end());
        size_t ri = 0;
        auto kept = [&](size_t i) {
          const DocId d = static_cast<DocId>(local_.base + i);
          while (ri < my_removed.size() && my_removed[ri].first < d) ++ri;
          return !(ri < my_removed.size() && my_removed[ri].first == d);
        };
        if (inputs_->all_jsonl()) {
          std::vector<io::ByteRange> ranges;
          size_t i = 0;
          for (size_t s = my_first; s < my_last; ++s) {
            ranges.clear();
            for (; i < local_.size() && local_.source[i] == s; ++i) {
              if (!kept(i)) continue;
              const uint64_t begin = local_.pos[i].offset, len = uint64_t{local_.pos[i].length} + 1;
              if (!ranges.empty() && ranges.back().offset + ranges.back().length == begin)
                ranges.back().length += len;
              else
                ranges.push_back({begin, len});
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
              io::append_ranges(src.path, src.display, ranges, *dir_files[s], inputs_->read_from_copy(s));
              dir_files[s]->flush_appends();  // written whole: its buffers go to the next
            }
          }
          if (kept_piece) kept_piece->commit();
          if (kept_piece) kept_slot = io::register_temporary_file(kept_piece->path());  // removed on a signal until sent
        } else {
          for (size_t i = 0; i < local_.size(); ++i)
            if (kept(i)) {
              piece->write(local_.ids[i]);
              piece->put('\n');
            }
        }
      });
  if (dedup_ && one_output && inputs_->all_jsonl()) {
    std::vector<std::string> send(static_cast<size_t>(c_.size()));
    send[0] = std::move(kept_ranges.bytes());
    const auto got = c_.exchange(std::move(send));
    append_kept(got, kBytesFollow, kept_piece ? kept_piece->path() : std::string(), kept_piece_bytes, kept_slot, *out);
  }
  if (piece) write_piece(piece->path(), piece.get(), out.get());
  if (removed_piece) write_piece(removed_piece->path(), removed_piece.get(), removed.get());
  if (!o_.rejects.empty()) {
    const std::string path = piece_path("rejects");
    steps_.agree([&] { rejects.commit(); });
    write_piece(path, nullptr, rejects_out.get());
  }
  // Every rank has written everything: only now is anything renamed into place.
  steps_.agree([] {});
  steps_.agree([&] {
        for (auto& f : dir_files)
          if (f) f->commit();
        if (out) out->commit();
        if (removed) removed->commit();
        if (clusters) clusters->commit();
        if (rejects_out) rejects_out->commit();
      });
  t_write = seconds_since(t);

  const double rss = c_.all_reduce(peak_rss_mib(), MPI_MAX);
  const uint64_t shuffled = c_.all_reduce(c_.shuffled, MPI_SUM);
  const double t_read_max = c_.all_reduce(t_read, MPI_MAX);
  uint64_t empty = static_cast<uint64_t>(std::count(local_.sketches.empty.begin(), local_.sketches.empty.end(), 1));
  empty = c_.all_reduce(empty, MPI_SUM);
  uint64_t text_bytes = 0;
  for (const uint32_t l : local_.lengths) text_bytes += l;
  text_bytes = c_.all_reduce(text_bytes, MPI_SUM);
  if (c_.rank() == 0 && !o_.quiet) {
    cli::print_input_warnings(read_stats, n, inputs_->left_out(), cmd_, ro_.reader);
    const cli::SummaryCounts counts{n, empty, skipped, UINT64_MAX, candidates, verified_n, pairs_n, clusters_n, removed_n, below};
    std::fprintf(stderr, "neardup: %s, %.2f s on %d ranks [%s]\n", cli::summary_counts(counts, !dedup_).c_str(), seconds_since(t_start),
                 c_.size(), spec_.to_string().c_str());
    if (o_.show_stats)
      std::fprintf(stderr,
                   "neardup: stages: %.1f MB of text; read+shingle+sketch %.3f s (slowest rank); buckets %.3f s; verify %.3f s; "
                   "cluster %.3f s (%d label rounds); write %.3f s; shuffled %.0f bytes per document (%.1f MB over all ranks); largest bucket %llu; "
                   "peak memory %.0f MiB (largest rank); %d threads per rank\n",
                   static_cast<double>(text_bytes) / 1e6, t_read_max, t_lsh, t_verify, t_cluster, label_rounds_, t_write,
                   n ? static_cast<double>(shuffled) / static_cast<double>(n) : 0.0, static_cast<double>(shuffled) / 1e6,
                   static_cast<unsigned long long>(largest), rss, threads_);
  }
  return kExitOk;
}

}  // namespace
}  // namespace neardup::mpi

int main(int argc, char** argv) {
  using namespace neardup;
  cli::ask_huge_pages_for_the_heaps(argv);  // before MPI_Init: the exec keeps the rank's pid and environment
  MPI_Init(&argc, &argv);
  // mpirun ends the other ranks with SIGTERM when one dies: their temporary outputs go too.
  cli::install_signal_handlers("neardup-mpi");
  cli::return_large_blocks_at_once();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = kExitOk;
  {
    mpi::Comm comm;
    CLI::App app{"neardup-mpi: neardup pairs and dedup over MPI ranks, with the same outputs as one process", "neardup-mpi"};
    app.require_subcommand(1);
    app.set_version_flag("--version", [] { return version_info(); });
    cli::Options pairs_o, dedup_o;
    CLI::App* pairs = app.add_subcommand("pairs", "Write every near-duplicate pair: id1 TAB id2 TAB similarity");
    cli::add_pairs_dedup_options(pairs, pairs_o);
    pairs->add_option("-o,--output", pairs_o.output, "Output file (default: stdout)");
    CLI::App* dedup = app.add_subcommand("dedup", "Remove near-duplicates: write the kept records exactly as they were");
    cli::add_pairs_dedup_options(dedup, dedup_o);
    cli::add_keep_options(dedup, dedup_o);
    dedup->add_option("-o,--output", dedup_o.output, "Output file for the kept records ('-' for stdout)");
    dedup->add_option("--output-dir", dedup_o.output_dir,
                      "Instead of -o: each input file's kept records to DIR under the same name, written by the rank that read it");
    dedup->add_option("--removed", dedup_o.removed, "Write removed_id TAB kept_id TAB similarity per removed document");
    dedup->add_option("--clusters", dedup_o.clusters, "Write cluster TAB id TAB kept|removed per clustered document");
    app.footer("Exit codes as neardup's: 0 ok, 1 internal error, 2 usage error, 3 bad input data, 4 I/O error.");
    // What runs in one process only, named as such rather than as an unknown option.
    const auto one_process = [](const std::string& flag, const char* command) {
      return [flag, command] { throw UsageError(flag + " runs in one process (neardup " + command + " " + flag + ")"); };
    };
    dedup->add_option_function<std::string>("--against", [f = one_process("--against", "dedup")](const std::string&) { f(); })->group("");
    dedup->add_flag_callback("--add-kept", one_process("--add-kept", "dedup"))->group("");
    pairs->add_option_function<std::string>("--top", [f = one_process("--top", "pairs")](const std::string&) { f(); })->group("");
    // Every rank parses the same arguments: rank 0 speaks.
    if (const int bad = cli::check_command_words(app, argc, argv, "neardup-mpi", rank != 0); bad != 0) rc = bad;
    try {
      if (rc == kExitOk) {
        app.parse(argc, argv);
        const bool is_dedup = dedup->parsed();
        mpi::Run run(comm, is_dedup ? dedup : pairs, is_dedup ? dedup_o : pairs_o, is_dedup);
        rc = run.go();
      }
    } catch (const CLI::CallForHelp& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::CallForAllHelp& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::CallForVersion& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::ParseError& e) {
      rc = rank == 0 ? cli::report_parse_error(app, e, "neardup-mpi") : kExitUsage;
    } catch (const Error& e) {  // from the parse (one-process options): every rank the same
      if (rank == 0) std::fprintf(stderr, "neardup-mpi: error: %s\n", cli::flag_text(e).c_str());
      rc = cli::exit_code(e);
    }
  }
  MPI_Finalize();
  return rc;
}
