#include "neardup/io/reader.h"

#include "internal/parallel.h"
#include "internal/realloc_buffer.h"
#include "internal/testing.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fnmatch.h>

#include "internal/utf8.h"
#include "kernels/dispatch.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/writer.h"

namespace fs = std::filesystem;

namespace neardup::io {

// A copy of what can be read only once (spool_once).
struct Spooled {
  std::string path;
  int slot = -1;     ///< in the list of temporary files (a named file)
  int keep_fd = -1;  ///< the unnamed file, to close when it is no longer read
};

void write_copy(int fd, const char* p, size_t n, const std::string& display, const std::string& dir) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError(std::string("cannot write its temporary copy in ") + temp_directory(dir) + ": " + std::strerror(errno) +
                    "; free space or set TMPDIR to another directory", ErrorPlace{display});
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

namespace {

// Format from the file name: .jsonl/.ndjson/.json, optionally followed by a compression's suffix
// (compression_of_name).
SourceKind kind_from_name(std::string_view name, InputFormat format) {
  if (format == InputFormat::Jsonl) return SourceKind::Jsonl;
  if (format == InputFormat::Text) return SourceKind::TextFile;
  if (compression_of_name(name) != Compression::None) name.remove_suffix(name.size() - name.rfind('.'));
  for (std::string_view j : {".jsonl", ".ndjson", ".json"})
    if (name.ends_with(j)) return SourceKind::Jsonl;
  return SourceKind::TextFile;
}

// Makes a temporary file and has `fill` write a copy of what can be read only once (stdin, a
// pipe or process substitution such as <(zcat x.gz)) into it, so that later passes can read it
// again. Where the file system can make one, the file has no name (O_TMPFILE): it is read by
// /proc/self/fd/N, kept open by the caller, and nothing is left of it however the process ends.
// Otherwise it is listed for removal by a signal handler. `display` names the input in messages.
Spooled spool(const std::string& display, const std::string& dir_in, const std::function<void(int)>& fill) {
  const std::string dir = temp_directory(dir_in);
  Spooled out;
  int fd = open_unnamed(dir);
  if (fd >= 0) {
    out.path = descriptor_path(fd);
    out.keep_fd = fd;
  } else {
    out.path = dir + "/neardup-stdin-XXXXXX";
    fd = ::mkstemp(out.path.data());
    if (fd < 0)
      throw IoError(std::string("cannot create a temporary copy in ") + dir + ": " + std::strerror(errno) +
                    "; set TMPDIR to a writable directory", ErrorPlace{display});
    out.slot = register_temporary_file(out.path);
  }
  try {
    fill(fd);
  } catch (...) {
    ::close(fd);
    if (out.keep_fd < 0) {
      ::unlink(out.path.c_str());
      unregister_temporary_file(out.slot);
    }
    throw;
  }
  if (out.keep_fd < 0) ::close(fd);
  return out;
}

// spool() with the bytes read from descriptor `in`.
Spooled spool_once(int in, const std::string& display, const std::string& dir_in) {
  return spool(display, dir_in, [&](int fd) {
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t r = ::read(in, buf.data(), buf.size());
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        throw IoError(std::string("cannot read: ") + std::strerror(errno), ErrorPlace{display});
      }
      write_copy(fd, buf.data(), static_cast<size_t>(r), display, dir_in);
    }
  });
}

}  // namespace

namespace {

// Whether a file's first non-blank line is a JSON object (JSONL under a name that does not say
// so). Reads at most 64 KiB; a longer first line counts if it starts as an object with a key.
bool looks_like_jsonl(const std::string& path, const std::string& display) {
  std::string head;
  try {
    auto stream = open_stream(path, display);
    head.resize(1 << 16);
    size_t got = 0;
    while (got < head.size()) {
      const size_t r = stream->read(head.data() + got, head.size() - got);
      if (r == 0) break;
      got += r;
    }
    head.resize(got);
  } catch (const Error&) {
    return false;  // reported when the file is read
  }
  size_t i = 0;
  if (head.starts_with("\xEF\xBB\xBF")) i = 3;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) ++i;
  if (i >= head.size() || head[i] != '{') return false;
  const size_t nl = head.find('\n', i);
  if (nl == std::string::npos) {
    size_t j = i + 1;
    while (j < head.size() && (head[j] == ' ' || head[j] == '\t')) ++j;
    return head.size() == (1 << 16) && j < head.size() && head[j] == '"';
  }
  std::string line = head.substr(i, nl - i);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  return !parser.parse(line).get(doc) && doc.is_object();
}

bool is_hidden(const fs::path& name) {
  const std::string n = name.filename().string();
  return n.size() > 1 && n[0] == '.' && n != "..";
}

// fnmatch: a glob without '/' against the name, one with '/' against the relative path.
bool glob_matches(const std::vector<std::string>& globs, const std::string& rel) {
  const size_t slash = rel.rfind('/');
  const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  for (const std::string& g : globs) {
    const bool path_glob = g.find('/') != std::string::npos;
    if (::fnmatch(g.c_str(), path_glob ? rel.c_str() : name.c_str(), path_glob ? FNM_PATHNAME : 0) == 0) return true;
  }
  return false;
}

}  // namespace

bool bad_id_char(std::string_view id) noexcept { return id.find_first_of("\t\r\n") != std::string_view::npos; }

InputSet::InputSet(const std::vector<std::string>& paths, InputFormat format, const std::string& stdin_dir) {
  ReaderOptions o;
  o.format = format;
  expand(paths, o, stdin_dir);
}

InputSet::InputSet(const std::vector<std::string>& paths, const ReaderOptions& options, const std::string& stdin_dir) {
  expand(paths, options, stdin_dir);
}

InputSet::InputSet(std::vector<Document> documents) : documents_(std::move(documents)) {
  Source s;
  s.display = "<memory>";
  s.kind = SourceKind::Memory;
  s.name = "memory";
  sources_.push_back(std::move(s));
  for (const Document& d : documents_) total_bytes_ += d.text.size();
}

OnceCopy::OnceCopy(const std::string& display, const std::string& dir, const std::function<void(int)>& fill) {
  Spooled s = spool(display, dir, fill);
  path_ = std::move(s.path);
  slot_ = s.slot;
  fd_ = s.keep_fd;
}

OnceCopy::~OnceCopy() {
  if (fd_ >= 0) {
    ::close(fd_);
  } else {
    ::unlink(path_.c_str());
    unregister_temporary_file(slot_);
  }
}

// Standard input, spooled to a temporary file so that later passes can read it again.
void InputSet::add_stdin(InputFormat format, const std::string& stdin_dir) {
  Source s;
  s.path = own_spooled(spool_once(0, "<stdin>", stdin_dir));
  s.display = "<stdin>";
  s.kind = format == InputFormat::Text ? SourceKind::TextFile : SourceKind::Jsonl;
  s.doc_id = "-";  // as the user named it: never the temporary copy's path
  s.name = "stdin.jsonl";
  sources_.push_back(std::move(s));
}

// An input read once already, by the caller (ReaderOptions::copied_once): named as the user
// named it, read from `copy`, which the caller owns.
void InputSet::add_copied(const std::string& p, const std::string& copy, InputFormat format) {
  Source s;
  s.path = copy;
  if (p == "-") {
    s.display = "<stdin>";
    s.doc_id = "-";
    s.name = "stdin.jsonl";
    s.kind = format == InputFormat::Text ? SourceKind::TextFile : SourceKind::Jsonl;
  } else {
    s.display = p;
    s.doc_id = p;
    s.name = fs::path(p).filename().string();
    s.kind = kind_from_name(p, format);
    if (format == InputFormat::Auto && s.kind == SourceKind::TextFile && looks_like_jsonl(copy, p)) s.kind = SourceKind::Jsonl;
    if (s.kind == SourceKind::TextFile && bad_id_char(s.doc_id)) {
      s.problem = "the file name holds a TAB or line break, which would corrupt the TSV outputs; rename it";
      s.problem_kind = "bad id";
    }
  }
  sources_.push_back(std::move(s));
}

namespace {

struct Found {
  std::string rel, full, problem;
  bool operator<(const Found& o) const { return rel < o.rel; }
};

// Why a regular file of a folder cannot be read (no permission, a dangling link), or empty.
// False for what is not a document (FIFOs, sockets, devices).
bool file_problem(const fs::directory_entry& e, std::string& problem) {
  std::error_code ec;
  problem.clear();
  if (e.is_regular_file(ec)) {
    if (::access(e.path().c_str(), R_OK) != 0) problem = std::string("cannot read: ") + std::strerror(errno) + "; check its permissions";
    return true;
  }
  if (e.is_symlink(ec) && !fs::exists(e.status(ec))) {
    problem = "a symbolic link to nothing (" + fs::read_symlink(e.path(), ec).string() + ")";
    return true;
  }
  return false;
}

}  // namespace

// A folder: its files in name order, hidden and excluded entries left out and counted. A file
// that cannot be read is a bad input, reported in its turn (never silently left out).
void InputSet::add_directory(const std::string& p, const ReaderOptions& options) {
  std::vector<Found> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec), end;
  if (ec) throw IoError(std::string("cannot read directory: ") + ec.message() + "; check its permissions", ErrorPlace{p});
  for (; it != end; it.increment(ec)) {
    if (ec) throw IoError(std::string("cannot walk directory: ") + ec.message() + "; check its permissions", ErrorPlace{p});
    std::error_code ec2;
    const std::string rel = fs::relative(it->path(), p, ec2).generic_string();
    const bool dir = it->is_directory(ec2);
    // Hidden entries (.git, .DS_Store, editor backups) are not documents; a hidden folder is
    // not walked at all.
    const bool hidden = !options.hidden && is_hidden(it->path());
    if (hidden || (!options.exclude.empty() && glob_matches(options.exclude, rel))) {
      ++(hidden ? left_out_.hidden : left_out_.excluded);
      if (dir) it.disable_recursion_pending();
      continue;
    }
    if (dir) continue;
    std::string problem;
    if (!file_problem(*it, problem)) {
      ++left_out_.other;
      continue;
    }
    if (!options.include.empty() && !glob_matches(options.include, rel)) {
      ++left_out_.excluded;
      continue;
    }
    files.push_back({rel, it->path().string(), problem});
  }
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    Source s;
    s.path = f.full;
    // One form everywhere (ids, kept paths, messages): the folder as given joined with the
    // relative path, so that two folders with the same names inside stay apart.
    s.doc_id = (fs::path(p) / f.rel).lexically_normal().generic_string();
    s.display = s.doc_id;
    s.name = f.rel;
    s.kind = kind_from_name(f.rel, options.format);
    s.from_directory = true;
    s.problem = f.problem;
    if (!s.problem.empty()) s.problem_kind = "unreadable file";
    if (s.kind == SourceKind::TextFile && s.problem.empty() && bad_id_char(s.doc_id)) {
      s.problem = "the file name holds a TAB or line break, which would corrupt the TSV outputs; rename it";
      s.problem_kind = "bad id";
    }
    sources_.push_back(std::move(s));
  }
}

