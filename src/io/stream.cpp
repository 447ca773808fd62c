#include "neardup/io/stream.h"
#include "io/retry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "neardup/error.h"

namespace neardup::io {
namespace {

constexpr size_t kRawBuffer = 1 << 18;

std::string sys_error(const std::string& what, const std::string& display) {
  return display + ": " + what + ": " + std::strerror(errno);
}

// Unbuffered file descriptor reader with a lookahead for the magic bytes.
//
// A large file read in order is asked for ahead of where it is read. The kernel's own readahead
// runs only a little ahead of read(2) (128 KiB by default) and, for a file read through a
// mapping, only at page faults on the faulting thread, so a file that is not in the page cache
// stalled the reading thread, and the workers behind it, at every buffer or window. `pairs` on
// the crowded mix read from the disk: mapped 1.93-3.93 s, asked for ahead 1.66-1.79 s; by read(2)
// 3.17-4.13 s, asked for ahead 2.14-2.29 s (BENCHMARKS.md).
class File {
 public:
  // How far past the bytes in hand a file is asked for, and how often (the size of a read
  // buffer or mapped window: one check per buffer when the file is cached).
  static constexpr uint64_t kAheadBytes = uint64_t{16} << 20;
  static constexpr uint64_t kAheadStep = uint64_t{4} << 20;

  File(const std::string& path, const std::string& display) : display_(display) {
    fd_ = io::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd_ < 0) throw IoError(sys_error("cannot open input", display) + "; check the path and its permissions");
    // Its size, to tell a file cut while it is read; not for files that hold no blocks, whose
    // size is not their length (sysfs states 4096 for a few bytes).
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_blocks > 0) open_size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  size_t read(char* buf, size_t n) {
    for (;;) {
      // A regular file with blocks is read by position, so that a seek is no system call: reading
      // a group's records again (verification) sought 20,000 times on 1 million short documents.
      const ssize_t r = by_position() ? ::pread(fd_, buf, n, static_cast<off_t>(consumed_)) : ::read(fd_, buf, n);
      // A regular file that ends before the size it had when opened was cut while it was read:
      // what follows would be a record cut short (a JSON error) or records missing.
      if (r == 0 && n > 0 && consumed_ < open_size_)
        throw IoError("the file shrank while it was read (" + std::to_string(open_size_) + " bytes when opened, " +
                          std::to_string(consumed_) + " there now); do not modify inputs during a run",
                      ErrorPlace{display_});
      if (r >= 0) {
        consumed_ += static_cast<uint64_t>(r);
        ask_ahead(consumed_);
        return static_cast<size_t>(r);
      }
      if (errno == EINTR) continue;
      if (errno == EISDIR)
        throw IoError("is a directory where a file was expected; pass the directory itself as an input", ErrorPlace{display_});
      throw IoError(sys_error("cannot read input", display_));
    }
  }
  // Reads until n bytes or end of file.
  size_t read_full(char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      const size_t r = read(buf + got, n - got);
      if (r == 0) break;
      got += r;
    }
    return got;
  }
  uint64_t consumed() const noexcept { return consumed_; }
  const std::string& display() const noexcept { return display_; }
  // Moves the read position n bytes forward (past the end is allowed: reads then return 0).
  // A file that is sought in is read by position (a few records of it): nothing is asked for.
  void seek_forward(uint64_t n) {
    if (!by_position() && ::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) throw IoError(sys_error("cannot seek in input", display_));
    consumed_ += n;
    ahead_from_ = UINT64_MAX;
  }
  int fd() const noexcept { return fd_; }

  // The bytes before `offset` are in hand and the file is read in order: the kernel is asked to
  // read the kAheadBytes after them (POSIX_FADV_WILLNEED starts the reads and returns), unless
  // they are cached already, which the page of their last byte tells (mincore on a mapping of
  // that page: no read is started; a read that must not wait, RWF_NOWAIT, starts one, and on a
  // fast disk once found the page it had just read, and the range was skipped). Files under
  // 1 MiB never get here: their first read is most of them.
  void ask_ahead(uint64_t offset) {
    if (offset < ahead_from_) return;
    ahead_from_ = offset + kAheadStep;
    if (size_ == 0) {
      struct stat st {};
      size_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : UINT64_MAX;
    }
    if (size_ == UINT64_MAX) return;  // a pipe or a device: nothing to ask for
    const uint64_t to = std::min(size_, offset + kAheadBytes), from = std::max(offset, asked_to_);
    if (to <= from) return;
    asked_to_ = to;
    if (!page_cached(to - 1)) ask_for_pages(fd_, from, to);
  }

