#include "neardup/io/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "internal/utf8.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/writer.h"

namespace fs = std::filesystem;

namespace neardup::io {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Format from the file name: .jsonl/.ndjson/.json, optionally followed by .gz/.zst/.zstd.
SourceKind kind_from_name(std::string_view name, InputFormat format) {
  if (format == InputFormat::Jsonl) return SourceKind::Jsonl;
  if (format == InputFormat::Text) return SourceKind::TextFile;
  for (std::string_view c : {".gz", ".zst", ".zstd"})
    if (ends_with(name, c)) {
      name.remove_suffix(c.size());
      break;
    }
  for (std::string_view j : {".jsonl", ".ndjson", ".json"})
    if (ends_with(name, j)) return SourceKind::Jsonl;
  return SourceKind::TextFile;
}

// Copies stdin to a temporary file (listed for removal by a signal handler: its slot goes to
// `slot`).
std::string spool_stdin(const std::string& dir_in, int& slot) {
  std::string dir = dir_in;
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = (t && *t) ? t : "/tmp";
  }
  std::string tmpl = dir + "/neardup-stdin-XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw IoError("<stdin>: cannot create a temporary copy in " + dir + ": " + std::strerror(errno) +
                  "; set TMPDIR to a writable directory");
  slot = register_temporary_file(tmpl);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t r = ::read(0, buf.data(), buf.size());
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      unregister_temporary_file(slot);
      throw IoError(std::string("<stdin>: cannot read: ") + std::strerror(e));
    }
    for (ssize_t off = 0; off < r;) {
      const ssize_t w = ::write(fd, buf.data() + off, static_cast<size_t>(r - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        const int e = errno;
        ::close(fd);
        ::unlink(tmpl.c_str());
        unregister_temporary_file(slot);
        throw IoError("<stdin>: cannot write its temporary copy " + tmpl + ": " + std::strerror(e) +
                      "; free space or set TMPDIR to another directory");
      }
      off += w;
    }
  }
  ::close(fd);
  return tmpl;
}

}  // namespace

InputSet::InputSet(const std::vector<std::string>& paths, InputFormat format, const std::string& stdin_dir) {
  try {
    for (const std::string& p : paths) {
      if (p == "-") {
        int slot = -1;
        const std::string tmp = spool_stdin(stdin_dir, slot);
        temp_files_.push_back(tmp);
        temp_slots_.push_back(slot);
        Source s;
        s.path = tmp;
        s.display = "<stdin>";
        s.kind = format == InputFormat::Text ? SourceKind::TextFile : SourceKind::Jsonl;
        s.doc_id = "<stdin>";
        sources_.push_back(std::move(s));
        continue;
      }
      std::error_code ec;
      const fs::file_status st = fs::status(p, ec);
      if (ec && ec != std::errc::no_such_file_or_directory)
        throw IoError(p + ": cannot access: " + ec.message() + "; check the permissions of the path");
      if (!fs::exists(st)) throw IoError(p + ": no such file or directory; check the path");
      if (fs::is_directory(st)) {
        struct Found {
          std::string rel, full, problem;
          bool operator<(const Found& o) const { return rel < o.rel; }
        };
        std::vector<Found> files;
        fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec), end;
        if (ec) throw IoError(p + ": cannot read directory: " + ec.message() + "; check its permissions");
        for (; it != end; it.increment(ec)) {
          if (ec) throw IoError(p + ": cannot walk directory: " + ec.message() + "; check its permissions");
          std::error_code ec2;
          // Regular files are read; one that cannot be (no permission, a dangling link) is a
          // bad input, reported in its turn (never silently left out). Directories are walked;
          // FIFOs, sockets and devices are not documents.
          std::string problem;
          if (it->is_regular_file(ec2)) {
            if (::access(it->path().c_str(), R_OK) != 0)
              problem = std::string("cannot read: ") + std::strerror(errno) + "; check its permissions";
          } else if (it->is_symlink(ec2) && !fs::exists(it->status(ec2))) {
            problem = "a symbolic link to nothing (" + fs::read_symlink(it->path(), ec2).string() + ")";
          } else {
            continue;
          }
          files.push_back({fs::relative(it->path(), p, ec2).generic_string(), it->path().string(), problem});
        }
        std::sort(files.begin(), files.end());
        for (auto& f : files) {
          Source s;
          s.path = f.full;
          s.display = f.full;
          s.doc_id = f.rel;
          s.kind = kind_from_name(f.rel, format);
          s.from_directory = true;
          s.problem = f.problem;
          sources_.push_back(std::move(s));
        }
        continue;
      }
      if (::access(p.c_str(), R_OK) != 0)
        throw IoError(p + ": cannot read: " + std::strerror(errno) + "; check its permissions");
      Source s;
      s.path = p;
      s.display = p;
      s.doc_id = p;
      s.kind = kind_from_name(p, format);
      sources_.push_back(std::move(s));
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
}

bool InputSet::all_jsonl() const noexcept {
  return std::all_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.kind == SourceKind::Jsonl; });
}
bool InputSet::all_text() const noexcept {
  return std::all_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.kind == SourceKind::TextFile; });
}