// A file named directly; a pipe or process substitution, which can be read once, is spooled
// like stdin.
void InputSet::add_file(const std::string& p, bool regular, InputFormat format, const std::string& stdin_dir) {
  if (::access(p.c_str(), R_OK) != 0)
    throw IoError(std::string("cannot read: ") + std::strerror(errno) + "; check its permissions", ErrorPlace{p});
  Source s;
  s.path = p;
  s.display = p;
  s.doc_id = p;
  s.name = fs::path(p).filename().string();
  s.kind = kind_from_name(p, format);
  if (!regular) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(std::string("cannot read: ") + std::strerror(errno) + "; check its permissions", ErrorPlace{p});
    Spooled spooled;
    try {
      spooled = spool_once(fd, p, stdin_dir);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    s.path = own_spooled(std::move(spooled));
  }
  if (format == InputFormat::Auto && s.kind == SourceKind::TextFile && looks_like_jsonl(s.path, p)) s.kind = SourceKind::Jsonl;
  if (s.kind == SourceKind::TextFile && bad_id_char(s.doc_id)) {
    s.problem = "the file name holds a TAB or line break, which would corrupt the TSV outputs; rename it";
    s.problem_kind = "bad id";
  }
  sources_.push_back(std::move(s));
}

void InputSet::expand(const std::vector<std::string>& paths, const ReaderOptions& options, const std::string& stdin_dir) {
  try {
    for (const std::string& p : paths) {
      if (const auto copy = std::find_if(options.copied_once.begin(), options.copied_once.end(),
                                         [&](const auto& c) { return c.first == p; });
          copy != options.copied_once.end()) {
        add_copied(p, copy->second, options.format);
        continue;
      }
      if (p == "-") {
        add_stdin(options.format, stdin_dir);
        continue;
      }
      std::error_code ec;
      const fs::file_status st = fs::status(p, ec);
      if (ec && ec != std::errc::no_such_file_or_directory)
        throw IoError(std::string("cannot access: ") + ec.message() + "; check the permissions of the path", ErrorPlace{p});
      if (!fs::exists(st)) throw IoError("no such file or directory; check the path", ErrorPlace{p});
      if (fs::is_directory(st))
        add_directory(p, options);
      else
        add_file(p, fs::is_regular_file(st), options.format, stdin_dir);
    }
  } catch (...) {
    for (const auto& t : temp_files_) ::unlink(t.c_str());
    for (const int slot : temp_slots_) unregister_temporary_file(slot);
    throw;
  }
  for (const Source& s : sources_) {
    struct stat sb;
    if (::stat(s.path.c_str(), &sb) == 0) total_bytes_ += static_cast<uint64_t>(sb.st_size);
  }
}

InputSet::~InputSet() {
  for (const auto& t : temp_files_) ::unlink(t.c_str());
  for (const int slot : temp_slots_) unregister_temporary_file(slot);
  for (const int fd : temp_fds_) ::close(fd);
}

// Owns a spooled copy: its file to remove, or its unnamed file's descriptor to close; its path.
std::string InputSet::own_spooled(Spooled spooled) {
  if (spooled.keep_fd >= 0) {
    temp_fds_.push_back(spooled.keep_fd);
  } else {
    temp_files_.push_back(spooled.path);
    temp_slots_.push_back(spooled.slot);
  }
  return std::move(spooled.path);
}

void InputSet::read_again_from(size_t source, std::unique_ptr<ScratchCopy> copy) {
  if (source >= sources_.size() || !copy) throw UsageError("InputSet::read_again_from: no such source, or no copy");
  if (copies_.size() < sources_.size()) copies_.resize(sources_.size());
  sources_[source].path = copy->path();
  copies_[source] = std::move(copy);
}

bool InputSet::read_from_copy(size_t source) const noexcept { return source < copies_.size() && copies_[source] != nullptr; }

bool InputSet::all_jsonl() const noexcept {
  return std::all_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.kind == SourceKind::Jsonl; });
}
bool InputSet::all_text() const noexcept {
  return std::all_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.kind == SourceKind::TextFile; });
}

void BadRecords::report(const std::string& where, const Rejected& r) {
  std::string msg = where + ": " + std::string(r.reason);
  if (policy_ == OnError::Fail) {
    // `where` is the source and line, the source alone (a whole file), or the source and the
    // byte where a line of unknown number starts: the error's place is the source and line.
    std::string text = r.line != 0 || where.size() <= r.input.size() + 2 ? std::string(r.reason)
                                                                         : where.substr(r.input.size() + 2) + ": " + std::string(r.reason);
    throw FormatError(text + "; fix the input, or skip bad records with " NEARDUP_OPT_IS("on_error", "skip"),
                      ErrorPlace{std::string(r.input), r.line});
  }
  ++skipped_;
  const std::string_view kind = r.kind.empty() ? std::string_view("other") : r.kind;
  auto k = std::find_if(kinds_.begin(), kinds_.end(), [&](const auto& e) { return e.first == kind; });
  if (k == kinds_.end())
    kinds_.emplace_back(std::string(kind), 1);
  else
    ++k->second;
  if (on_reject_) on_reject_(r);
  if (first_.size() < kFirstKept) first_.push_back(std::move(msg));
}

void BadRecords::add(uint64_t skipped, const std::vector<std::string>& first, const std::vector<std::pair<std::string, uint64_t>>& kinds) {
  skipped_ += skipped;
  for (const std::string& m : first)
    if (first_.size() < kFirstKept) first_.push_back(m);
  for (const auto& kind : kinds) {
    auto k = std::find_if(kinds_.begin(), kinds_.end(), [&](const auto& e) { return e.first == kind.first; });
    if (k == kinds_.end())
      kinds_.push_back(kind);
    else
      k->second += kind.second;
  }
}

std::string record_where(const Source& source, uint64_t line, uint64_t offset) {
  if (line == 0) return source.display + ": the line at byte " + std::to_string(offset);
  return source.display + ":" + std::to_string(line);
}

BadRecord bad_record(const Source& source, uint64_t line, uint64_t offset, std::string_view kind, std::string_view reason,
                     std::optional<std::string_view> record) {
  BadRecord b;
  b.where = record || line ? record_where(source, line, offset) : source.display;
  Rejected& r = b.rejected;
  r.input = source.display;
  r.line = line;
  r.offset = offset;
  r.kind = kind;
  r.reason = reason;
  r.has_record = record.has_value();
  if (record) r.record = *record;
  return b;
}

uint64_t line_number_at(const Source& source, uint64_t offset) {
  try {
    auto stream = open_stream(source.path, source.display);
    std::vector<char> buf(1 << 16);
    uint64_t done = 0, newlines = 0;
    while (done < offset) {
      const size_t got = stream->read(buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), offset - done)));
      if (got == 0) return 0;
      newlines += static_cast<uint64_t>(std::count(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(got), '\n'));
      done += got;
    }
    return newlines + 1;
  } catch (const Error&) {
    return 0;
  }
}

namespace {

const char* type_name(simdjson::dom::element_type t) {
  using T = simdjson::dom::element_type;
  switch (t) {
    case T::ARRAY: return "an array";
    case T::OBJECT: return "an object";
    case T::INT64:
    case T::UINT64:
    case T::DOUBLE: return "a number";
    case T::STRING: return "a string";
    case T::BOOL: return "a boolean";
    case T::NULL_VALUE: return "null";
  }
  return "?";
}

}  // namespace

const size_t JsonlParser::kPadding = simdjson::SIMDJSON_PADDING;

namespace {

// A field by name, or by dotted path through nested objects (`meta.content`) when the record has
// no field of that exact name.
simdjson::error_code find_field(simdjson::dom::object obj, std::string_view name, simdjson::dom::element& out) {
  if (!obj.at_key(name).get(out)) return simdjson::SUCCESS;
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return simdjson::NO_SUCH_FIELD;
  simdjson::dom::element cur;
  if (obj.at_key(name.substr(0, dot)).get(cur)) return simdjson::NO_SUCH_FIELD;
  name.remove_prefix(dot + 1);
  for (;;) {
    simdjson::dom::object o;
    if (cur.get_object().get(o)) return simdjson::NO_SUCH_FIELD;
    dot = name.find('.');
    if (o.at_key(name.substr(0, dot)).get(cur)) return simdjson::NO_SUCH_FIELD;
    if (dot == std::string_view::npos) {
      out = cur;
      return simdjson::SUCCESS;
    }
    name.remove_prefix(dot + 1);
  }
}

// Shows an id in a message: at most 60 bytes, control characters escaped.
std::string shown_id(std::string_view id) {
  std::string out;
  for (const char c : id.substr(0, 60)) {
    if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  if (id.size() > 60) out += "...";
  return out;
}

}  // namespace

namespace {
struct WordTextRun;
}  // namespace

struct JsonlParser::Impl {
  ReaderOptions opt;
  bool word_text = false;
  int threads = 1;
  // A long line's word text in place (word_text_validate, then word_text_write): where its parts
  // start, then the line's end; what each part gave; the part with the closing quote.
  std::vector<size_t> cuts;
  std::vector<WordTextRun> runs;
  size_t string_part = 0;
  // A long line's word text where the line may not be overwritten (a mapped file's). Kept from one
  // long line to the next, cut to keep_long_words before the next short line (the parsers of a
  // pass together keep no more than the reader keeps of its read buffers, which it does not use
  // on mapped files): long records come in groups (generated files), and faulting in a fresh
  // buffer for each of them took 4-6% of the CPU samples of `pairs` on the crowded mix.
  internal::ReallocBuffer long_words;
  size_t keep_long_words = 0;
  simdjson::dom::parser parser;
  std::string id_buf, sanitized, surrogates, skeleton;
  internal::ReallocBuffer words;
  uint64_t text_length = 0;
  bool replaced = false;
  bool missing_id = false;
  const char* kind = "";