 private:
  // Whether the page holding byte `at` is in the page cache, asked without reading it.
  bool page_cached(uint64_t at) const {
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    void* m = ::mmap(nullptr, page, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(at / page * page));
    if (m == MAP_FAILED) return false;
    unsigned char in = 0;
    const bool cached = ::mincore(m, page, &in) == 0 && (in & 1) != 0;
    ::munmap(m, page);
    return cached;
  }
  int fd_ = -1;
  uint64_t consumed_ = 0;
  uint64_t ahead_from_ = uint64_t{1} << 20;  // ask_ahead() once the bytes in hand reach this (never: UINT64_MAX)
  uint64_t asked_to_ = 0;             // the bytes before this were asked for
  uint64_t size_ = 0;                 // once looked up: the file's size (UINT64_MAX: not a regular file)
  uint64_t open_size_ = 0;            // a regular file's size when opened (0: not known)
  // A file whose size is known is read at consumed_ (pread), and a seek moves no file offset.
  bool by_position() const noexcept { return open_size_ > 0; }
  std::string display_;
};

// The first bytes of the file, read to sniff the magic, are replayed before the rest.
struct Prefix {
  char data[6];
  size_t size = 0;
  size_t pos = 0;
  size_t left() const noexcept { return size - pos; }
  size_t take(char* buf, size_t n) {
    size_t k = std::min(n, size - pos);
    std::memcpy(buf, data + pos, k);
    pos += k;
    return k;
  }
};

// Fills buf with the rest of the sniffed prefix, then file data; 0 only at the end of the file.
size_t refill(Prefix& prefix, File& file, char* buf, size_t n) {
  const size_t got = prefix.take(buf, n);
  return got + file.read(buf + got, n - got);
}

class PlainStream final : public ByteStream {
 public:
  PlainStream(std::unique_ptr<File> f, Prefix p) : file_(std::move(f)), prefix_(p) {}
  size_t read(char* buf, size_t n) override {
    if (n == 0) return 0;
    const size_t k = prefix_.take(buf, n);
    if (k > 0) return k;
    return file_->read(buf, n);
  }
  uint64_t raw_bytes_read() const noexcept override { return file_->consumed(); }
  Compression compression() const noexcept override { return Compression::None; }
  uint64_t skip(uint64_t n) override {
    char tmp[sizeof prefix_.data];
    const uint64_t from_prefix = prefix_.take(tmp, static_cast<size_t>(std::min<uint64_t>(n, sizeof tmp)));
    file_->seek_forward(n - from_prefix);
    return n;  // a plain file's length is checked by the reads that follow
  }
  int mappable_fd() const noexcept override { return file_->fd(); }
  void reading_at(uint64_t offset) override { file_->ask_ahead(offset); }

 private:
  std::unique_ptr<File> file_;
  Prefix prefix_;
};

class GzipStream final : public ByteStream {
 public:
  GzipStream(std::unique_ptr<File> f, Prefix p) : file_(std::move(f)), prefix_(p), in_(kRawBuffer) {
    std::memset(&zs_, 0, sizeof(zs_));
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) throw Error(ErrorCategory::Internal, "cannot initialise zlib", ErrorPlace{file_->display()});
  }
  ~GzipStream() override { inflateEnd(&zs_); }

  size_t read(char* buf, size_t n) override {
    if (n == 0 || done_) return 0;
    const auto want = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    zs_.next_out = reinterpret_cast<Bytef*>(buf);
    zs_.avail_out = want;
    while (zs_.avail_out == want) {  // until some output
      if (zs_.avail_in == 0) {
        const size_t got = refill(prefix_, *file_, in_.data(), in_.size());
        if (got == 0) {
          if (member_started_)
            throw FormatError("truncated gzip stream (the file ends inside compressed data); "
                              "re-download or re-create the file", ErrorPlace{file_->display()});
          done_ = true;
          break;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
        zs_.avail_in = static_cast<uInt>(got);
      }
      member_started_ = true;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Another gzip member may follow (concatenated .gz files are valid).
        member_started_ = false;
        inflateReset(&zs_);  // anything left in the file starts a new member
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw FormatError(std::string("corrupt gzip data (") + (zs_.msg ? zs_.msg : "zlib error") +
                          "); re-download or re-create the file", ErrorPlace{file_->display()});
      }
    }
    return static_cast<size_t>(reinterpret_cast<char*>(zs_.next_out) - buf);
  }
  // What went into the decompressor, not what waits in its input buffer.
  uint64_t raw_bytes_read() const noexcept override { return file_->consumed() - zs_.avail_in - prefix_.left(); }
  Compression compression() const noexcept override { return Compression::Gzip; }

 private:
  std::unique_ptr<File> file_;
  Prefix prefix_;
  std::vector<char> in_;
  z_stream zs_;
  bool member_started_ = false;
  bool done_ = false;
};