void BadRecords::report(const std::string& where, const std::string& what) {
  std::string msg = where + ": " + what;
  if (policy_ == OnError::Fail) throw FormatError(msg + "; fix the input, or skip bad records with --on-error skip");
  ++skipped_;
  if (first_.size() < 10) first_.push_back(std::move(msg));
}

std::string record_where(const Source& source, uint64_t line, uint64_t offset) {
  if (line == 0) return source.display + ": the line at byte " + std::to_string(offset);
  return source.display + ":" + std::to_string(line);
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

struct JsonlParser::Impl {
  ReaderOptions opt;
  simdjson::dom::parser parser;
  std::string id_buf, sanitized, surrogates;
  bool replaced = false;
};

JsonlParser::JsonlParser(const ReaderOptions& options) : impl_(std::make_unique<Impl>()) { impl_->opt = options; }
JsonlParser::~JsonlParser() = default;
bool JsonlParser::replaced_invalid_utf8() const noexcept { return impl_->replaced; }

bool JsonlParser::parse(std::string_view line, const Source& source, uint64_t line_no, Record& out, std::string& problem) {
  Impl& m = *impl_;
  const ReaderOptions& opt = m.opt;
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
  if (err) {
    problem = std::string("malformed JSON (") + simdjson::error_message(err) + ")";
    return false;
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj)) {
    problem = std::string("the line is ") + type_name(doc.type()) + ", not a JSON object";
    return false;
  }
  simdjson::dom::element text_el;
  if (obj.at_key(opt.text_field).get(text_el)) {
    problem = "missing text field \"" + opt.text_field + "\" (choose another with --text-field)";
    return false;
  }
  std::string_view text;
  if (text_el.get_string().get(text)) {
    problem = "text field \"" + opt.text_field + "\" is " + type_name(text_el.type()) + ", not a string";
    return false;
  }
  simdjson::dom::element id_el;
  if (obj.at_key(opt.id_field).get(id_el)) {
    m.id_buf = source.display + ":" + std::to_string(line_no);
    out.id = m.id_buf;
  } else if (id_el.is_string()) {
    out.id = id_el.get_string().value_unsafe();
  } else if (id_el.is_number()) {
    m.id_buf = simdjson::minify(id_el);
    out.id = m.id_buf;
  } else {
    problem = "id field \"" + opt.id_field + "\" is " + type_name(id_el.type()) + ", not a string or number";
    return false;
  }
  out.key = KeyValue{};
  if (!opt.key_field.empty()) {
    simdjson::dom::element key_el;
    if (!obj.at_key(opt.key_field).get(key_el) && !key_el.is_null()) {
      if (key_el.is_number()) {
        out.key.kind = KeyValue::Kind::Number;
        out.key.number = key_el.get_double().value_unsafe();
      } else if (key_el.is_string()) {
        out.key.kind = KeyValue::Kind::String;
        out.key.text = key_el.get_string().value_unsafe();
      } else {
        problem = "keep-by field \"" + opt.key_field + "\" is " + type_name(key_el.type()) + ", not a number or string";
        return false;
      }
    }
  }
  if (!limit_doc_text(text, opt, problem)) return false;
  out.text = text;
  return true;
}