  bool fields(simdjson::dom::element doc, const Source& source, uint64_t line_no, Record& out, std::string& problem);
  bool parse_word_text(std::string_view line, bool long_line, char* in_place, const Source& source, uint64_t line_no, Record& out);
  int word_text_copy(std::string_view line, size_t begin, uint64_t& blanked, size_t& n);
  int word_text_decoding(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);  // after word_text_copy
  void cut_parts(std::string_view line, size_t begin);
  void run_parts(std::string_view line, size_t begin, size_t parts, char* to);
  int settle_parts(size_t begin, size_t& n, size_t& text, uint64_t& decoded);
  void pack_parts(size_t begin, char* to);
  int word_text_validate(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);
  void word_text_write(std::string_view line, size_t begin, char* to);
  int word_text_into_long_words(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded);
};

JsonlParser::JsonlParser(const ReaderOptions& options, bool word_text, int threads) : impl_(std::make_unique<Impl>()) {
  impl_->opt = options;
  impl_->word_text = word_text;
  impl_->threads = std::max(threads, 1);
  impl_->keep_long_words = kKeptReadBufferBytes / static_cast<size_t>(impl_->threads);
}
JsonlParser::~JsonlParser() = default;
bool JsonlParser::replaced_invalid_utf8() const noexcept { return impl_->replaced; }
bool JsonlParser::missing_id() const noexcept { return impl_->missing_id; }
const char* JsonlParser::problem_kind() const noexcept { return impl_->kind; }
uint64_t JsonlParser::text_length() const noexcept { return impl_->text_length; }

namespace {
// Word text is tried on lines from this long (shorter ones gain nothing from the second parse, of
// the skeleton).
std::atomic<size_t> word_text_min_line{256};
}  // namespace

size_t set_word_text_min_line(size_t bytes) noexcept { return word_text_min_line.exchange(bytes); }

bool JsonlParser::parse(std::string_view line, const Source& source, uint64_t line_no, Record& out, std::string& problem,
                        char* overwritable) {
  Impl& m = *impl_;
  // Word text is tried first on every line long enough to gain from it; its \u escapes are
  // decoded where they are (JSON written with ASCII only escapes every non-ASCII character). So
  // whether a text comes as word text or decoded depends on its own line alone, never on the
  // lines this parser met before: the same line gives the same text on every thread and in every
  // run. A line of kWordTextMaxLine or more is made word text in place where it may be.
  const bool long_line = line.size() >= kWordTextMaxLine;
  char* const in_place = long_line ? overwritable : nullptr;
  // simdjson keeps the buffers of the largest line it parsed (its text, tape and indexes: several
  // times the line), and long_words the word text of the longest line; after a large record they
  // are let go before the next small one, so that one 20 MB record does not hold them for the
  // rest of the pass on every thread.
  constexpr size_t kLargeCapacity = size_t{4} << 20;
  if (m.long_words.size() > m.keep_long_words && line.size() <= kLargeCapacity / 4) {
    if (m.keep_long_words >= internal::ReallocBuffer::kMapBytes) m.long_words.resize(m.keep_long_words);  // in place, its first pages kept
    else m.long_words = internal::ReallocBuffer();
  }
  if (m.word_text && line.size() >= word_text_min_line.load(std::memory_order_relaxed) &&
      m.parse_word_text(line, long_line, in_place, source, line_no, out))
    return true;
  if (m.parser.capacity() > kLargeCapacity && line.size() <= kLargeCapacity / 4) m.parser = simdjson::dom::parser();
  simdjson::dom::element doc;
  auto err = m.parser.parse(line.data(), line.size(), false).get(doc);
  m.replaced = false;
  if (err == simdjson::UTF8_ERROR) {
    internal::sanitize_utf8(line.data(), line.size(), m.sanitized);
    m.replaced = true;
    m.sanitized.reserve(m.sanitized.size() + kPadding);
    err = m.parser.parse(m.sanitized.data(), m.sanitized.size(), false).get(doc);
  }
  // A \uD800-\uDFFF escape outside a surrogate pair is valid JSON but no character (Python's
  // json.dumps writes them): it becomes \uFFFD, like invalid UTF-8.
  if (err == simdjson::STRING_ERROR) {
    std::string& fixed = m.replaced ? m.surrogates : m.sanitized;
    const std::string_view from = m.replaced ? std::string_view(m.sanitized) : line;
    if (internal::replace_lone_surrogate_escapes(from, fixed)) {
      m.replaced = true;
      fixed.reserve(fixed.size() + kPadding);
      err = m.parser.parse(fixed.data(), fixed.size(), false).get(doc);
    }
  }
  m.missing_id = false;
  m.kind = "";
  if (err) {
    problem = std::string("malformed JSON (") + simdjson::error_message(err) + ")";
    m.kind = "malformed JSON";
    return false;
  }
  if (!m.fields(doc, source, line_no, out, problem)) return false;
  m.text_length = out.text.size();
  return true;
}

// The record's fields from its parsed line.
bool JsonlParser::Impl::fields(simdjson::dom::element doc, const Source& source, uint64_t line_no, Record& out,
                               std::string& problem) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) {
    problem = std::string("the line is ") + type_name(doc.type()) + ", not a JSON object";
    kind = "not a JSON object";
    return false;
  }
  simdjson::dom::element text_el;
  if (find_field(obj, opt.text_field, text_el)) {
    problem = "missing text field \"" + opt.text_field + "\" (choose another with " NEARDUP_OPT("text_field") "; nested fields as a.b)";
    kind = "missing text field";
    return false;
  }
  std::string_view text;
  if (text_el.get_string().get(text)) {
    problem = "text field \"" + opt.text_field + "\" is " + type_name(text_el.type()) + ", not a string";
    kind = "text not a string";
    return false;
  }
  simdjson::dom::element id_el;
  if (find_field(obj, opt.id_field, id_el)) {
    id_buf = source.display + ":" + std::to_string(line_no);
    out.id = id_buf;
    missing_id = true;
  } else if (id_el.is_string()) {
    out.id = id_el.get_string().value_unsafe();
  } else if (id_el.is_number()) {
    id_buf = simdjson::minify(id_el);  // the number as written: 42, 1e3, 0.5
    out.id = id_buf;
  } else {
    problem = "id field \"" + opt.id_field + "\" is " + type_name(id_el.type()) + ", not a string or number";
    kind = "bad id";
    return false;
  }
  if (bad_id_char(out.id)) {
    problem = "id \"" + shown_id(out.id) + "\" holds a TAB, CR or LF, which would corrupt the TSV outputs (pairs, "
              NEARDUP_OPT("removed") ", " NEARDUP_OPT("clusters") "); remove them from the ids";
    kind = "bad id";
    return false;
  }
  out.key = KeyValue{};
  if (!opt.key_field.empty()) {
    simdjson::dom::element key_el;
    if (!find_field(obj, opt.key_field, key_el) && !key_el.is_null()) {
      if (key_el.is_number()) {
        out.key.kind = KeyValue::Kind::Number;
        out.key.number = key_el.get_double().value_unsafe();
      } else if (key_el.is_string()) {
        out.key.kind = KeyValue::Kind::String;
        out.key.text = key_el.get_string().value_unsafe();
      } else {
        problem = "keep-by field \"" + opt.key_field + "\" is " + type_name(key_el.type()) + ", not a number or string";
        kind = "bad keep-by field";
        return false;
      }
    }
  }
  if (!limit_doc_text(text, opt, problem)) {
    kind = "longer than " NEARDUP_OPT("max_doc_bytes");
    return false;
  }
  out.text = text;
  return true;
}

namespace {

inline bool json_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Where the string value of the top-level field `key` starts (the byte after its opening quote),
// found by walking the line's tokens up to it; npos when there is no such field written without
// escapes, or its value is not a string. Only strings and brackets are followed: the skeleton's
// parse validates the rest.
size_t top_level_string_value(std::string_view line, std::string_view key) {
  const size_t n = line.size();
  int depth = 0;
  size_t i = 0;
  while (i < n) {
    const char c = line[i];
    if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return std::string_view::npos;
      ++i;
    } else if (c == '"') {
      const size_t s = ++i;
      bool escapes = false;
      while (i < n && line[i] != '"') {
        if (line[i] == '\\') {
          escapes = true;
          ++i;
        }
        ++i;
      }
      if (i >= n) return std::string_view::npos;
      const std::string_view str = line.substr(s, i - s);
      ++i;
      size_t j = i;
      while (j < n && json_space(line[j])) ++j;
      if (depth != 1 || j >= n || line[j] != ':' || escapes || str != key) continue;  // not the key
      ++j;
      while (j < n && json_space(line[j])) ++j;
      return j < n && line[j] == '"' ? j + 1 : std::string_view::npos;
    } else {
      ++i;
    }
  }
  return std::string_view::npos;
}

// Whether the skeleton's text field is the one parse_word_text blanked: exactly one top-level
// field of that name, an empty string. The walk compares keys as written and the DOM parser
// decoded ("te\u0078t" is found by the second only), and both take the first of repeated keys.
bool blanked_text_field(simdjson::dom::element doc, std::string_view name) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) return false;
  int found = 0;
  for (const auto field : obj) {
    if (field.key != name) continue;
    std::string_view text;
    if (++found > 1 || field.value.get_string().get(text) || !text.empty()) return false;
  }
  return found == 1;
}

}  // namespace

namespace {

// JSON string contents decoded from in[0] up to the closing quote, or up to `stop` where the
// string goes on (an escape that crosses `stop` is read whole, up to in[limit), the end of the
// line). The decoded bytes go to out (at most as many as are read). Returns kJsonWordTextOk with
// *consumed at the closing quote, kJsonWordTextOpen with *consumed >= stop, or
// kJsonWordTextInvalid for anything the full parse must see: a control character, an unknown or
// cut escape, a \uD800-\uDFFF escape that is not half of a pair (it is replaced there).
// Decoded as simdjson decodes: \uXXXX and surrogate pairs as UTF-8, the others as their byte.
int decode_json_piece(const uint8_t* in, size_t stop, size_t limit, uint8_t* out, size_t* consumed, size_t* produced) noexcept {
  const auto hex4 = [&](size_t at, uint32_t& v) { return internal::hex4_at(reinterpret_cast<const char*>(in), at, limit, v); };
  size_t r = 0, w = 0;
  while (r < stop) {
    const uint8_t c = in[r];
    if (c == '"') {
      *consumed = r;
      *produced = w;
      return internal::kJsonWordTextOk;
    }
    if (c < 0x20) return internal::kJsonWordTextInvalid;
    if (c != '\\') {
      out[w++] = c;
      ++r;
      continue;
    }
    if (r + 1 >= limit) return internal::kJsonWordTextInvalid;
    const uint8_t e = in[r + 1];
    if (e != 'u') {
      const uint8_t d = e == '"' ? '"' : e == '\\' ? '\\' : e == '/' ? '/' : e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : 0;
      if (d == 0) return internal::kJsonWordTextInvalid;
      out[w++] = d;
      r += 2;
      continue;
    }
    uint32_t cp = 0, low = 0;
    if (!hex4(r + 2, cp)) return internal::kJsonWordTextInvalid;
    r += 6;
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      if (cp > 0xDBFF || r + 1 >= limit || in[r] != '\\' || in[r + 1] != 'u' || !hex4(r + 2, low) || low < 0xDC00 || low > 0xDFFF)
        return internal::kJsonWordTextInvalid;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      r += 6;
    }
    w = static_cast<size_t>(internal::put_utf8(reinterpret_cast<char*>(out + w), cp) - reinterpret_cast<char*>(out));
  }
  *consumed = r;
  *produced = w;
  return internal::kJsonWordTextOpen;
}

}  // namespace

// Whether the text from its first \u escape on (`rest`) is written mostly in them: 8 or more in
// its next 512 bytes, as in JSON written with ASCII only of a language in another script (most of
// whose characters are then escaped). Those are decoded block by block slower than the full parse
// decodes them. A test of the line alone, so that a line's text always takes the same path.
static bool dense_escapes(std::string_view rest) noexcept {
  const std::string_view window = rest.substr(0, 512);
  int escapes = 0;
  for (size_t i = window.find('\\'); i != std::string_view::npos && i + 1 < window.size(); i = window.find('\\', i + 2))
    escapes += window[i + 1] == 'u';
  return escapes >= 8;
}