class ZstdStream final : public ByteStream {
 public:
  ZstdStream(std::unique_ptr<File> f, Prefix p) : file_(std::move(f)), prefix_(p), in_(ZSTD_DStreamInSize()) {
    ds_ = ZSTD_createDStream();
    if (!ds_) throw Error(ErrorCategory::Internal, "cannot initialise zstd", ErrorPlace{file_->display()});
    ZSTD_initDStream(ds_);
    ib_ = {in_.data(), 0, 0};
  }
  ~ZstdStream() override { ZSTD_freeDStream(ds_); }

  size_t read(char* buf, size_t n) override {
    if (n == 0 || done_) return 0;
    ZSTD_outBuffer ob{buf, n, 0};
    while (ob.pos == 0) {
      if (ib_.pos == ib_.size) {
        const size_t got = refill(prefix_, *file_, in_.data(), in_.size());
        if (got == 0) {
          if (frame_open_)
            throw FormatError("truncated zstd stream (the file ends inside a frame); "
                              "re-download or re-create the file", ErrorPlace{file_->display()});
          done_ = true;
          break;
        }
        ib_ = {in_.data(), got, 0};
      }
      const size_t rc = ZSTD_decompressStream(ds_, &ob, &ib_);
      if (ZSTD_isError(rc))
        throw FormatError(std::string("corrupt zstd data (") + ZSTD_getErrorName(rc) +
                          "); re-download or re-create the file", ErrorPlace{file_->display()});
      frame_open_ = rc != 0;
    }
    return ob.pos;
  }
  uint64_t raw_bytes_read() const noexcept override { return file_->consumed() - (ib_.size - ib_.pos) - prefix_.left(); }
  Compression compression() const noexcept override { return Compression::Zstd; }

 private:
  std::unique_ptr<File> file_;
  Prefix prefix_;
  std::vector<char> in_;
  ZSTD_DStream* ds_ = nullptr;
  ZSTD_inBuffer ib_;
  bool frame_open_ = false;
  bool done_ = false;
};


