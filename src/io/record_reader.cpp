// The record reader: the records of every source in order, through the line buffer; decompressed
// copies kept for later passes; records read again by position.
#include "neardup/io/reader.h"
#include "io/raw_records.h"

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


#include "io/line_buffer.h"

namespace fs = std::filesystem;

namespace neardup::io {

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
  // run_end(): the selection's index past the current run, and where the run ends.
  size_t run_last = 0;
  uint64_t run_until = 0;
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
    lines.open(std::move(stream), source().display, selecting);
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

  // Where a read for the selected line p (the last one taken) stops: the end of the run of
  // selected lines from p on, each starting at most kRunGap bytes after the one before it ends,
  // and all within kRunBytes of p. A gap that small costs less copied than another read(2)
  // (1 million short documents, 264,000 read again: gaps of 4-16 KiB verified in 0.51-0.53 s,
  // 1 KiB or none in 0.57-0.62 s, 64 KiB in 0.52-0.56 s). A run is found at its first line; the
  // lines after it are in the buffer by the time they are taken.
  uint64_t run_end(const RecordPos& p) {
    constexpr uint64_t kRunGap = uint64_t{16} << 10, kRunBytes = LineBuffer::kStartBytes / 2;
    if (selected <= run_last) return std::max(run_until, p.offset + p.length + 1);
    run_until = p.offset + p.length + 1;
    for (run_last = selected; run_last < selection.size(); ++run_last) {
      const RecordPos& q = selection[run_last];
      const uint64_t q_end = q.offset + q.length + 1;
      if (q.source != p.source || q.offset < run_until || q.offset > run_until + kRunGap || q_end - p.offset > kRunBytes) break;
      run_until = q_end;
    }
    return run_until;
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
    if (!lines.seek(p.offset, run_end(p))) changed("no line at byte " + std::to_string(p.offset) + " any more");
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
bool RawReading::next_raw(RecordReader& reader, RawRecord& out) { return reader.impl_->next_raw(out); }
void RecordReader::select(std::vector<RecordPos> positions) {
  impl_->selection = std::move(positions);
  impl_->selected = 0;
  impl_->selecting = true;
  impl_->run_last = 0;
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

std::shared_ptr<const void> RawReading::share_line(RecordReader& reader, const RawRecord& line) {
  // Reading by position, the reader moves to another buffer at almost every line, so a shared
  // line would hold a buffer of its own: only lines of a buffer's size or more are shared.
  if (reader.impl_->selecting && line.bytes.size() < LineBuffer::kShareSelectedBytes) return nullptr;
  return reader.impl_->lines.share();
}

uint64_t RecordReader::bytes_read() const noexcept {
  return impl_->finished_bytes + impl_->lines.raw_bytes_read();
}

}  // namespace neardup::io