// The fast path of word text (JsonlParser's constructor): the text field's raw contents are found
// by a walk over the tokens before them, turned into word text by the json_word_text kernel,
// which also validates them and finds their end, and validated as UTF-8; the rest of the line
// (the skeleton: the line with those contents cut out) is parsed by the DOM parser, which
// validates it and gives the other fields as the full parse would. False, with nothing reported,
// where the full parse must decide: anything it would reject or decode differently (a lone
// surrogate, a text over max_doc_bytes, a field name written with escapes).
//
// A short line's word text is a copy of the contents in `words`, taken on past its first \u
// escape with the blocks that hold them decoded (word_text_decoding). A long line's is made in parts
// (word_text_run: the 64-byte blocks holding \u escapes decoded, which only shortens them): given
// `in_place` (line.data() as memory the caller lets the parser overwrite), the contents
// themselves with their escapes blanked, so that a text of tens of MB costs no second buffer of
// its size; else a copy in long_words (a mapped line). A fresh buffer is the dear part of such a
// record: its pages are faulted in and zeroed (half of the CPU time of one 50 MB record of source
// code went to zeroing the full parse's). The line is overwritten only once everything is
// validated, so that nothing but word text is lost (a line rejected, or decoded by the full
// parse, keeps its bytes).
bool JsonlParser::Impl::parse_word_text(std::string_view line, bool long_line, char* in_place, const Source& source, uint64_t line_no,
                                         Record& out) {
  if (opt.text_field.find('.') != std::string::npos) return false;  // a dotted path: find_field's rules
  const size_t begin = top_level_string_value(line, opt.text_field);
  if (begin == std::string_view::npos) return false;
  size_t n = 0, text = 0;
  uint64_t decoded = 0;
  int status;
  if (in_place) {
    status = word_text_validate(line, begin, n, text, decoded);
  } else if (long_line) {
    status = word_text_into_long_words(line, begin, n, text, decoded);
  } else {
    uint64_t blanked = 0;
    status = word_text_copy(line, begin, blanked, n);
    text = n;
    decoded = n - blanked / 2;
    if (status == internal::kJsonWordTextDecode) {
      if (dense_escapes(line.substr(begin + n))) return false;  // for the full parse, faster at them
      status = word_text_decoding(line, begin, n, text, decoded);
    }
  }
  if (status != internal::kJsonWordTextOk) return false;
  if (decoded > opt.max_doc_bytes) return false;  // cut by limit_doc_text, at a decoded position
  // The skeleton's parse validates its own UTF-8; the contents are bordered by ASCII quotes.
  if (!simdjson::validate_utf8(line.data() + begin, n)) return false;
  skeleton.assign(line.data(), begin);
  skeleton.append(line.data() + begin + n, line.size() - begin - n);
  skeleton.reserve(skeleton.size() + kPadding);
  simdjson::dom::element doc;
  if (parser.parse(skeleton.data(), skeleton.size(), false).get(doc) || !blanked_text_field(doc, opt.text_field)) return false;
  replaced = false;
  missing_id = false;
  kind = "";
  std::string problem;
  if (!fields(doc, source, line_no, out, problem)) return false;
  if (in_place) {
    word_text_write(line, begin, in_place + begin);  // validated above: `text` bytes
    out.text = std::string_view(in_place + begin, text);
  } else if (long_line) {
    out.text = std::string_view(long_words.data(), text);
  } else {
    out.text = std::string_view(words.data(), text);
  }
  text_length = decoded;
  return true;
}

int JsonlParser::Impl::word_text_copy(std::string_view line, size_t begin, uint64_t& blanked, size_t& n) {
  const size_t avail = line.size() - begin;
  if (words.size() < avail + 64) words.resize(avail + 64);
  const auto* raw = reinterpret_cast<const uint8_t*>(line.data() + begin);
  const int status = internal::kernels().json_word_text(raw, avail, reinterpret_cast<uint8_t*>(words.data()), &blanked, &n);
  return status == internal::kJsonWordTextOpen ? internal::kJsonWordTextInvalid : status;  // the line ends unclosed
}

namespace {

// Word text of a JSON string's contents, line[from, until), a piece of about 256 KiB at a time
// through `scratch` (a piece's room, reused: warm in the cache): each piece is made word text by
// the kernel, with each 64-byte block that holds a \u escape decoded (decode_json_piece). Pieces
// are cut after a byte that is not a backslash, so that no escape but a \u one spans two (a
// decoded block reads that one whole); `until` is the line's end, or a cut that no escape spans.
// With `to`, the result goes there, to[0] on; to may be line.data() + from, which the result
// never overtakes (decoding only shortens it). Past `max_decoded` decoded bytes it stops, invalid:
// a text over max_doc_bytes is cut by the full parse, and is not read whole here first.
struct WordTextRun {
  int status = internal::kJsonWordTextOpen;  // Ok: the closing quote at line[end]; Open: end == until
  size_t end = 0;
  size_t text = 0;       // bytes of the result
  uint64_t decoded = 0;  // length of the decoded string
};
constexpr size_t kWordTextPiece = size_t{256} << 10;

WordTextRun word_text_run(std::string_view line, size_t from, size_t until, uint64_t max_decoded, uint8_t* scratch, char* to) {
  const auto* in = reinterpret_cast<const uint8_t*>(line.data());
  WordTextRun r;
  for (size_t at = from; at < until;) {
    size_t stop = until;
    if (stop - at > kWordTextPiece) {
      stop = at + kWordTextPiece;
      while (stop > at && line[stop - 1] == '\\') --stop;
      if (stop == at) {  // a run of backslashes as long as a piece: let the full parse see
        r.status = internal::kJsonWordTextInvalid;
        return r;
      }
    }
    size_t pos = at, made = 0;
    int status = internal::kJsonWordTextOpen;
    while (pos < stop) {
      uint64_t blanked = 0;
      size_t length = 0;
      status = internal::kernels().json_word_text(in + pos, stop - pos, scratch + made, &blanked, &length);
      if (status == internal::kJsonWordTextOpen) length = stop - pos;
      if (status == internal::kJsonWordTextInvalid) break;
      made += length;
      r.decoded += length - blanked / 2;
      pos += length;
      if (status != internal::kJsonWordTextDecode) break;
      size_t read = 0, wrote = 0;
      status = decode_json_piece(in + pos, std::min<size_t>(64, stop - pos), line.size() - pos, scratch + made, &read, &wrote);
      if (status == internal::kJsonWordTextInvalid) break;
      made += wrote;
      r.decoded += wrote;
      pos += read;
      if (status == internal::kJsonWordTextOk) break;
    }
    if (status == internal::kJsonWordTextInvalid) {
      r.status = status;
      return r;
    }
    if (to) std::memcpy(to + r.text, scratch, made);
    r.text += made;
    at = pos;
    if (r.decoded > max_decoded) {  // longer than max_doc_bytes: the full parse cuts it
      r.status = internal::kJsonWordTextInvalid;
      return r;
    }
    if (status == internal::kJsonWordTextOk) {
      r.status = status;
      r.end = pos;
      return r;
    }
  }
  r.end = until;
  return r;
}

// Each thread's room for word_text_run (a piece's, reused: warm in the cache).
uint8_t* word_text_scratch() {
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(kWordTextPiece + 128);
  return scratch.data();
}

}  // namespace

// A short line's word text taken on where word_text_copy stopped, at the 64-byte block holding the
// first \u escape (n: the bytes copied; text and decoded: what they gave): the rest, with each
// block that holds such an escape decoded (word_text_run), goes into `words` (which word_text_copy
// sized to hold the contents) after them. Before, a parser that met such a line parsed the next
// 15 whole, so a text's form hung on the lines before it. On the crowded mix's 641 lines with \u escapes, five
// times over (67 MB), the first pass's parse took 0.015 s of CPU against 0.025 s. On the kernel's
// Documentation/translations written with ASCII only, 30 times over (153 MB: Chinese, Japanese,
// Korean, whose every character is an escape), decoding every line here took 0.30 s against
// 0.17-0.18 s; with dense_escapes sending those lines to the full parse, 0.18 s.
int JsonlParser::Impl::word_text_decoding(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  if (decoded > opt.max_doc_bytes) return internal::kJsonWordTextInvalid;  // the full parse cuts it
  const WordTextRun r =
      word_text_run(line, begin + n, line.size(), opt.max_doc_bytes - decoded, word_text_scratch(), words.data() + text);
  if (r.status != internal::kJsonWordTextOk) return internal::kJsonWordTextInvalid;  // unclosed, or for the full parse to judge
  n = r.end - begin;
  text += r.text;
  decoded += r.decoded;
  return internal::kJsonWordTextOk;
}

// The contents from line[begin] as word text in place (word_text_run), on up to `threads`
// threads: the contents are cut into parts where none of the 11 bytes before a cut is a
// backslash (so that no escape, 12 bytes at most, spans it), and each part is validated on its
// own (word_text_validate), then written where it lies (a part's result never overtakes its own
// bytes) and moved down behind the part before (word_text_write).

// Parts of at least 1 MiB, four per thread (their speed varies: decoded blocks are slower), cut
// into `cuts` (each part's start, then the line's end).
void JsonlParser::Impl::cut_parts(std::string_view line, size_t begin) {
  const size_t size = line.size() - begin;
  const size_t parts = threads > 1 ? std::min<size_t>(4 * static_cast<size_t>(threads), size >> 20) : 1;
  cuts.assign(1, begin);
  for (size_t k = 1; k < parts; ++k) {
    size_t at = begin + size / parts * k;
    const size_t give_up = std::min(at + (size_t{64} << 10), line.size());
    size_t clean = 0;  // bytes without a backslash just before `at`
    for (size_t j = at - 11; j < at; ++j) clean = line[j] == '\\' ? 0 : clean + 1;
    while (clean < 11 && at < give_up) clean = line[at++] == '\\' ? 0 : clean + 1;
    if (clean >= 11 && at > cuts.back() && at < line.size()) cuts.push_back(at);
  }
  cuts.push_back(line.size());
}

// word_text_run over the first `parts` parts into runs[], each written where it lies with `to`
// (line.data() + begin).
void JsonlParser::Impl::run_parts(std::string_view line, size_t begin, size_t parts, char* to) {
  runs.resize(cuts.size() - 1);
  internal::parallel_for(parts, threads, [&](size_t i, size_t) {
    runs[i] = word_text_run(line, cuts[i], cuts[i + 1], opt.max_doc_bytes, word_text_scratch(), to ? to + (cuts[i] - begin) : nullptr);
  });
}

