// The line buffer: the lines of one source's decompressed bytes viewed in place, read by read(2)
// into pooled buffers or mapped from a plain file a window at a time, with the table of mapped
// windows that a SIGBUS handler reads (mapped_input_at). Internal to the reader.
#pragma once

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


namespace neardup::io {

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
/// Registers a mapped window (null when the table is full: the window is then unnamed).
MappedSlot* register_window(const char* base, size_t bytes, const std::string& display) noexcept;
void unregister_window(MappedSlot* s) noexcept;
extern std::atomic<size_t> g_fail_map_in;  // fail_input_map_for_testing

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

/// Whether to map the plain file open as `fd` (file_bytes long) under MemoryMap::Auto (measured
/// once per process).
bool should_map(int fd, uint64_t file_bytes);

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

  /// `by_position`: the source is read at selected lines (seek), not in order. Under
  /// MemoryMap::Auto such a source is read into the buffer, not mapped: a mapped window costs a
  /// page fault for each run of selected lines in it and a teardown of its page tables, for the
  /// few lines it holds, where read(2) copies just the runs (see refill). Verifying 1 million
  /// short documents read 264,000 of them again, scattered: 0.60 s mapped, 0.51-0.55 s read.
  void open(std::unique_ptr<ByteStream> s, const std::string& display, bool by_position = false) {
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
      if (memory_map_ == MemoryMap::Always || (!by_position && should_map(fd, static_cast<uint64_t>(sb.st_size)))) {
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
    // Reading by position: no more than the selected lines need (seek's `until`: the end of the
    // run of selected lines close enough to be read at once), so that records scattered over a
    // large file do not each cost a full buffer.
    if (read_until > buf_base + end) want = std::min<uint64_t>(want, read_until - (buf_base + end));
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

}  // namespace neardup::io