// xz (liblzma's .xz container; concatenated streams are valid, as for xz itself).
class XzStream final : public ByteStream {
 public:
  XzStream(std::unique_ptr<File> f, Prefix p) : file_(std::move(f)), prefix_(p), in_(kRawBuffer) {
    if (lzma_stream_decoder(&ls_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
      throw Error(ErrorCategory::Internal, "cannot initialise liblzma", ErrorPlace{file_->display()});
  }
  ~XzStream() override { lzma_end(&ls_); }

  size_t read(char* buf, size_t n) override {
    if (n == 0 || done_) return 0;
    ls_.next_out = reinterpret_cast<uint8_t*>(buf);
    ls_.avail_out = n;
    while (ls_.avail_out == n) {
      lzma_action action = LZMA_RUN;
      if (ls_.avail_in == 0 && !eof_) {
        const size_t got = refill(prefix_, *file_, in_.data(), in_.size());
        ls_.next_in = reinterpret_cast<const uint8_t*>(in_.data());
        ls_.avail_in = got;
        eof_ = got == 0;
      }
      if (eof_) action = LZMA_FINISH;
      const lzma_ret rc = lzma_code(&ls_, action);
      if (rc == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (rc == LZMA_BUF_ERROR && eof_)
        throw FormatError("truncated xz stream (the file ends inside compressed data); re-download or re-create the file", ErrorPlace{file_->display()});
      if (rc != LZMA_OK)
        throw FormatError(std::string("corrupt xz data (liblzma error ") + std::to_string(static_cast<int>(rc)) +
                          "); re-download or re-create the file", ErrorPlace{file_->display()});
    }
    return n - ls_.avail_out;
  }
  uint64_t raw_bytes_read() const noexcept override { return file_->consumed() - ls_.avail_in - prefix_.left(); }
  Compression compression() const noexcept override { return Compression::Xz; }

 private:
  std::unique_ptr<File> file_;
  Prefix prefix_;
  std::vector<char> in_;
  lzma_stream ls_ = LZMA_STREAM_INIT;
  bool eof_ = false;
  bool done_ = false;
};

// bzip2 (libbz2; concatenated streams, as pbzip2 writes them, are valid).
class Bzip2Stream final : public ByteStream {
 public:
  Bzip2Stream(std::unique_ptr<File> f, Prefix p) : file_(std::move(f)), prefix_(p), in_(kRawBuffer) { init(); }
  ~Bzip2Stream() override { BZ2_bzDecompressEnd(&bz_); }

  size_t read(char* buf, size_t n) override {
    if (n == 0 || done_) return 0;
    const auto want = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    bz_.next_out = buf;
    bz_.avail_out = want;
    while (bz_.avail_out == want) {
      if (bz_.avail_in == 0) {
        const size_t got = refill(prefix_, *file_, in_.data(), in_.size());
        if (got == 0) {
          if (stream_started_)
            throw FormatError("truncated bzip2 stream (the file ends inside compressed data); "
                              "re-download or re-create the file", ErrorPlace{file_->display()});
          done_ = true;
          break;
        }
        bz_.next_in = in_.data();
        bz_.avail_in = static_cast<unsigned>(got);
      }
      stream_started_ = true;
      const int rc = BZ2_bzDecompress(&bz_);
      if (rc == BZ_STREAM_END) {
        // Another stream may follow: a new decoder takes over where this one stopped.
        char* next_in = bz_.next_in;
        char* next_out = bz_.next_out;
        const unsigned avail_in = bz_.avail_in, avail_out = bz_.avail_out;
        BZ2_bzDecompressEnd(&bz_);
        init();
        bz_.next_in = next_in;
        bz_.avail_in = avail_in;
        bz_.next_out = next_out;
        bz_.avail_out = avail_out;
        stream_started_ = false;
        continue;
      }
      if (rc != BZ_OK)
        throw FormatError(std::string("corrupt bzip2 data (libbz2 error ") + std::to_string(rc) +
                          "); re-download or re-create the file", ErrorPlace{file_->display()});
    }
    return want - bz_.avail_out;
  }
  uint64_t raw_bytes_read() const noexcept override { return file_->consumed() - bz_.avail_in - prefix_.left(); }
  Compression compression() const noexcept override { return Compression::Bzip2; }

 private:
  void init() {
    std::memset(&bz_, 0, sizeof bz_);
    if (BZ2_bzDecompressInit(&bz_, 0, 0) != BZ_OK) throw Error(ErrorCategory::Internal, "cannot initialise libbz2", ErrorPlace{file_->display()});
  }
  std::unique_ptr<File> file_;
  Prefix prefix_;
  std::vector<char> in_;
  bz_stream bz_;
  bool stream_started_ = false;
  bool done_ = false;
};

}  // namespace

const char* compression_name(Compression c) noexcept {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Gzip: return "gzip";
    case Compression::Zstd: return "zstd";
    case Compression::Xz: return "xz";
    case Compression::Bzip2: return "bzip2";
  }
  return "?";
}

namespace {
std::atomic<uint64_t> g_pages_asked{0};  // pages_asked_for_testing
}  // namespace

void ask_for_pages(int fd, uint64_t from, uint64_t to) noexcept {
  constexpr uint64_t kAdvice = uint64_t{128} << 10;
  g_pages_asked.fetch_add(1, std::memory_order_relaxed);
  for (uint64_t at = from; at < to; at += kAdvice)
    ::posix_fadvise(fd, static_cast<off_t>(at), static_cast<off_t>(std::min(kAdvice, to - at)), POSIX_FADV_WILLNEED);
}

uint64_t ByteStream::skip(uint64_t n) {
  std::vector<char> tmp(static_cast<size_t>(std::min<uint64_t>(n, 1 << 16)));
  uint64_t done = 0;
  while (done < n) {
    const size_t got = read(tmp.data(), static_cast<size_t>(std::min<uint64_t>(n - done, tmp.size())));
    if (got == 0) break;
    done += got;
  }
  return done;
}

Compression compression_of_magic(const unsigned char* m, size_t n) noexcept {
  if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) return Compression::Gzip;
  if (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) return Compression::Zstd;
  if (n >= 6 && std::memcmp(m, "\xFD" "7zXZ\0", 6) == 0) return Compression::Xz;
  if (n >= 4 && m[0] == 'B' && m[1] == 'Z' && m[2] == 'h' && m[3] >= '1' && m[3] <= '9') return Compression::Bzip2;
  return Compression::None;
}

