// Copying byte ranges of a source to an output (RangeAppender, append_ranges): a plain file by
// position, a compressed one decompressed once and its gaps skipped, a scratch copy read with
// O_DIRECT.
#include "io/range_appender.h"
#include "io/retry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "internal/big_array.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"

namespace neardup::io {

// A plain file read with O_DIRECT, 4 MiB at a time from block boundaries, into a buffer of its
// own (RangeAppender's read_directly): no page cache page is taken for bytes read once.
class DirectReader {
 public:
  static std::unique_ptr<DirectReader> open(const std::string& path) {
    const int fd = retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC); });
    if (fd < 0) return nullptr;
    struct stat st {};
    void* b = MAP_FAILED;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (b = internal::map_huge_pages(kBytes)) == MAP_FAILED) {
      ::close(fd);
      return nullptr;
    }
    auto r = std::unique_ptr<DirectReader>(new DirectReader());
    r->fd_ = fd;
    r->size_ = static_cast<uint64_t>(st.st_size);
    r->buf_ = static_cast<char*>(b);
    return r;
  }
  ~DirectReader() {
    ::munmap(buf_, internal::huge_pages_of(kBytes));
    ::close(fd_);
  }
  DirectReader(const DirectReader&) = delete;
  DirectReader& operator=(const DirectReader&) = delete;
  // Up to `max` bytes from `offset` on, in the buffer (valid until the next call); empty at the
  // file's end. A read the system refuses directly throws IoError.
  std::string_view view(uint64_t offset, uint64_t max, const std::string& display) {
    if (offset >= size_) return {};
    if (offset < at_ || offset >= at_ + have_) {
      at_ = offset / kAlign * kAlign;
      have_ = 0;
      for (;;) {
        const ssize_t r = ::pread(fd_, buf_, kBytes, static_cast<off_t>(at_));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw IoError(std::string("cannot read input: ") + std::strerror(errno), ErrorPlace{display});
        have_ = static_cast<uint64_t>(r);
        break;
      }
      if (offset >= at_ + have_) return {};
    }
    return {buf_ + (offset - at_), static_cast<size_t>(std::min(max, at_ + have_ - offset))};
  }

 private:
  DirectReader() = default;
  static constexpr size_t kBytes = kDirectBufferBytes, kAlign = 4096;
  int fd_ = -1;
  uint64_t size_ = 0, at_ = 0, have_ = 0;
  char* buf_ = nullptr;
};

RangeAppender::RangeAppender(const std::string& path, const std::string& display, bool read_directly) : display_(display) {
  if (read_directly && (direct_in_ = DirectReader::open(path))) return;
  stream_ = open_stream(path, display);
  if (stream_->compression() == Compression::None) {
    stream_.reset();
    fd_ = retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd_ < 0) throw IoError(std::string("cannot open input: ") + std::strerror(errno), ErrorPlace{display});
  } else {
    buf_.resize(1 << 20);
  }
}

RangeAppender::~RangeAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void RangeAppender::short_of(uint64_t missing, const ByteRange& r, AtomicFile& out) {
  if (missing == 1 && !ended_) {
    out.put('\n');  // the last line had no newline (a range after it finds the data ended)
    ended_ = true;
    return;
  }
  throw IoError(std::string("ends before byte ") + std::to_string(r.offset + r.length) +
                "; the input changed while neardup was running (do not modify inputs during a run)", ErrorPlace{display_});
}

// The ranges from ranges[0] on that lie within kWindowBytes of its start, each of at most
// kWindowRange bytes and at most kWindowGap after the one before: how many (1 if only the first).
size_t RangeAppender::window_of(std::span<const ByteRange> ranges) {
  const ByteRange& first = ranges[0];
  if (first.length > kWindowRange) return 1;
  size_t j = 1;
  for (uint64_t end = first.offset + first.length; j < ranges.size(); ++j) {
    const ByteRange& r = ranges[j];
    if (r.offset < end || r.offset - end > kWindowGap || r.length > kWindowRange || r.offset + r.length - first.offset > kWindowBytes) break;
    end = r.offset + r.length;
  }
  return j;
}

// The ranges of one window (window_of) read from the file at once, gaps and all, and appended from
// memory. Returns how many were appended whole: fewer where the file ends early (the caller then
// goes on range by range, which tells a last line without its newline from a changed input).
size_t RangeAppender::append_window(std::span<const ByteRange> ranges, AtomicFile& out) {
  out.write_directly();  // as append_from would
  const uint64_t begin = ranges.front().offset, bytes = ranges.back().offset + ranges.back().length - begin;
  if (buf_.size() < kWindowBytes) buf_.resize(kWindowBytes);
  const ssize_t read = pread_upto(fd_, buf_.data(), static_cast<size_t>(bytes), begin);
  if (read < 0) throw IoError(std::string("cannot read input: ") + std::strerror(errno), ErrorPlace{display_});
  const uint64_t got = static_cast<uint64_t>(read);
  size_t k = 0;
  for (; k < ranges.size() && ranges[k].offset + ranges[k].length <= begin + got; ++k) {
    out.write(std::string_view(buf_.data() + (ranges[k].offset - begin), ranges[k].length));
    pos_ = ranges[k].offset + ranges[k].length;
  }
  return k;
}

void RangeAppender::append(std::span<const ByteRange> ranges, AtomicFile& out) {
  // Decompressed records are copied as a plain file's are (append_from): directly to the disk on
  // ext4. Through the page cache, `dedup` of the crowded mix as one .zst file spent 1.4 s of its
  // 6.7 s in the copies into it.
  if ((stream_ || direct_in_) && !ranges.empty()) out.write_directly();
  for (size_t i = 0; i < ranges.size(); ++i) {
    const ByteRange& r = ranges[i];
    if (r.offset < pos_) throw UsageError("RangeAppender: ranges out of order");
    if (ended_) short_of(r.length + 2, r, out);
    if (direct_in_) {
      uint64_t at = r.offset, left = r.length;
      for (std::string_view v; left > 0 && !(v = direct_in_->view(at, left, display_)).empty(); at += v.size(), left -= v.size())
        out.write(v);
      pos_ = at;
      if (left > 0) short_of(left, r, out);
      continue;
    }
    if (fd_ >= 0) {
      // Small ranges close together (the kept lines of short records, a removed one between
      // them) are read a window at a time, their gaps with them: a call per range took the dedup
      // writer of 1 million short documents in clusters 205,000 reads (0.4 s of system time).
      if (const size_t w = window_of(ranges.subspan(i)); w > 1) {
        if (const size_t k = append_window(ranges.subspan(i, w), out); k > 0) {
          i += k - 1;
          continue;
        }
      }
      const uint64_t got = out.append_from(fd_, r.offset, r.length, display_);
      pos_ = r.offset + got;
      if (got < r.length) short_of(r.length - got, r, out);
      continue;
    }
    if (stream_->skip(r.offset - pos_) != r.offset - pos_) short_of(r.length + 2, r, out);
    pos_ = r.offset;
    uint64_t left = r.length;
    while (left > 0) {
      const size_t got = stream_->read(buf_.data(), static_cast<size_t>(std::min<uint64_t>(left, buf_.size())));
      if (got == 0) break;
      out.write(std::string_view(buf_.data(), got));
      left -= got;
      pos_ += got;
    }
    if (left > 0) short_of(left, r, out);
  }
}

void append_ranges(const std::string& path, const std::string& display, std::span<const ByteRange> ranges, AtomicFile& out,
                   bool read_directly) {
  if (ranges.empty()) return;
  RangeAppender(path, display, read_directly).append(ranges, out);
}

}  // namespace neardup::io
