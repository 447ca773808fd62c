// Estimating the size of a run from a sample of its inputs (io::sample_inputs).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "io/retry.h"
#include "neardup/io/reader.h"
#include "io/raw_records.h"
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

// Whole JSONL lines read from a source, `at_start` when they begin at its first byte.
struct Window {
  std::string bytes;
  bool at_start = false;
};

class Sampler {
 public:
  Sampler(const InputSet& inputs, const ReaderOptions& options, uint64_t budget,
          const std::function<void(std::string_view, std::string_view)>& on_record)
      : inputs_(inputs), options_(options), budget_(budget), on_record_(on_record), parser_(options),
        whole_size_(inputs.sources().size(), -1.0), read_(inputs.sources().size(), 0), kind_(inputs.sources().size()) {}

  InputSample run() {
    out_.whole = true;
    const auto& sources = inputs_.sources();
    for (size_t s = 0; s < sources.size(); ++s) {
      if (!sources[s].problem.empty()) continue;
      if (sources[s].kind == SourceKind::Memory)
        sample_memory();
      else if (sources[s].kind == SourceKind::TextFile)
        sample_text_file(s);
      else
        sample_jsonl(s);
    }
    scale();
    return out_;
  }

 private:
  // A text file is one document, counted exactly; its text is sampled while the budget lasts.
  void sample_text_file(size_t s) {
    const Source& src = inputs_.sources()[s];
    out_.records += 1;
    out_.id_bytes += static_cast<double>(src.doc_id.size());
    text_file_id_bytes_ += static_cast<double>(src.doc_id.size());
    if (out_.sampled_bytes >= budget_) {
      out_.whole = false;
      return;
    }
    auto stream = open_stream(src.path, src.display);
    kind_[s] = stream->compression();
    const uint64_t want = std::min(options_.max_doc_bytes, std::max<uint64_t>(budget_ - out_.sampled_bytes, 1 << 16));
    std::string text;
    bool eof = false;
    char buf[1 << 16];
    while (text.size() < want) {
      const size_t got = stream->read(buf, sizeof buf);
      if (got == 0) {
        eof = true;
        break;
      }
      text.append(buf, got);
    }
    Ratio& r = ratio_[static_cast<int>(*kind_[s])];
    r.data += text.size();
    r.raw += stream->raw_bytes_read();
    read_[s] = text.size();
    r.seen = true;
    if (eof) whole_size_[s] = static_cast<double>(text.size());
    else out_.whole = false;
    if (text.size() > options_.max_doc_bytes) text.resize(options_.max_doc_bytes);
    out_.sampled_bytes += text.size();
    out_.sampled_text_bytes += text.size();
    ++out_.sampled_records;
    on_record_(src.doc_id, text);
  }

  // Documents in memory are counted exactly (no file to scale from); their texts are sampled
  // while the budget lasts.
  void sample_memory() {
    for (const Document& d : inputs_.documents()) {
      const double text = static_cast<double>(std::min<uint64_t>(d.text.size(), options_.max_doc_bytes));
      out_.records += 1;
      out_.text_bytes += text;
      out_.data_bytes += text;
      out_.id_bytes += static_cast<double>(d.id.size());
      text_file_id_bytes_ += static_cast<double>(d.id.size());
      if (out_.sampled_bytes >= budget_) {
        out_.whole = false;
        continue;
      }
      const std::string_view t = std::string_view(d.text).substr(0, options_.max_doc_bytes);
      out_.sampled_bytes += t.size();
      out_.sampled_text_bytes += t.size();
      ++out_.sampled_records;
      on_record_(d.id, t);
    }
  }

  // The first JSONL source of each compression kind, within the budget: windows spread over a
  // plain file, the start of a compressed one.
  void sample_jsonl(size_t s) {
    const Source& src = inputs_.sources()[s];
    auto stream = open_stream(src.path, src.display);
    kind_[s] = stream->compression();
    Ratio& r = ratio_[static_cast<int>(*kind_[s])];
    if (r.seen || out_.sampled_bytes >= budget_) {
      out_.whole = false;
      return;
    }
    r.seen = true;
    const uint64_t want = std::max<uint64_t>(budget_ - out_.sampled_bytes, uint64_t{1} << 20);
    const uint64_t size = file_size(src.path);
    std::vector<Window> windows;
    if (*kind_[s] == Compression::None && size > want) {
      r.data += size;
      r.raw += size;
      whole_size_[s] = static_cast<double>(size);
      out_.whole = false;
      stream.reset();
      windows = spread_windows(src, size, want);
    } else {
      windows.push_back(head_window(s, *stream, want, r));
    }
    for (Window& w : windows) tally(src, w);
  }