Compression compression_of_name(std::string_view name) noexcept {
  if (name.ends_with(".gz")) return Compression::Gzip;
  if (name.ends_with(".zst") || name.ends_with(".zstd")) return Compression::Zstd;
  if (name.ends_with(".xz")) return Compression::Xz;
  if (name.ends_with(".bz2")) return Compression::Bzip2;
  return Compression::None;
}

std::unique_ptr<ByteStream> open_stream(const std::string& path, const std::string& display) {
  auto file = std::make_unique<File>(path, display);
  Prefix p;
  p.size = file->read_full(p.data, sizeof(p.data));
  switch (compression_of_magic(reinterpret_cast<const unsigned char*>(p.data), p.size)) {
    case Compression::Gzip: return std::make_unique<GzipStream>(std::move(file), p);
    case Compression::Zstd: return std::make_unique<ZstdStream>(std::move(file), p);
    case Compression::Xz: return std::make_unique<XzStream>(std::move(file), p);
    case Compression::Bzip2: return std::make_unique<Bzip2Stream>(std::move(file), p);
    case Compression::None: break;
  }
  return std::make_unique<PlainStream>(std::move(file), p);
}

std::optional<uint64_t> stated_decompressed_size(const std::string& path) {
  const int fd = io::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) return std::nullopt;
  struct stat st {};
  unsigned char b[18] = {};  // the longest zstd frame header (ZSTD_FRAMEHEADERSIZE_MAX)
  std::optional<uint64_t> size;
  const ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::pread(fd, b, sizeof b, 0) : -1;
  const Compression c = n > 0 ? compression_of_magic(b, static_cast<size_t>(n)) : Compression::None;
  if (c == Compression::Zstd) {
    const unsigned long long z = ZSTD_getFrameContentSize(b, static_cast<size_t>(n));
    if (z != ZSTD_CONTENTSIZE_UNKNOWN && z != ZSTD_CONTENTSIZE_ERROR) size = static_cast<uint64_t>(z);
  } else if (c == Compression::Gzip && st.st_size >= 18 && ::pread(fd, b, 4, st.st_size - 4) == 4) {
    size = uint64_t{b[0]} | uint64_t{b[1]} << 8 | uint64_t{b[2]} << 16 | uint64_t{b[3]} << 24;
  }
  ::close(fd);
  return size;
}

bool read_all_capped(const std::string& path, const std::string& display, uint64_t max_bytes, std::string& out) {
  auto s = open_stream(path, display);
  out.clear();
  size_t pos = 0;
  for (;;) {
    if (pos > max_bytes) {
      out.clear();
      out.shrink_to_fit();
      return false;
    }
    if (out.size() - pos < (1 << 16)) out.resize(std::max<size_t>(out.size() * 2, 1 << 17));
    const size_t room = static_cast<size_t>(std::min<uint64_t>(out.size() - pos, max_bytes - pos + (1 << 16)));
    const size_t got = s->read(out.data() + pos, room);
    if (got == 0) break;
    pos += got;
  }
  out.resize(pos);
  return true;
}

std::string read_all(const std::string& path, const std::string& display) {
  std::string out;
  read_all_capped(path, display, UINT64_MAX - (1 << 17), out);
  return out;
}

}  // namespace neardup::io

namespace neardup {
uint64_t pages_asked_for_testing() noexcept { return io::g_pages_asked.load(std::memory_order_relaxed); }
}  // namespace neardup