bool limit_doc_text(std::string_view& text, const ReaderOptions& options, std::string& problem) {
  if (text.size() <= options.max_doc_bytes) return true;
  if (options.long_docs == LongDocs::Skip) {
    problem = "the text is " + std::to_string(text.size()) + " bytes, longer than --max-doc-bytes " +
              std::to_string(options.max_doc_bytes) + " (raise it, or --long-docs truncate)";
    return false;
  }
  size_t cut = static_cast<size_t>(options.max_doc_bytes);
  // Back to the start of a character: never more than 3 continuation bytes.
  for (int i = 0; i < 3 && cut > 0 && (static_cast<uint8_t>(text[cut]) & 0xC0) == 0x80; ++i) --cut;
  text = text.substr(0, cut);
  return true;
}

struct RecordReader::Impl {
  const InputSet& inputs;
  ReaderOptions opt;
  ReaderStats stats;
  BadRecords bad;

  size_t cur = 0;
  std::unique_ptr<ByteStream> stream;
  uint64_t finished_bytes = 0;

  // Line buffer: data in [begin, end); kPad bytes past `end` are always allocated, so a line
  // viewed in place can be handed to simdjson without copying.
  static constexpr size_t kPad = simdjson::SIMDJSON_PADDING;
  std::vector<char> buf;
  size_t begin = 0, end = 0, scanned = 0;
  uint64_t buf_base = 0;      // offset of buf[0] in the source's decompressed bytes
  uint64_t line_offset = 0;   // offset of the line get_line returned last
  uint64_t read_until = 0;    // select(): the end of the selected line (with its newline)
  // select(): only these records, in order.
  std::vector<RecordPos> selection;
  size_t selected = 0;
  bool selecting = false;
  bool eof = false;
  bool any_bytes = false;
  bool overlong = false;  // get_line's last line was longer than opt.max_record_bytes (and dropped)
  uint64_t line_no = 0;

  JsonlParser parser;
  std::string file_text, problem;

  Impl(const InputSet& in, const ReaderOptions& o) : inputs(in), opt(o), bad(o.on_error), buf(1 << 20), parser(o) {
    if (o.max_record_bytes == 0 || o.max_record_bytes > kMaxRecordBytes || o.max_doc_bytes == 0 || o.max_doc_bytes > kMaxRecordBytes)
      throw UsageError("--max-record-bytes and --max-doc-bytes must be between 1 and " + std::to_string(kMaxRecordBytes));
  }
  const Source& source() const { return inputs.sources()[cur]; }

  void open_next() {
    stream = open_stream(source().path, source().display);
    begin = end = scanned = 0;
    buf_base = 0;
    eof = false;
    any_bytes = false;
    line_no = 0;
  }

  void close_current() {
    if (stream) finished_bytes += stream->raw_bytes_read();
    stream.reset();
    ++cur;
  }