// Sets n (the closing quote at line[begin + n]), text (the bytes of the result) and decoded (the
// length of the decoded string) from the parts' runs. The string ends in the first part that found
// its closing quote; every part before it is open at its end (a part after it is not the string's).
int JsonlParser::Impl::settle_parts(size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  text = 0;
  decoded = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].status != internal::kJsonWordTextOpen && runs[i].status != internal::kJsonWordTextOk) return runs[i].status;
    text += runs[i].text;
    decoded += runs[i].decoded;
    if (runs[i].status == internal::kJsonWordTextOk) {
      n = runs[i].end - begin;
      string_part = i;
      return internal::kJsonWordTextOk;
    }
  }
  return internal::kJsonWordTextInvalid;  // the line ends before the string does
}

// The parts up to the one with the closing quote, each written where it lies in `to` (as the line
// from line[begin]), moved down behind the one before.
void JsonlParser::Impl::pack_parts(size_t begin, char* to) {
  size_t text = 0;
  for (size_t i = 0; i <= string_part; ++i) {
    if (text != cuts[i] - begin) std::memmove(to + text, to + (cuts[i] - begin), runs[i].text);
    text += runs[i].text;
  }
}

int JsonlParser::Impl::word_text_validate(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  cut_parts(line, begin);
  run_parts(line, begin, cuts.size() - 1, nullptr);
  return settle_parts(begin, n, text, decoded);
}

// The validated contents written to `to` (line.data() + begin), the parts up to the one with the
// closing quote.
void JsonlParser::Impl::word_text_write(std::string_view line, size_t begin, char* to) {
  run_parts(line, begin, string_part + 1, to);
  pack_parts(begin, to);
}

// A long line that may not be overwritten: its parts are made word text into long_words at once,
// in parallel, where the DOM parser would decode the whole line on one thread into fresh buffers
// several times its size. Nothing is lost if the line turns out invalid: only long_words is written.
int JsonlParser::Impl::word_text_into_long_words(std::string_view line, size_t begin, size_t& n, size_t& text, uint64_t& decoded) {
  // Mapped from the start, so that it grows with mremap, its pages kept (a heap block would be
  // copied into fresh ones).
  if (long_words.size() < line.size() - begin) long_words.resize(std::max(line.size() - begin, internal::ReallocBuffer::kMapBytes));
  cut_parts(line, begin);
  run_parts(line, begin, cuts.size() - 1, long_words.data());
  const int status = settle_parts(begin, n, text, decoded);
  if (status == internal::kJsonWordTextOk) pack_parts(begin, long_words.data());
  return status;
}

bool limit_doc_text(std::string_view& text, const ReaderOptions& options, std::string& problem) {
  if (text.size() <= options.max_doc_bytes) return true;
  if (options.long_docs == LongDocs::Skip) {
    problem = "the text is " + std::to_string(text.size()) + " bytes, longer than " +
              option_ref("max_doc_bytes", std::to_string(options.max_doc_bytes)) + " (raise it, or " NEARDUP_OPT_IS("long_docs", "truncate") ")";
    return false;
  }
  size_t cut = static_cast<size_t>(options.max_doc_bytes);
  // Back to the start of a character: never more than 3 continuation bytes.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80; ++i) --cut;
  text = text.substr(0, cut);
  return true;
}

// Buffers of LineBuffer let go by the lines shared out of them, for the next ones: a reading pass
// goes through its input a buffer at a time, and a reused buffer is not faulted in again. Up to
// kKeptReadBufferBytes are kept, a buffer grown for a long line among them: its pages are the
// dearest to fault in again (on the crowded mix, whose generated headers of up to 25 MB come in
// groups, zeroing fresh pages for long lines' buffers was 6-9% of the CPU time of `pairs`).
class BufferPool {
 public:
  /// A buffer of at least `bytes`: the smallest kept one that is large enough, else the largest
  /// grown, else a new one.
  internal::ReallocBuffer take(size_t bytes) {
    internal::ReallocBuffer b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) b = remove(pick(bytes, true));
    }
    if (b.size() < bytes) b.resize(bytes);
    return b;
  }
  /// A kept buffer of at least `bytes`, or an empty one.
  internal::ReallocBuffer take_kept(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t i = pick(bytes, false);
    return i < free_.size() ? remove(i) : internal::ReallocBuffer();
  }
  /// Keeps `b` if it fits, letting smaller kept buffers go to make room.
  void give(internal::ReallocBuffer b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (b.size() == 0 || b.size() > kKeptReadBufferBytes) return;
    while (kept_ + b.size() > kKeptReadBufferBytes) {
      size_t smallest = 0;
      for (size_t i = 1; i < free_.size(); ++i)
        if (free_[i].size() < free_[smallest].size()) smallest = i;
      if (free_[smallest].size() >= b.size()) return;
      remove(smallest);
    }
    kept_ += b.size();
    free_.push_back(std::move(b));
  }

 private:
  // The smallest kept buffer of at least `bytes`; else, with `or_largest`, the largest; else
  // free_.size().
  size_t pick(size_t bytes, bool or_largest) const {
    size_t best = free_.size(), largest = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      const size_t n = free_[i].size();
      if (n >= bytes && (best == free_.size() || n < free_[best].size())) best = i;
      if (largest == free_.size() || n > free_[largest].size()) largest = i;
    }
    return best < free_.size() || !or_largest ? best : largest;
  }
  internal::ReallocBuffer remove(size_t i) {
    internal::ReallocBuffer b = std::move(free_[i]);
    free_[i] = std::move(free_.back());
    free_.pop_back();
    kept_ -= b.size();
    return b;
  }
  std::mutex mu_;
  std::vector<internal::ReallocBuffer> free_;
  size_t kept_ = 0;  // bytes in free_
};

// The windows mapped now, for mapped_input_at: a fixed table written with atomics, so that a
// signal handler can read it. A window that finds no free slot is mapped all the same, unnamed.
struct MappedSlot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0}, end{0};
  char name[256] = {};
};
MappedSlot g_mapped[64];

MappedSlot* register_window(const char* base, size_t bytes, const std::string& display) noexcept {
  for (MappedSlot& s : g_mapped) {
    bool free = false;
    if (!s.used.compare_exchange_strong(free, true)) continue;
    const size_t n = std::min(display.size(), sizeof s.name - 1);
    std::memcpy(s.name, display.data(), n);
    s.name[n] = '\0';
    s.end.store(reinterpret_cast<uintptr_t>(base) + bytes, std::memory_order_relaxed);
    s.begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    return &s;
  }
  return nullptr;
}

void unregister_window(MappedSlot* s) noexcept {
  if (!s) return;
  s->begin.store(0, std::memory_order_release);
  s->end.store(0, std::memory_order_relaxed);
  s->used.store(false, std::memory_order_release);
}

std::atomic<size_t> g_fail_map_in{0};  // fail_input_map_for_testing

// A window of a plain file mapped read-only: the file's bytes from `offset` (a page boundary), then
// at least one page of zeros, so that a line ending at the end of the file has simdjson's padding
// readable after it (a page mapped wholly past the end of a file cannot be read: SIGBUS).
class MappedWindow {
 public:
  static constexpr size_t kPage = 4096;
  MappedWindow() = default;
  ~MappedWindow() { release(); }
  MappedWindow(const MappedWindow&) = delete;
  MappedWindow& operator=(const MappedWindow&) = delete;
  void swap(MappedWindow& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(reserved_, o.reserved_);
    std::swap(slot_, o.slot_);
  }
  bool mapped() const noexcept { return base_ != nullptr; }
  const char* data() const noexcept { return base_; }
  // Maps `bytes` of the file from `offset`: an anonymous reservation with a page to spare, the
  // file mapped over its start. False if either mapping fails (nothing is left mapped).
  bool map(int fd, uint64_t offset, size_t bytes, const std::string& display) {
    release();
    if (const size_t f = g_fail_map_in.load(std::memory_order_relaxed); f > 0 && g_fail_map_in.fetch_sub(1) == 1) return false;
    reserved_ = (bytes + kPage - 1) / kPage * kPage + kPage;
    void* r = ::mmap(nullptr, reserved_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
      reserved_ = 0;
      return false;
    }
    base_ = static_cast<char*>(r);
    if (bytes > 0 && ::mmap(base_, bytes, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, static_cast<off_t>(offset)) == MAP_FAILED) {
      release();
      return false;
    }
    slot_ = register_window(base_, bytes, display);
    return true;
  }
  void release() noexcept {
    unregister_window(std::exchange(slot_, nullptr));
    if (base_) ::munmap(base_, reserved_);
    base_ = nullptr;
    reserved_ = 0;
  }

 private:
  char* base_ = nullptr;
  size_t reserved_ = 0;
  MappedSlot* slot_ = nullptr;
};

// MemoryMap::Auto: whether this machine reads a plain file faster through mapped windows than by
// read(2) into a buffer that stays mapped. Mapping pays, for every 4 KiB page, a page-table entry
// and a TLB miss on first touch (and their teardown); read(2) pays a copy. On one virtual machine
// finding the lines of the 1.5 GB crowded mix took 0.31 s mapped against 0.75 s by read(2); on
// another, whose hypervisor makes page-table work dear, 0.6-0.7 s mapped against 0.13 s. The ratio
// belongs to the machine, not to the file, so it is measured once per process: the first 4 MiB of
// the file read both ways, three times each (the best of each counts), after a read that brings
// them into the page cache. A few milliseconds, against seconds for the files it is measured on.
//
// The measurement favours read(2): it copies into one buffer that is warm in the cache, while a
// pass copies into a circle of buffers that the workers have since evicted, faults in the buffers
// grown for long lines, and moves the lines cut at a buffer's end; and the copies all fall on the
// reading thread, which hands lines to the workers. On a third machine the measurement found both
// ways about equal (0.35-0.38 ms per 4 MiB each way, the choice flipping from run to run), while
// the whole pass over the crowded mix ran at 1.30 s mapped against 1.50 s by read(2) (`pairs`,
// medians of 7 alternating runs; kernel time 0.21 against 0.52 s). So the file is mapped unless
// mapping measured dearer than twice the copy: the machine where page tables are dear measured
// about 5x.
constexpr double kMapUnlessDearerThan = 2.0;
constexpr uint64_t kMeasureBytes = uint64_t{4} << 20;
enum : int { kUnmeasured = 0, kMap = 1, kRead = 2 };
std::atomic<int> g_map_choice{kUnmeasured};
std::atomic<size_t> g_measure_sink{0};

size_t count_newlines(const char* p, size_t n) noexcept {
  size_t lines = 0;
  for (const char* end = p + n; (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)))) != nullptr; ++p) ++lines;
  return lines;
}

