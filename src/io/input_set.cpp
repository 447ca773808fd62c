// The inputs of a run (InputSet): files, folders and standard input expanded in order; what can be
// read only once (standard input, pipes, FIFOs) copied to a temporary file that later passes read.
#include "neardup/io/reader.h"
#include "io/retry.h"

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

// What writes a copy of descriptor `in` (read to its end) into a OnceCopy's file.
std::function<void(int)> copy_from(int in, const std::string& display, const std::string& dir) {
  return [in, display, dir](int fd) {
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t r = ::read(in, buf.data(), buf.size());
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        throw IoError(std::string("cannot read: ") + std::strerror(errno), ErrorPlace{display});
      }
      write_copy(fd, buf.data(), static_cast<size_t>(r), display, dir);
    }
  };
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

// Where the file system can make one, the copy has no name (O_TMPFILE): it is read by
// /proc/self/fd/N, and nothing is left of it however the process ends. Otherwise it is listed for
// removal by a signal handler.
OnceCopy::OnceCopy(const std::string& display, const std::string& dir_in, const std::function<void(int)>& fill) {
  const std::string dir = temp_directory(dir_in);
  int fd = open_unnamed(dir);
  if (fd >= 0) {
    path_ = descriptor_path(fd);
    fd_ = fd;
  } else {
    path_ = dir + "/neardup-stdin-XXXXXX";
    fd = ::mkstemp(path_.data());
    if (fd < 0)
      throw IoError(std::string("cannot create a temporary copy in ") + dir + ": " + std::strerror(errno) +
                    "; set TMPDIR to a writable directory", ErrorPlace{display});
    slot_ = register_temporary_file(path_);
  }
  try {
    fill(fd);
  } catch (...) {
    ::close(fd);  // an unnamed copy goes with its descriptor; a named one is removed
    if (fd_ < 0) {
      ::unlink(path_.c_str());
      unregister_temporary_file(slot_);
    }
    throw;
  }
  if (fd_ < 0) ::close(fd);
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
  s.path = own(std::make_unique<OnceCopy>("<stdin>", stdin_dir, copy_from(0, "<stdin>", stdin_dir)));
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
    const int fd = io::retry_eintr([&] { return ::open(p.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) throw IoError(std::string("cannot read: ") + std::strerror(errno) + "; check its permissions", ErrorPlace{p});
    std::unique_ptr<OnceCopy> copy;
    try {
      copy = std::make_unique<OnceCopy>(p, stdin_dir, copy_from(fd, p, stdin_dir));
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    s.path = own(std::move(copy));
  }
  if (format == InputFormat::Auto && s.kind == SourceKind::TextFile && looks_like_jsonl(s.path, p)) s.kind = SourceKind::Jsonl;
  if (s.kind == SourceKind::TextFile && bad_id_char(s.doc_id)) {
    s.problem = "the file name holds a TAB or line break, which would corrupt the TSV outputs; rename it";
    s.problem_kind = "bad id";
  }
  sources_.push_back(std::move(s));
}

// A copy made before a later path fails goes with the set's members (once_copies_).
void InputSet::expand(const std::vector<std::string>& paths, const ReaderOptions& options, const std::string& stdin_dir) {
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
  for (const Source& s : sources_) {
    struct stat sb;
    if (::stat(s.path.c_str(), &sb) == 0) total_bytes_ += static_cast<uint64_t>(sb.st_size);
  }
}

InputSet::~InputSet() = default;

// Keeps a spooled copy for the set's life; its path.
std::string InputSet::own(std::unique_ptr<OnceCopy> copy) {
  once_copies_.push_back(std::move(copy));
  return once_copies_.back()->path();
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


}  // namespace neardup::io
