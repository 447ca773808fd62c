// Estimating the size of a run from the first bytes of its inputs (io::sample_inputs).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "neardup/io/reader.h"
#include "neardup/io/stream.h"

namespace neardup::io {
namespace {

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Decompressed and compressed bytes seen for one kind of compression.
struct Ratio {
  uint64_t data = 0;
  uint64_t raw = 0;
  bool seen = false;
  double of(uint64_t size) const noexcept {
    return raw > 0 ? static_cast<double>(size) * static_cast<double>(data) / static_cast<double>(raw)
                   : static_cast<double>(size);
  }
};

// A compressed source is read until this many compressed bytes have gone through the
// decompressor (or this much output), so that its ratio is not that of its first blocks, nor
// thrown off by the block of up to 128 KiB that zstd holds before it outputs it.
constexpr uint64_t kMinRawSample = uint64_t{2} << 20;
constexpr uint64_t kMaxDataSample = uint64_t{64} << 20;
// A plain file larger than the budget is sampled in this many windows spread over it (fewer,
// larger windows are at the mercy of a file sorted by length: BENCHMARKS.md).
constexpr uint64_t kWindows = 1024;

}  // namespace

InputSample sample_inputs(const InputSet& inputs, const ReaderOptions& options, uint64_t budget,
                          const std::function<void(std::string_view id, std::string_view text)>& on_record) {
  InputSample out;
  Ratio ratio[3];
  // Per JSONL source: its decompressed size when read whole (or -1).
  std::vector<double> whole_size(inputs.sources().size(), -1.0);
  // Per source: its compression, once opened (text files past the budget are not opened).
  std::vector<std::optional<Compression>> kind(inputs.sources().size());
  // JSONL: lines per byte over the windows looked at; of their whole lines, the records and
  // the bytes of text and ids.
  uint64_t window_bytes = 0, newlines = 0;
  double whole_id_bytes = 0;  // of text files
  uint64_t lines = 0, good = 0, line_bytes = 0, text_bytes = 0, id_bytes = 0;
  JsonlParser parser(options);
  std::string text;
  Record rec;
  std::string problem;
  out.whole = true;
  const auto& sources = inputs.sources();
  for (size_t s = 0; s < sources.size(); ++s) {
    const Source& src = sources[s];
    if (!src.problem.empty()) continue;
    if (src.kind == SourceKind::TextFile) {
      out.records += 1;
      out.id_bytes += static_cast<double>(src.doc_id.size());
      whole_id_bytes += static_cast<double>(src.doc_id.size());
      if (out.sampled_bytes >= budget) {
        out.whole = false;
        continue;
      }
      auto stream = open_stream(src.path, src.display);
      const Compression c = stream->compression();
      text.clear();
      uint64_t total = 0;
      char buf[1 << 16];
      for (size_t got; (got = stream->read(buf, sizeof buf)) > 0;) {
        if (text.size() < options.max_doc_bytes) text.append(buf, std::min<uint64_t>(got, options.max_doc_bytes - text.size()));
        total += got;
      }
      ratio[static_cast<int>(c)].data += total;
      ratio[static_cast<int>(c)].raw += stream->raw_bytes_read();
      ratio[static_cast<int>(c)].seen = true;
      kind[s] = c;
      whole_size[s] = static_cast<double>(total);
      out.sampled_bytes += text.size();
      out.sampled_text_bytes += text.size();
      ++out.sampled_records;
      on_record(src.doc_id, text);
      continue;
    }
    // JSONL: the first source of each compression kind, within the budget.
    auto stream = open_stream(src.path, src.display);
    kind[s] = stream->compression();
    Ratio& r = ratio[static_cast<int>(*kind[s])];
    if (r.seen || out.sampled_bytes >= budget) {
      out.whole = false;
      continue;
    }
    r.seen = true;
    const uint64_t want = std::max<uint64_t>(budget - out.sampled_bytes, uint64_t{1} << 20);
    // The windows of whole lines looked at.
    std::vector<std::string> windows;
    const uint64_t size = file_size(src.path);
    if (*kind[s] == Compression::None && size > want) {
      // A plain file: windows spread over it, since files are often sorted (by source, by length).
      r.data += size;
      r.raw += size;
      whole_size[s] = static_cast<double>(size);
      out.whole = false;
      stream.reset();
      const int fd = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // the run reports it
      const uint64_t w = std::max<uint64_t>(want / kWindows, 1024);
      uint64_t extended = 0;  // bytes read past the windows to finish a line
      for (uint64_t i = 0; i < kWindows; ++i) {
        // The middle of the i-th of kWindows equal parts (the midpoint rule: a file sorted by
        // length has its lines per byte falling steeply from its start).
        const uint64_t at = std::min(size - w, (2 * i + 1) * size / (2 * kWindows) - std::min((2 * i + 1) * size / (2 * kWindows), w / 2));
        std::string data(w, '\0');
        const ssize_t got = ::pread(fd, data.data(), w, static_cast<off_t>(at));
        if (got <= 0) break;
        data.resize(static_cast<size_t>(got));
        // Lines per byte from the windows (a window's whole lines are the shorter ones); the
        // sizes of records from whole lines.
        window_bytes += data.size();
        newlines += static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
        if (at + data.size() == size && data.back() != '\n') ++newlines;  // a last line without one
        const size_t first = at == 0 ? 0 : data.find('\n') + 1;  // from the first whole line
        if (first == 0 && at > 0) continue;  // no line starts here
        // A window holds at least one whole line: the first one is read to its end, while the
        // reading past the windows stays within the budget.
        while (data.find('\n', first) == std::string::npos && at + data.size() < size && extended < want) {
          const size_t old = data.size();
          data.resize(old + (64 << 10));
          const ssize_t more = ::pread(fd, data.data() + old, 64 << 10, static_cast<off_t>(at + old));
          data.resize(old + static_cast<size_t>(std::max<ssize_t>(more, 0)));
          if (more <= 0) break;
          extended += static_cast<uint64_t>(more);
        }
        out.sampled_bytes += data.size();
        const size_t last = at + data.size() == size ? data.size() : data.rfind('\n') + 1;
        if (last > first) windows.push_back(data.substr(first, last - first));
      }
      ::close(fd);
    } else {
      // From the start, for as long as it takes to know the compression ratio.
      const bool compressed = *kind[s] != Compression::None;
      std::string data;
      bool eof = false;
      char buf[1 << 16];
      uint64_t total = 0;
      while (total < kMaxDataSample && (total < want || (compressed && stream->raw_bytes_read() < kMinRawSample))) {
        const size_t got = stream->read(buf, sizeof buf);
        if (got == 0) {
          eof = true;
          break;
        }
        if (data.size() < want) data.append(buf, std::min<uint64_t>(got, want - data.size()));
        total += got;
      }
      r.data += total;
      r.raw += stream->raw_bytes_read();
      if (eof) whole_size[s] = static_cast<double>(total);
      if (!eof || data.size() < total) out.whole = false;
      // Whole lines only; a last line without a newline counts when the file ends there.
      data.resize(eof && data.size() == total ? data.size() : data.rfind('\n') + 1);
      window_bytes += data.size();
      out.sampled_bytes += data.size();
      newlines += static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
      if (!data.empty() && data.back() != '\n') ++newlines;
      windows.push_back(std::move(data));
    }
    for (std::string& data : windows) {
      const size_t end = data.size();
      data.append(JsonlParser::kPadding, '\0');
      size_t at = 0;
      if (data.compare(0, 3, "\xEF\xBB\xBF") == 0) at = 3;
      while (at < end) {
        size_t nl = data.find('\n', at);
        if (nl == std::string::npos || nl > end) nl = end;
        std::string_view line(data.data() + at, nl - at);
        at = nl + 1;
        ++lines;
        line_bytes += line.size() + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank: not a record
        if (!parser.parse(line, src, lines, rec, problem)) continue;
        std::string_view t = rec.text;
        if (!limit_doc_text(t, options, problem)) continue;
        ++good;
        text_bytes += t.size();
        id_bytes += rec.id.size();
        ++out.sampled_records;
        out.sampled_text_bytes += t.size();
        on_record(rec.id, t);
      }
    }
  }
  // Scale the JSONL records seen by the decompressed size of every JSONL source.
  double jsonl_data = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    const Source& src = sources[s];
    if (!src.problem.empty()) continue;
    double size = whole_size[s];
    if (size < 0) {
      const uint64_t raw = file_size(src.path);
      Compression c = Compression::None;
      if (kind[s]) {
        c = *kind[s];
      } else {  // by its name, as a user would name it
        const std::string& p = src.path;
        if (p.ends_with(".gz")) c = Compression::Gzip;
        if (p.ends_with(".zst")) c = Compression::Zstd;
      }
      size = ratio[static_cast<int>(c)].of(raw);
    }
    out.data_bytes += size;
    if (src.kind == SourceKind::TextFile)
      out.text_bytes += std::min(size, static_cast<double>(options.max_doc_bytes));
    else
      jsonl_data += size;
  }
  if (window_bytes > 0 && lines > 0) {
    const double records = jsonl_data * static_cast<double>(newlines) / static_cast<double>(window_bytes) *
                           static_cast<double>(good) / static_cast<double>(lines);
    out.records += records;
    out.text_bytes += jsonl_data * static_cast<double>(text_bytes) / static_cast<double>(line_bytes);
    if (good > 0) out.id_bytes += records * static_cast<double>(id_bytes) / static_cast<double>(good);
  }
  if (out.whole) {  // counts, not estimates
    out.records = static_cast<double>(out.sampled_records);
    out.text_bytes = static_cast<double>(out.sampled_text_bytes);
    out.id_bytes = whole_id_bytes + static_cast<double>(id_bytes);
  }
  return out;
}

}  // namespace neardup::io