bool pread_all(int fd, char* to, size_t n, uint64_t offset) noexcept {
  while (n > 0) {
    const ssize_t r = ::pread(fd, to, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    to += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

// Whether to map the plain file open as `fd` (file_bytes long) under MemoryMap::Auto.
bool should_map(int fd, uint64_t file_bytes) {
  if (const int c = g_map_choice.load(std::memory_order_relaxed); c != kUnmeasured) return c == kMap;
  if (file_bytes < kMeasureBytes) return false;  // not worth mapping, nor measuring on
  internal::ReallocBuffer buf(kMeasureBytes);
  if (!pread_all(fd, buf.data(), kMeasureBytes, 0)) return false;  // the stream will report it
  using Clock = std::chrono::steady_clock;
  double copy = 1e30, map = 1e30;
  size_t lines = 0;
  for (int round = 0; round < 3; ++round) {
    auto t = Clock::now();
    if (!pread_all(fd, buf.data(), kMeasureBytes, 0)) return false;
    lines += count_newlines(buf.data(), kMeasureBytes);
    copy = std::min(copy, std::chrono::duration<double>(Clock::now() - t).count());
    t = Clock::now();
    void* m = ::mmap(nullptr, kMeasureBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) break;
    lines += count_newlines(static_cast<const char*>(m), kMeasureBytes);
    ::munmap(m, kMeasureBytes);
    map = std::min(map, std::chrono::duration<double>(Clock::now() - t).count());
  }
  g_measure_sink.store(lines, std::memory_order_relaxed);  // the scans are the measurement: keep them
  const int choice = map < kMapUnlessDearerThan * copy ? kMap : kRead;
  g_map_choice.store(choice, std::memory_order_relaxed);
  return choice == kMap;
}

// The lines of one source's decompressed bytes, viewed in place: data in bytes()[begin, end),
// with kPad readable bytes past `end`, so a line can be handed to simdjson without copying.
// A plain file is mapped a window at a time (mapped mode); any other stream is read into `buf`.
// A buffer that lines were shared out of (share()) is never written again: before the next write
// the unread bytes move to another buffer, and the shared one goes to its last holder. A window
// that lines were shared out of goes to their holder when the reading moves to the next one.
class LineBuffer {
 public:
  static constexpr size_t kPad = simdjson::SIMDJSON_PADDING;
  // A buffer's usual size: read(2) calls of 4 MiB, like the mapped windows (with 1 MiB, `pairs` on
  // the crowded mix took 5% more CPU: 4 times the buffers change hands, and the lines cut at a
  // buffer's end are moved to the next 4 times as often).
  static constexpr size_t kStartBytes = size_t{4} << 20;
  // Reading by position, a line is shared out of its buffer only from this size on.
  static constexpr size_t kShareSelectedBytes = size_t{1} << 20;
  // Mapped mode: the usual window. Its pages stay resident while lines of it are in flight.
  static constexpr size_t kWindowBytes = size_t{4} << 20;
  LineBuffer(uint64_t max_record_bytes, MemoryMap memory_map)
      : max_record_bytes_(max_record_bytes), memory_map_(memory_map), buf(kStartBytes) {}
  // Lines still shared keep their buffer or window past the reader's end.
  ~LineBuffer() {
    if (holder_) {
      holder_->buf.swap(buf);
      holder_->window.swap(window_);
    }
  }
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;

  // The owner of the buffer that holds the lines returned so far: while it lives, they keep their
  // bytes (and the kPad past each line's end: the bytes after it, or the buffer's padding).
  std::shared_ptr<const void> share() {
    if (!holder_) holder_ = std::make_shared<Holder>(pool_);
    return holder_;
  }

  void open(std::unique_ptr<ByteStream> s, const std::string& display) {
    release_window();
    begin = end = scanned = 0;
    own();  // a buffer shared by the last source's lines goes to their holder
    stream_ = std::move(s);
    display_ = display;
    buf_base = 0;
    eof = false;
    any_bytes = false;
    line_no = 0;
    map_fd_ = -1;
    struct stat sb;
    // Only regular files are mapped (not pipes or terminals), and not one that reports no size
    // (procfs, sysfs), which may still hold bytes: those are read as streams.
    if (const int fd = memory_map_ != MemoryMap::Never ? stream_->mappable_fd() : -1; fd >= 0 && ::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
      if (memory_map_ == MemoryMap::Always || should_map(fd, static_cast<uint64_t>(sb.st_size))) {
        map_fd_ = fd;
        file_bytes_ = static_cast<uint64_t>(sb.st_size);
      }
    }
  }
  bool is_open() const noexcept { return stream_ != nullptr; }
  /// Closes the source; returns its compressed bytes read.
  uint64_t close() {
    const uint64_t n = raw_bytes_read();
    release_window();
    stream_.reset();
    map_fd_ = -1;
    return n;
  }
  uint64_t raw_bytes_read() const {
    if (map_fd_ >= 0) return buf_base + end;
    return stream_ ? stream_->raw_bytes_read() : 0;
  }
  /// Where the next line starts in the source's bytes.
  uint64_t position() const noexcept { return buf_base + begin; }
  /// Whether the last line returned may be overwritten once its buffer is shared: it was read
  /// into a buffer (not a read-only mapped window), and is the first line there, so that no
  /// other line's padding (read past that line's end by whichever thread parses it) overlaps it.
  /// A line longer than the usual buffer is always first: the buffer was refilled while it was
  /// read, which moves its start to the front of a buffer.
  bool line_overwritable() const noexcept { return map_fd_ < 0 && first_in_buffer_; }
  bool line_mapped() const noexcept { return map_fd_ >= 0; }
  /// Asks the kernel to start reading [offset, offset + length) of a plain file into the page
  /// cache, without waiting for it (ask_for_pages).
  void advise(uint64_t offset, uint64_t length) {
    const int fd = map_fd_ >= 0 ? map_fd_ : stream_ ? stream_->mappable_fd() : -1;
    if (fd >= 0) ask_for_pages(fd, offset, offset + length);
  }

  /// Moves to `offset` (at or after position()): inside the buffer, or past it by skipping the
  /// stream; reading stops near `until`. False if the source ends before.
  bool seek(uint64_t offset, uint64_t until) {
    if (offset <= buf_base + end) {
      begin = scanned = static_cast<size_t>(offset - buf_base);
    } else {
      if (map_fd_ >= 0) {
        if (offset >= file_bytes_) return false;
      } else {
        const uint64_t gap = offset - (buf_base + end);
        if (eof || stream_->skip(gap) != gap) return false;
      }
      buf_base = offset;
      begin = end = scanned = 0;
    }
    line_no = 0;
    read_until = until;
    return true;
  }

  // The next line (without its newline), or false at the end of the source. A line longer than
  // max_record_bytes_ comes back empty with `overlong` set; its bytes are read and dropped.
  bool get_line(std::string_view& line) {
    overlong = false;
    for (;;) {
      if (scanned < end) {
        const void* nl = std::memchr(bytes() + scanned, '\n', end - scanned);
        if (nl) {
          const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - bytes());
          return take_line(line, pos, pos + 1);
        }
        scanned = end;
      }
      if (eof) {
        if (begin < end) {
          return take_line(line, end, end);
        }
        return false;
      }
      if (end - begin > max_record_bytes_) return drop_long_line(line);
      if (!refill()) eof = true;
    }
  }

  // The next line, which an earlier pass found to be `length` bytes long (reading by position):
  // read up to its end, and taken if a newline or the end of the source is there, without
  // searching its bytes for the newline. That search, on the reading thread, was 1.3% of the CPU
  // time of a `dedup` of the crowded mix (its verification reads 26,000 candidate records again).
  // A changed input is told by the file's size and time, checked before the pass, and by this end.
  // False if the line does not end there.
  bool get_line_of(size_t length, std::string_view& line) {
    overlong = false;
    for (;;) {
      const size_t stop = begin + length;
      if (stop < end) return bytes()[stop] == '\n' && take_line(line, stop, stop + 1);
      if (eof) return stop == end && take_line(line, end, end);
      scanned = end;
      if (!refill()) eof = true;
    }
  }

 private:
  const char* bytes() const noexcept { return map_fd_ >= 0 ? window_.data() : buf.data(); }

  // More bytes after bytes()[end), the unread ones [begin, end) kept; false at the end.
  bool refill() {
    if (map_fd_ >= 0) return remap();
    own();
    if (begin > 0) {  // compact
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      unread_moved_to_front();
      // Grown for a long line that is gone: back to the usual size, so that one large record
      // does not leave its room held for the rest of the pass (a buffer the pool would keep
      // is kept: a long line's buffer goes on as the usual one until it is shared).
      if (buf.size() > kKeptReadBufferBytes && end + (1 << 16) + kPad <= kStartBytes) buf.resize(kStartBytes);
    }
    if (buf.size() - end < (1 << 16) + kPad) grow(buf.size() * 2);
    // At most the usual buffer's worth per read, even into a buffer grown for a long line: a line
    // longer than that is then never read whole by one read, so a refill always moves it to the
    // front of a buffer, where it may be overwritten (line_overwritable) and made word text in
    // place. Reading a grown buffer full let a line of several MB land in its middle, to be
    // parsed whole by simdjson: 10 lines of 5-17 MB on the crowded mix.
    size_t want = std::min(buf.size() - end - kPad, kStartBytes);
    // Reading by position: no more than the selected line needs (at least 64 KiB), so that a
    // few records scattered over a large file do not each cost a full buffer.
    if (read_until > buf_base + end) want = std::min<uint64_t>(want, std::max<uint64_t>(read_until - (buf_base + end), 1 << 16));
    const size_t got = stream_->read(buf.data() + end, want);
    if (got == 0) return false;
    end += got;
    any_bytes = true;
    return true;
  }

  // Mapped mode: maps the window that starts at the page of the next line, with room for twice
  // what is already seen of it (a long line grows its window, as `buf` grows), and for the whole
  // selected line when reading by position. A window that does not reach the end of the file
  // ends kPad bytes early, so that every line in it has its padding. False when no byte is left.
  bool remap() {
    if (buf_base + end >= file_bytes_) return false;
    const uint64_t from = buf_base + begin, seen_to = buf_base + scanned;
    const uint64_t page = from / MappedWindow::kPage * MappedWindow::kPage;
    uint64_t want = std::max<uint64_t>(kWindowBytes, 2 * (seen_to - page) + MappedWindow::kPage);
    if (read_until > from) want = std::max<uint64_t>(want, read_until - page + kPad);
    const uint64_t left = file_bytes_ - page;
    const bool last = want >= left;
    const size_t len = static_cast<size_t>(last ? left : want);
    release_window();
    if (!window_.map(map_fd_, page, len, display_)) return stream_from(from);
    // The kernel reads a mapping only at its page faults: the bytes after the window are asked
    // for now, while the file is read in order (never sought in: io/stream.cpp).
    if (read_until == 0) stream_->reading_at(page + len);
    buf_base = page;
    begin = static_cast<size_t>(from - page);
    scanned = static_cast<size_t>(seen_to - page);
    end = last ? len : len - kPad;
    any_bytes = true;
    return true;
  }

  // Mapped mode that cannot map (a file system without mmap, no address space left): the file is
  // read as a stream from `from` on (the stream itself was not read from: it is at the start).
  bool stream_from(uint64_t from) {
    map_fd_ = -1;
    if (from > 0 && stream_->skip(from) != from) return false;
    buf_base = from;
    begin = end = scanned = 0;
    return refill();
  }

  // The line in bytes()[begin, stop) is the next one; reading goes on at `next`. A line found
  // whole but over --max-record-bytes comes back empty with `overlong` set.
  bool take_line(std::string_view& line, size_t stop, size_t next) {
    first_in_buffer_ = begin == 0;
    line = std::string_view(bytes() + begin, stop - begin);
    line_offset = buf_base + begin;
    begin = scanned = next;
    ++line_no;
    skip_bom(line);
    if (line.size() > max_record_bytes_) {
      overlong = true;
      line = {};
    }
    return true;
  }

  // A UTF-8 byte order mark before a source's first line is not part of the record (nor of the
  // kept output, which copies the line from its offset).
  void skip_bom(std::string_view& line) {
    if (line_offset == 0 && line.substr(0, 3) == "\xEF\xBB\xBF") {
      line.remove_prefix(3);
      line_offset = 3;
    }
  }

  // The line in the buffer is too long: reads and drops the rest of it.
  bool drop_long_line(std::string_view& line) {
    line_offset = buf_base + begin;
    ++line_no;
    overlong = true;
    line = {};
    for (;;) {
      begin = scanned = end;  // what is read of the line is let go
      if (!refill()) {
        eof = true;
        return true;
      }
      const void* nl = std::memchr(bytes() + scanned, '\n', end - scanned);
      if (nl) {
        begin = scanned = static_cast<size_t>(static_cast<const char*>(nl) - bytes()) + 1;
        return true;
      }
    }
  }

 public:
  uint64_t line_no = 0;
  uint64_t line_offset = 0;  // offset of the line get_line returned last
  bool overlong = false;     // get_line's last line was longer than the limit (and dropped)
  bool any_bytes = false;

 private:
  uint64_t max_record_bytes_;
  MemoryMap memory_map_;
  std::unique_ptr<ByteStream> stream_;
  std::string display_;
  // Holds a shared buffer or window for the lines' holders; it moves in when the reading moves on.
  struct Holder {
    explicit Holder(std::shared_ptr<BufferPool> p) : pool(std::move(p)) {}
    ~Holder() { pool->give(std::move(buf)); }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    std::shared_ptr<BufferPool> pool;
    internal::ReallocBuffer buf;
    MappedWindow window;
  };

  // buf grown to `bytes` or more for a long line: into a kept buffer of that size if the pool has
  // one (its pages are faulted in already), else in place.
  void grow(size_t bytes) {
    internal::ReallocBuffer kept = pool_->take_kept(bytes);
    if (kept.size() == 0) return buf.resize(bytes);
    std::memcpy(kept.data(), buf.data(), end);
    buf.swap(kept);
    pool_->give(std::move(kept));
  }

  // Before buf is written: if lines were shared out of it, the unread bytes go on in another
  // buffer and this one to the holders of those lines.
  void own() {
    if (!holder_ || map_fd_ >= 0) return;
    const size_t keep = end - begin;
    internal::ReallocBuffer next = pool_->take(std::max(kStartBytes, keep + (1 << 16) + kPad));
    std::memcpy(next.data(), buf.data() + begin, keep);
    holder_->buf.swap(buf);
    buf.swap(next);
    holder_.reset();
    unread_moved_to_front();
  }

  // Mapped mode, before the next window: the current one goes to the holders of its lines, if
  // any were shared, or is unmapped.
  void release_window() {
    if (!window_.mapped()) return;
    if (holder_) {
      holder_->window.swap(window_);
      holder_.reset();
    }
    window_.release();
  }

  // The unread bytes buf[begin, end) now start at buf[0].
  void unread_moved_to_front() noexcept {
    buf_base += begin;
    end -= begin;
    scanned -= begin;
    begin = 0;
  }

  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
  std::shared_ptr<Holder> holder_;  // set once a line of buf (or of the window) was shared
  internal::ReallocBuffer buf;      // filled by reads as it grows
  MappedWindow window_;             // mapped mode
  int map_fd_ = -1;                 // mapped mode: the plain file's descriptor (else -1)
  uint64_t file_bytes_ = 0;         // mapped mode: the file's size when opened
  size_t begin = 0, end = 0, scanned = 0;
  uint64_t buf_base = 0;    // offset of bytes()[0] in the source's decompressed bytes
  uint64_t read_until = 0;  // seek(): the end of the wanted line (with its newline); 0: read in order
  bool eof = false;
  bool first_in_buffer_ = false;  // the last line taken started at the buffer's first byte
};

namespace {

// A compressed source's stream whose bytes, as they are read, also go to a ScratchCopy (which
// stops taking them if it gives up). Skipped bytes are read through read(), so the copy holds
// every byte of the stream in order.
class TeeStream final : public ByteStream {
 public:
  TeeStream(std::unique_ptr<ByteStream> in, ScratchCopy& copy) : in_(std::move(in)), copy_(&copy) {}
  size_t read(char* buf, size_t n) override {
    const size_t got = in_->read(buf, n);
    if (got == 0)
      ended_ = true;
    else if (copy_)
      copy_->append(buf, got);
    return got;
  }
  uint64_t raw_bytes_read() const noexcept override { return in_->raw_bytes_read(); }
  Compression compression() const noexcept override { return in_->compression(); }
  bool ended() const noexcept { return ended_; }
  /// The copy is let go (taken before the source's end): later bytes go nowhere.
  void detach() noexcept { copy_ = nullptr; }

 private:
  std::unique_ptr<ByteStream> in_;
  ScratchCopy* copy_;
  bool ended_ = false;
};

}  // namespace

struct RecordReader::Impl {
  const InputSet& inputs;
  ReaderOptions opt;
  ReaderStats stats;
  BadRecords bad;

  size_t cur = 0;
  // read_sources(): a share of a distributed run. Lines of source `range_first` starting before
  // range_begin, and of source end_source - 1 starting at or after range_end, are not this share's.
  size_t end_source = SIZE_MAX;
  size_t range_first = 0;
  uint64_t range_begin = 0, range_end = UINT64_MAX;
  uint64_t finished_bytes = 0;
  LineBuffer lines;
  // select(): only these records, in order.
  std::vector<RecordPos> selection;
  size_t selected = 0;
  bool selecting = false;
  size_t memory_next = 0;  // the next document of a Memory source

  JsonlParser parser;
  std::string file_text, problem;

  Impl(const InputSet& in, const ReaderOptions& o) : inputs(in), opt(o), bad(o), lines(o.max_record_bytes, o.memory_map), parser(o) {
    if (o.max_record_bytes == 0 || o.max_record_bytes > kMaxRecordBytes || o.max_doc_bytes == 0 || o.max_doc_bytes > kMaxRecordBytes)
      throw UsageError(NEARDUP_OPT("max_record_bytes") " and " NEARDUP_OPT("max_doc_bytes") " must be between 1 and " + std::to_string(kMaxRecordBytes));
  }
  const Source& source() const { return inputs.sources()[cur]; }

  // keep_decompressed_copies(): where, and the copies by source (the current one fed by `tee`).
  std::string copy_dir;
  uint64_t copy_keep_free = 0;
  bool keep_copies = false;
  std::vector<std::unique_ptr<ScratchCopy>> copies;
  TeeStream* tee = nullptr;
  std::string copy_why;

  size_t kept_copies = 0;

  // Each kept copy holds a descriptor for the rest of the run: at most a quarter of the open-file
  // limit (ulimit -n) go to copies, so that thousands of compressed shards leave room for the
  // run's other files (the shards after that are decompressed again).
  static size_t copy_descriptors() {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 64;
    return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(rl.rlim_cur / 4);
  }

  void open_next() {
    auto stream = open_stream(source().path, source().display);
    tee = nullptr;
    if (keep_copies && source().kind == SourceKind::Jsonl && stream->compression() != Compression::None) {
      if (copies.size() <= cur) copies.resize(cur + 1);
      if (kept_copies >= copy_descriptors()) {
        if (copy_why.empty())
          copy_why = "more compressed inputs than a quarter of the open-file limit (ulimit -n " + std::to_string(copy_descriptors() * 4) +
                     ") have copies; raise the limit";
      } else {
        copies[cur] = ScratchCopy::create(copy_dir, copy_keep_free);
      }
      if (copies[cur]) {
        auto t = std::make_unique<TeeStream>(std::move(stream), *copies[cur]);
        tee = t.get();
        stream = std::move(t);
        ++kept_copies;
      } else if (copy_why.empty()) {
        copy_why = ScratchCopy::unavailable(copy_dir);
      }
    }
    lines.open(std::move(stream), source().display);
  }

  void close_current() {
    // A copy is kept only of a source read to its end, and written whole.
    if (tee && !(tee->ended() && copies[cur]->finish())) {
      if (copy_why.empty()) copy_why = copies[cur]->why().empty() ? "the source was not read to its end" : copies[cur]->why();
      copies[cur].reset();
      --kept_copies;
    }
    tee = nullptr;
    finished_bytes += lines.close();
    ++cur;
  }

  std::string long_line_problem() const {
    return "the line is longer than " + option_ref("max_record_bytes", std::to_string(opt.max_record_bytes)) +
           " bytes (a file without newlines, or a decompression bomb?); raise the limit if the data is real";
  }

  // A bad record: throws, or counts it (stats mirror `bad`).
  void report(const BadRecord& b) {
    bad.report(b);
    stats.skipped = bad.skipped();
    stats.skip_kinds = bad.kinds();
    if (stats.first_skips.size() < bad.first().size()) stats.first_skips.push_back(bad.first().back());
  }

  // Parses one JSONL line into `out`; false if the record is bad (and skipped).
  bool parse_line(std::string_view line, Record& out) {
    const uint64_t line_number = selecting ? 0 : lines.line_no;
    if (!parser.parse(line, source(), line_number, out, problem)) {
      report(bad_record(source(), line_number, lines.line_offset, parser.problem_kind(), problem, line));
      return false;
    }
    if (parser.replaced_invalid_utf8()) ++stats.invalid_utf8;
    if (parser.missing_id()) ++stats.missing_ids;
    out.raw = line;
    out.source = cur;
    out.line = line_number;
    out.offset = lines.line_offset;
    return true;
  }

  [[noreturn]] void changed(const std::string& what) const {
    throw IoError(what +
                  "; the input changed while neardup was running (do not modify inputs during a run)", ErrorPlace{source().display});
  }

  // select() from a copy of a compressed source (InputSet::read_from_copy), which is not in the
  // page cache (written directly): the selected lines up to kAhead bytes past the one being
  // read are asked for at once, neighbours within 64 KiB as one range, so that the disk reads
  // many at a time instead of one page fault's worth after another.
  size_t advised = 0;
  void advise_selected() {
    constexpr uint64_t kAhead = uint64_t{32} << 20, kJoin = uint64_t{64} << 10;
    if (advised < selected) advised = selected;
    const uint64_t limit = selection[selected - 1].offset + kAhead;
    uint64_t from = 0, to = 0;
    for (; advised < selection.size(); ++advised) {
      const RecordPos& q = selection[advised];
      if (q.source != cur || q.offset > limit) break;
      if (to != 0 && q.offset > to + kJoin) {
        lines.advise(from, to - from);
        to = 0;
      }
      if (to == 0) from = q.offset;
      to = std::max(to, q.offset + q.length + 1);
    }
    if (to != 0) lines.advise(from, to - from);
  }

  // select(): the next selected line, or false after the last.
  bool next_selected_line(std::string_view& line) {
    if (selected >= selection.size()) {
      if (lines.is_open()) close_current();
      return false;
    }
    const RecordPos& p = selection[selected++];
    if (p.source >= inputs.sources().size() || inputs.sources()[p.source].kind != SourceKind::Jsonl)
      throw UsageError("RecordReader::select: a position names no JSONL source");
    if (p.source != cur || !lines.is_open()) {
      if (p.source < cur) throw UsageError("RecordReader::select: positions out of reading order");
      if (lines.is_open()) close_current();
      cur = p.source;
      open_next();
      advised = 0;
    }
    // Half of what was asked for read: ask for the next.
    if (inputs.read_from_copy(cur) && (advised <= selected || selection[advised - 1].offset < p.offset + (uint64_t{16} << 20)))
      advise_selected();
    if (p.offset < lines.position()) throw UsageError("RecordReader::select: positions out of reading order");
    if (!lines.seek(p.offset, p.offset + p.length + 1)) changed("no line at byte " + std::to_string(p.offset) + " any more");
    if (!lines.get_line_of(p.length, line) || line.size() != p.length)
      changed("the line at byte " + std::to_string(p.offset) + " is no longer " + std::to_string(p.length) + " bytes long");
    return true;
  }

  // A whole document (a text file, a memory document) as a parsed record, or a bad one when its
  // text is over --max-doc-bytes under --long-docs skip. Always true (a record to return).
  bool document(RawRecord& out, std::string_view id, std::string_view text) {
    if (!limit_doc_text(text, opt, out.problem)) {
      out.kind = RawRecord::Kind::Bad;
      out.problem_kind = "longer than " NEARDUP_OPT("max_doc_bytes");
      return true;
    }
    out.kind = RawRecord::Kind::Parsed;
    out.id = id;
    out.bytes = text;
    return true;
  }

  // What a step of next_raw() found: a record to return, or nothing yet (go on reading).
  enum class Step { Record, Again };

  // A bad input: the source's own problem (unreadable, ...), or one found on reading it.
  static Step bad_input(RawRecord& out, std::string problem, const char* kind) {
    out.kind = RawRecord::Kind::Bad;
    out.problem = std::move(problem);
    out.problem_kind = kind;
    return Step::Record;
  }

  // The next memory document, or the next source after the last.
  Step memory_record(RawRecord& out) {
    const std::vector<Document>& docs = inputs.documents();
    if (memory_next >= docs.size()) {
      memory_next = 0;
      ++cur;
      return Step::Again;
    }
    const Document& d = docs[memory_next++];
    out.source = cur;
    out.line = memory_next;  // the record's number, for messages
    out.offset = 0;
    if (bad_id_char(d.id))
      return bad_input(out, "id holds a TAB, CR or LF, which would corrupt the TSV outputs; remove them from the ids", "bad id");
    document(out, d.id, d.text);
    return Step::Record;
  }

  // A whole text file as one record; a binary file found in a folder is left out (as git and
  // grep decide: a NUL byte in the first 8 KiB); named directly, it is a bad input.
  Step text_file_record(RawRecord& out, const Source& src) {
    const bool fits = read_all_capped(src.path, src.display, opt.max_record_bytes, file_text);
    struct stat sb;
    if (::stat(src.path.c_str(), &sb) == 0) finished_bytes += static_cast<uint64_t>(sb.st_size);
    out.source = cur;
    out.line = 0;
    out.offset = 0;
    ++cur;
    if (!fits)
      return bad_input(out,
                       "file is longer than " + option_ref("max_record_bytes", std::to_string(opt.max_record_bytes)) +
                           " bytes (a decompression bomb?); raise the limit if the data is real",
                       "longer than " NEARDUP_OPT("max_record_bytes"));
    if (file_text.empty() && !src.from_directory) return bad_input(out, "file is empty", "empty file");
    if (std::memchr(file_text.data(), 0, std::min<size_t>(file_text.size(), 8192)) != nullptr) {
      if (src.from_directory) {
        ++stats.binary;
        return Step::Again;
      }
      return bad_input(out, "a binary file (a NUL byte in its first 8 KiB; UTF-16 text? convert it to UTF-8), not text", "binary file");
    }
    document(out, src.doc_id, file_text);
    return Step::Record;
  }

  // The next JSONL line that is not blank, or the next source after the last line.
  Step jsonl_record(RawRecord& out) {
    if (!lines.is_open()) open_next();
    std::string_view line;
    if (!lines.get_line(line)) {
      const bool empty_file = !lines.any_bytes;
      out.source = cur;
      out.line = out.offset = 0;
      close_current();
      if (empty_file) return bad_input(out, "file is empty (no JSONL records)", "empty file");
      return Step::Again;
    }
    out.source = cur;
    out.line = lines.line_no;
    out.offset = lines.line_offset;
    if (cur == range_first && lines.line_offset < range_begin) return Step::Again;  // an earlier share's
    if (cur + 1 == end_source && lines.line_offset >= range_end) {                   // a later share's
      close_current();
      return Step::Again;
    }
    if (lines.overlong) return bad_input(out, long_line_problem(), "longer than " NEARDUP_OPT("max_record_bytes"));
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Step::Again;  // blank line
    out.kind = RawRecord::Kind::Line;
    out.bytes = line;
    out.writable = lines.line_overwritable();
    out.mapped = lines.line_mapped();
    return Step::Record;
  }

  // The next record unparsed: a JSONL line that is not blank, a text file, a memory document,
  // or a bad input.
  bool next_raw(RawRecord& out) {
    // Nothing of the last record survives: a bad record has no bytes (the buffer they were in
    // may be gone).
    out.bytes = {};
    out.id = {};
    out.writable = false;
    out.mapped = false;
    if (selecting) {
      std::string_view line;
      if (!next_selected_line(line)) return false;
      out.kind = RawRecord::Kind::Line;
      out.bytes = line;
      out.writable = lines.line_overwritable();
      out.mapped = lines.line_mapped();
      out.source = cur;
      out.line = 0;
      out.offset = lines.line_offset;
      return true;
    }
    for (;;) {
      if (cur >= std::min(inputs.sources().size(), end_source)) return false;
      const Source& src = source();
      Step step;
      if (!src.problem.empty()) {
        out.source = cur++;
        out.line = out.offset = 0;
        step = bad_input(out, src.problem, src.problem_kind.empty() ? "unreadable file" : src.problem_kind.c_str());
      } else if (src.kind == SourceKind::Memory) {
        step = memory_record(out);
      } else if (src.kind == SourceKind::TextFile) {
        step = text_file_record(out, src);
      } else {
        step = jsonl_record(out);
      }
      if (step == Step::Record) return true;
    }
  }

  bool next(Record& out) {
    RawRecord raw;
    while (next_raw(raw)) {
      switch (raw.kind) {
        case RawRecord::Kind::Bad:
          report(bad_record(inputs.sources()[raw.source], raw.line, raw.offset, raw.problem_kind, raw.problem));
          continue;
        case RawRecord::Kind::Parsed:
          out.id = raw.id;
          out.text = raw.bytes;
          out.raw = raw.id;  // a text file is named in outputs by its id: the path as given
          out.source = raw.source;
          out.line = inputs.sources()[raw.source].kind == SourceKind::Memory ? raw.line : 0;
          out.offset = 0;
          ++stats.records;
          return true;
        case RawRecord::Kind::Line:
          if (parse_line(raw.bytes, out)) {
            ++stats.records;
            return true;
          }
          continue;
      }
    }
    return false;
  }
};

bool mapped_input_at(const void* address, char* name, size_t size) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (const MappedSlot& s : g_mapped) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || a < begin || a >= s.end.load(std::memory_order_relaxed)) continue;
    size_t n = 0;
    for (; n + 1 < size && s.name[n]; ++n) name[n] = s.name[n];
    if (size > 0) name[n] = '\0';
    return true;
  }
  return false;
}