  // The next line (without its newline), or false at the end of the source. A line longer than
  // opt.max_record_bytes comes back empty with `overlong` set; its bytes are read and dropped.
  bool get_line(std::string_view& line) {
    overlong = false;
    for (;;) {
      if (scanned < end) {
        const void* nl = std::memchr(buf.data() + scanned, '\n', end - scanned);
        if (nl) {
          const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - buf.data());
          line = std::string_view(buf.data() + begin, pos - begin);
          line_offset = buf_base + begin;
          begin = scanned = pos + 1;
          ++line_no;
          skip_bom(line);
          return true;
        }
        scanned = end;
      }
      if (eof) {
        if (begin < end) {
          line = std::string_view(buf.data() + begin, end - begin);
          line_offset = buf_base + begin;
          begin = scanned = end;
          ++line_no;
          skip_bom(line);
          return true;
        }
        return false;
      }
      if (end - begin > opt.max_record_bytes) return drop_long_line(line);
      if (begin > 0) {  // compact
        std::memmove(buf.data(), buf.data() + begin, end - begin);
        buf_base += begin;
        end -= begin;
        scanned -= begin;
        begin = 0;
      }
      if (buf.size() - end < (1 << 16) + kPad) buf.resize(buf.size() * 2);
      size_t want = buf.size() - end - kPad;
      // Reading by position: no more than the selected line needs (at least 64 KiB), so that a
      // few records scattered over a large file do not each cost a full buffer.
      if (read_until > buf_base + end) want = std::min<uint64_t>(want, std::max<uint64_t>(read_until - (buf_base + end), 1 << 16));
      const size_t got = stream->read(buf.data() + end, want);
      if (got == 0) {
        eof = true;
      } else {
        end += got;
        any_bytes = true;
      }
    }
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
      buf_base += end;
      begin = scanned = end = 0;
      const size_t got = stream->read(buf.data(), buf.size() - kPad);
      if (got == 0) {
        eof = true;
        return true;
      }
      end = got;
      const void* nl = std::memchr(buf.data(), '\n', end);
      if (nl) {
        begin = scanned = static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
        return true;
      }
    }
  }

  std::string long_line_problem() const {
    return "line " + std::to_string(line_no) + " is longer than --max-record-bytes " + std::to_string(opt.max_record_bytes) +
           " bytes (a file without newlines, or a decompression bomb?); raise the limit if the data is real";
  }

  // A bad record: throws, or counts it (stats mirror `bad`).
  void report(const std::string& where, const std::string& what) {
    bad.report(where, what);
    stats.skipped = bad.skipped();
    if (stats.first_skips.size() < bad.first().size()) stats.first_skips.push_back(bad.first().back());
  }

  // Parses one JSONL line into `out`; false if the record is bad (and skipped).
  bool parse_line(std::string_view line, Record& out) {
    const uint64_t line_number = selecting ? 0 : line_no;
    if (!parser.parse(line, source(), line_number, out, problem)) {
      report(record_where(source(), line_number, line_offset), problem);
      return false;
    }
    if (parser.replaced_invalid_utf8()) ++stats.invalid_utf8;
    out.raw = line;
    out.source = cur;
    out.line = line_number;
    out.offset = line_offset;
    return true;
  }

  [[noreturn]] void changed(const std::string& what) const {
    throw IoError(source().display + ": " + what +
                  "; the input changed while neardup was running (do not modify inputs during a run)");
  }

  // select(): the next selected line, or false after the last.
  bool next_selected_line(std::string_view& line) {
    if (selected >= selection.size()) {
      if (stream) close_current();
      return false;
    }
    const RecordPos& p = selection[selected++];
    if (p.source >= inputs.sources().size() || inputs.sources()[p.source].kind != SourceKind::Jsonl)
      throw UsageError("RecordReader::select: a position names no JSONL source");
    if (p.source != cur || !stream) {
      if (p.source < cur) throw UsageError("RecordReader::select: positions out of reading order");
      if (stream) close_current();
      cur = p.source;
      open_next();
    }
    // Move to p.offset: inside the buffer, or past it (a skip of the stream).
    const uint64_t at = buf_base + begin;
    if (p.offset < at) throw UsageError("RecordReader::select: positions out of reading order");
    if (p.offset <= buf_base + end) {
      begin = scanned = static_cast<size_t>(p.offset - buf_base);
    } else {
      const uint64_t gap = p.offset - (buf_base + end);
      if (!eof && stream->skip(gap) == gap) {
        buf_base = p.offset;
        begin = end = scanned = 0;
      } else {
        changed("no line at byte " + std::to_string(p.offset) + " any more");
      }
    }
    line_no = 0;
    read_until = p.offset + p.length + 1;
    if (!get_line(line) || line.size() != p.length)
      changed("the line at byte " + std::to_string(p.offset) + " is no longer " + std::to_string(p.length) + " bytes long");
    return true;
  }

  // The next record unparsed: a JSONL line that is not blank, a text file, or a bad input.
  bool next_raw(RawRecord& out) {
    // Nothing of the last record survives: a bad record has no bytes (the buffer they were in
    // may be gone).
    out.bytes = {};
    out.id = {};
    if (selecting) {
      std::string_view line;
      if (!next_selected_line(line)) return false;
      out.kind = RawRecord::Kind::Line;
      out.bytes = line;
      out.source = cur;
      out.line = 0;
      out.offset = line_offset;
      return true;
    }
    for (;;) {
      if (cur >= inputs.sources().size()) return false;
      const Source& src = source();
      if (!src.problem.empty()) {
        out.kind = RawRecord::Kind::Bad;
        out.problem = src.problem;
        out.source = cur;
        out.line = out.offset = 0;
        ++cur;
        return true;
      }
      if (src.kind == SourceKind::TextFile) {
        const bool fits = read_all_capped(src.path, src.display, opt.max_record_bytes, file_text);
        struct stat sb;
        if (::stat(src.path.c_str(), &sb) == 0) finished_bytes += static_cast<uint64_t>(sb.st_size);
        out.source = cur;
        out.line = 0;
        out.offset = 0;
        ++cur;
        out.kind = RawRecord::Kind::Bad;
        if (!fits) {
          out.problem = "file is longer than --max-record-bytes " + std::to_string(opt.max_record_bytes) +
                        " bytes (a decompression bomb?); raise the limit if the data is real";
          return true;
        }
        if (file_text.empty() && !src.from_directory) {
          out.problem = "file is empty";
          return true;
        }
        std::string_view text = file_text;
        if (!limit_doc_text(text, opt, out.problem)) return true;
        out.kind = RawRecord::Kind::Parsed;
        out.id = src.doc_id;
        out.bytes = text;
        return true;
      }
      if (!stream) open_next();
      std::string_view line;
      if (!get_line(line)) {
        const bool empty_file = !any_bytes;
        out.source = cur;
        close_current();
        if (empty_file) {
          out.kind = RawRecord::Kind::Bad;
          out.problem = "file is empty (no JSONL records)";
          return true;
        }
        continue;
      }
      if (overlong) {
        out.kind = RawRecord::Kind::Bad;
        out.problem = long_line_problem();
        out.source = cur;
        out.line = line_no;
        out.offset = line_offset;
        return true;
      }
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line
      out.kind = RawRecord::Kind::Line;
      out.bytes = line;
      out.source = cur;
      out.line = line_no;
      out.offset = line_offset;
      return true;
    }
  }

  bool next(Record& out) {
    RawRecord raw;
    while (next_raw(raw)) {
      switch (raw.kind) {
        case RawRecord::Kind::Bad:
          report(inputs.sources()[raw.source].display, raw.problem);
          continue;
        case RawRecord::Kind::Parsed:
          out.id = raw.id;
          out.text = raw.bytes;
          out.raw = inputs.sources()[raw.source].path;
          out.source = raw.source;
          out.line = 0;
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

RecordReader::RecordReader(const InputSet& inputs, const ReaderOptions& options)
    : impl_(std::make_unique<Impl>(inputs, options)) {}
RecordReader::~RecordReader() = default;
bool RecordReader::next(Record& out) { return impl_->next(out); }
bool RecordReader::next_raw(RawRecord& out) { return impl_->next_raw(out); }
void RecordReader::select(std::vector<RecordPos> positions) {
  impl_->selection = std::move(positions);
  impl_->selected = 0;
  impl_->selecting = true;
}
const ReaderStats& RecordReader::stats() const noexcept { return impl_->stats; }
uint64_t RecordReader::bytes_read() const noexcept {
  return impl_->finished_bytes + (impl_->stream ? impl_->stream->raw_bytes_read() : 0);
}

}  // namespace neardup::io