  // Windows spread over a plain file, since files are often sorted (by source, by length).
  std::vector<Window> spread_windows(const Source& src, uint64_t size, uint64_t want) {
    std::vector<Window> windows;
    const int fd = io::retry_eintr([&] { return ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) return windows;  // the run reports it
    const uint64_t w = std::max<uint64_t>(want / kWindows, 1024);
    uint64_t extended = 0;  // bytes read past the windows to finish a line
    for (uint64_t i = 0; i < kWindows; ++i) {
      // Around the middle of the i-th of kWindows equal parts (the midpoint rule: a file sorted
      // by length has its lines per byte falling steeply from its start).
      const uint64_t mid = size / kWindows * i + size / (2 * kWindows);
      const uint64_t at = std::min(size - w, mid > w / 2 ? mid - w / 2 : 0);
      std::string data(w, '\0');
      const ssize_t got = ::pread(fd, data.data(), w, static_cast<off_t>(at));
      if (got <= 0) break;
      data.resize(static_cast<size_t>(got));
      // Lines per byte from every byte of the windows (their whole lines are the shorter ones).
      count_lines(data, at + data.size() == size);
      const size_t first = at == 0 ? 0 : data.find('\n') + 1;  // from the first whole line
      if (first == 0 && at > 0) continue;                         // no line starts here
      // At least one whole line per window: the first one is read to its end, while the
      // reading past the windows stays within the budget.
      while (data.find('\n', first) == std::string::npos && at + data.size() < size && extended < want) {
        const size_t old = data.size();
        data.resize(old + (64 << 10));
        const ssize_t more = ::pread(fd, data.data() + old, 64 << 10, static_cast<off_t>(at + old));
        data.resize(old + static_cast<size_t>(std::max<ssize_t>(more, 0)));
        if (more <= 0) break;
        extended += static_cast<uint64_t>(more);
      }
      out_.sampled_bytes += data.size();
      const size_t last = at + data.size() == size ? data.size() : data.rfind('\n') + 1;
      if (last > first) windows.push_back({data.substr(first, last - first), at == 0});
    }
    ::close(fd);
    return windows;
  }

  // The start of a source, for as long as it takes to know its compression ratio.
  Window head_window(size_t s, ByteStream& stream, uint64_t want, Ratio& r) {
    const bool compressed = stream.compression() != Compression::None;
    std::string data;
    bool eof = false;
    char buf[1 << 16];
    uint64_t total = 0;
    while (total < kMaxDataSample && (total < want || (compressed && stream.raw_bytes_read() < kMinRawSample))) {
      const size_t got = stream.read(buf, sizeof buf);
      if (got == 0) {
        eof = true;
        break;
      }
      if (data.size() < want) data.append(buf, std::min<uint64_t>(got, want - data.size()));
      total += got;
    }
    r.data += total;
    r.raw += stream.raw_bytes_read();
    read_[s] = total;
    if (eof) whole_size_[s] = static_cast<double>(total);
    const bool all = eof && data.size() == total;
    if (!all) out_.whole = false;
    // Whole lines only; a last line without a newline counts when the file ends there.
    data.resize(all ? data.size() : data.rfind('\n') + 1);
    out_.sampled_bytes += data.size();
    count_lines(data, all);
    return {std::move(data), true};
  }

  void count_lines(const std::string& data, bool at_end) {
    window_bytes_ += data.size();
    newlines_ += static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
    if (at_end && !data.empty() && data.back() != '\n') ++newlines_;  // a last line without one
    if (at_end && !data.empty()) ++file_ends_;
  }

  // The records of a window's whole lines: how many of its lines are records, and their sizes.
  void tally(const Source& src, Window& w) {
    const size_t end = w.bytes.size();
    w.bytes.append(JsonlParser::kPadding, '\0');
    size_t at = w.at_start && w.bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    Record rec;
    std::string problem;
    while (at < end) {
      size_t nl = w.bytes.find('\n', at);
      if (nl == std::string::npos || nl > end) nl = end;
      std::string_view line(w.bytes.data() + at, nl - at);
      at = nl + 1;
      ++lines_;
      line_bytes_ += line.size() + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank, as the reader sees it
      if (!parser_.parse(line, src, lines_, rec, problem)) continue;  // (parse applies --max-doc-bytes)
      const std::string_view t = rec.text;
      ++good_;
      text_bytes_ += t.size();
      id_bytes_ += rec.id.size();
      ++out_.sampled_records;
      out_.sampled_text_bytes += t.size();
      on_record_(rec.id, t);
    }
  }

  // From the sample to every input: decompressed sizes by the compression ratios seen, records
  // by lines per byte and the share of lines that are records.
  void scale() {
    const auto& sources = inputs_.sources();
    double jsonl_data = 0;
    for (size_t s = 0; s < sources.size(); ++s) {
      const Source& src = sources[s];
      if (!src.problem.empty() || src.kind == SourceKind::Memory) continue;  // memory: counted exactly
      double size = whole_size_[s];
      // A text file past the budget is not opened: its compression by its name.
      const Compression c = kind_[s] ? *kind_[s] : compression_of_name(src.path);
      if (size < 0) size = decompressed_size(s, c);
      out_.data_bytes += size;
      if (src.kind == SourceKind::Jsonl && c != Compression::None) out_.compressed_jsonl_bytes += size;
      if (src.kind == SourceKind::TextFile)
        out_.text_bytes += std::min(size, static_cast<double>(options_.max_doc_bytes));
      else
        jsonl_data += size;
    }
    if (window_bytes_ > 0 && lines_ > 0) {
      const double records = jsonl_data * static_cast<double>(newlines_) / static_cast<double>(window_bytes_) *
                             static_cast<double>(good_) / static_cast<double>(lines_);
      out_.records += records;
      out_.text_bytes += jsonl_data * static_cast<double>(text_bytes_) / static_cast<double>(line_bytes_);
      if (good_ > 0) out_.id_bytes += records * static_cast<double>(id_bytes_) / static_cast<double>(good_);
    } else if (jsonl_data > 0) {
      // Not one whole line within the sample: every record sampled is longer than the sample
      // could read (a file of a few records of tens of MB). Each file has at least one record;
      // the line ends the windows saw inside the files (not the one at each file's end, which
      // every file has whatever its lines) give the rest, scaled. Fewer records means longer
      // ones, and the memory of the run grows with the length of a record: so the count is
      // kept at its least, and the text at its most (all of the bytes).
      double files = 0;
      for (size_t s = 0; s < sources.size(); ++s)
        if (sources[s].problem.empty() && sources[s].kind == SourceKind::Jsonl && file_size(sources[s].path) > 0) files += 1;
      const uint64_t inside = newlines_ > file_ends_ ? newlines_ - file_ends_ : 0;
      const double records = files + jsonl_data * static_cast<double>(inside) / static_cast<double>(std::max<uint64_t>(window_bytes_, 1));
      out_.records += records;
      out_.sampled_bytes = std::max(out_.sampled_bytes, window_bytes_);  // looked at, if not parsed
      out_.text_bytes += std::min(jsonl_data, records * static_cast<double>(options_.max_doc_bytes));
    }
    if (out_.whole) {  // counts, not estimates
      out_.records = static_cast<double>(out_.sampled_records);
      out_.text_bytes = static_cast<double>(out_.sampled_text_bytes);
      out_.id_bytes = text_file_id_bytes_ + static_cast<double>(id_bytes_);
    }
  }

  const InputSet& inputs_;
  const ReaderOptions& options_;
  const uint64_t budget_;
  const std::function<void(std::string_view, std::string_view)>& on_record_;
  JsonlParser parser_;
  InputSample out_;
  // A source not read whole: its size, or its decompressed size by the ratio of the sample, or
  // as the file states it where that is plausible. A sample's ratio is that of the file's start,
  // which need not be the rest's: the crowded mix as one .zst file compresses 3x better in its
  // first 2 MB (documentation) than overall, and its size by the ratio came to 734 MB against
  // the 1,511 MB its frame header states. What a file states is taken unless it is less than the
  // sample read from it, or 4x away from the ratio's figure (several zstd frames or gzip
  // members: the first frame's or last member's size); gzip's ISIZE is modulo 2^32, so the
  // multiple of 4 GiB that brings it nearest the ratio's figure is added.
  double decompressed_size(size_t s, Compression c) const {
    const Source& src = inputs_.sources()[s];
    const double by_ratio = ratio_[static_cast<int>(c)].of(file_size(src.path));
    if (c == Compression::None) return by_ratio;
    const std::optional<uint64_t> stated = stated_decompressed_size(src.path);
    if (!stated) return by_ratio;
    double size = static_cast<double>(*stated);
    if (c == Compression::Gzip) {
      constexpr double k4G = 4294967296.0;
      size += std::max(0.0, std::round((by_ratio - size) / k4G)) * k4G;
    }
    const bool plausible = size >= static_cast<double>(read_[s]) && size * 4 >= by_ratio && size <= by_ratio * 4;
    return plausible ? size : by_ratio;
  }

  Ratio ratio_[kCompressionKinds];  // one per Compression value
  std::vector<double> whole_size_;                // per source: its decompressed size when read whole, or -1
  std::vector<uint64_t> read_;                    // per source: decompressed bytes the sample read from it
  std::vector<std::optional<Compression>> kind_;  // per source, once opened
  uint64_t window_bytes_ = 0, newlines_ = 0;      // JSONL: lines per byte over the windows
  uint64_t file_ends_ = 0;                        // windows that ended at their file's end
  uint64_t lines_ = 0, good_ = 0, line_bytes_ = 0, text_bytes_ = 0, id_bytes_ = 0;  // of their whole lines
  double text_file_id_bytes_ = 0;
};

}  // namespace

InputSample sample_inputs(const InputSet& inputs, const ReaderOptions& options, uint64_t budget,
                          const std::function<void(std::string_view id, std::string_view text)>& on_record) {
  return Sampler(inputs, options, budget, on_record).run();
}

}  // namespace neardup::io