RecordReader::RecordReader(const InputSet& inputs, const ReaderOptions& options)
    : impl_(std::make_unique<Impl>(inputs, options)) {}
RecordReader::~RecordReader() = default;

void RecordReader::keep_decompressed_copies(const std::string& dir, uint64_t keep_free) {
  impl_->copy_dir = dir;
  impl_->copy_keep_free = keep_free;
  impl_->keep_copies = true;
}

std::vector<std::unique_ptr<ScratchCopy>> RecordReader::take_decompressed_copies(std::string* why) {
  Impl& m = *impl_;
  if (m.tee) {  // a source still open (read_sources() stopped inside it): its copy is not whole
    m.tee->detach();
    m.tee = nullptr;
    m.copies[m.cur].reset();
    --m.kept_copies;
    if (m.copy_why.empty()) m.copy_why = "the source was not read to its end";
  }
  if (why) *why = m.copy_why;
  return std::move(m.copies);
}
bool RecordReader::next(Record& out) { return impl_->next(out); }
bool RecordReader::next_raw(RawRecord& out) { return impl_->next_raw(out); }
void RecordReader::select(std::vector<RecordPos> positions) {
  impl_->selection = std::move(positions);
  impl_->selected = 0;
  impl_->selecting = true;
}
void RecordReader::read_sources(size_t first, size_t last, uint64_t begin, uint64_t end) {
  if (first > last || last > impl_->inputs.sources().size() || impl_->cur != 0 || impl_->lines.is_open())
    throw UsageError("RecordReader::read_sources: the range must lie within the sources, before reading starts");
  impl_->cur = first;
  impl_->end_source = last;
  impl_->range_first = first;
  impl_->range_begin = begin;
  impl_->range_end = end;
}
const ReaderStats& RecordReader::stats() const noexcept { return impl_->stats; }
void release_mapped_line(std::string_view line) noexcept {
  const auto page = static_cast<uintptr_t>(MappedWindow::kPage);
  const uintptr_t from = (reinterpret_cast<uintptr_t>(line.data()) + page - 1) / page * page;
  const uintptr_t to = (reinterpret_cast<uintptr_t>(line.data()) + line.size()) / page * page;
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

std::shared_ptr<const void> RecordReader::share_line(const RawRecord& line) {
  // Reading by position, the reader moves to another buffer at almost every line, so a shared
  // line would hold a buffer of its own: only lines of a buffer's size or more are shared.
  if (impl_->selecting && line.bytes.size() < LineBuffer::kShareSelectedBytes) return nullptr;
  return impl_->lines.share();
}

uint64_t RecordReader::bytes_read() const noexcept {
  return impl_->finished_bytes + impl_->lines.raw_bytes_read();
}

}  // namespace neardup::io

namespace neardup {
void fail_input_map_for_testing(size_t n) noexcept { io::g_fail_map_in.store(n); }
int map_choice_for_testing(int choice) noexcept {
  return choice < 0 ? io::g_map_choice.load() : io::g_map_choice.exchange(choice);
}
}  // namespace neardup
