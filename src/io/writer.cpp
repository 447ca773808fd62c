#include "neardup/io/writer.h"
#include "io/fd_stream.h"
#include "io/paths.h"
#include "io/retry.h"
#include "io/range_appender.h"
#include "io/sync_behind.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "internal/big_array.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/thread_pool.h"

namespace neardup::io {

namespace {

// The list of temporary files. A slot goes free -> writing -> listed; the signal handler reads
// only listed slots, whose path is complete.
constexpr int kSlots = 128;
constexpr size_t kPathMax = 4096;
enum SlotState : int { kFree = 0, kWriting = 1, kListed = 2 };
struct TempSlot {
  std::atomic<int> state{kFree};
  char path[kPathMax];
};
TempSlot g_temp_slots[kSlots];

}  // namespace

int register_temporary_file(const std::string& path) noexcept {
  if (path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_temp_slots[i].state.compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) continue;
    std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
    g_temp_slots[i].state.store(kListed, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_temporary_file(int slot) noexcept {
  if (slot >= 0 && slot < kSlots) g_temp_slots[slot].state.store(kFree, std::memory_order_release);
}

void remove_temporary_files() noexcept {
  for (TempSlot& s : g_temp_slots)
    if (s.state.load(std::memory_order_acquire) == kListed) ::unlink(s.path);
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Gives the unnamed file open as `fd` a name: `tmpl` with its last six characters (XXXXXX) made
// unique; the name, or empty (errno set) if it cannot.
std::string link_unnamed(int fd, const std::string& tmpl) {
  static std::atomic<uint64_t> counter{0};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::string self = descriptor_path(fd);
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint64_t r = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull ^
                 (static_cast<uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1) * 0xD1B54A32D192ED03ull;
    std::string name = tmpl;
    for (size_t i = name.size() - 6; i < name.size(); ++i, r /= 62) name[i] = kChars[r % 62];
    if (retry_eintr([&] { return ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW); }) == 0) return name;
    if (errno != EEXIST) return {};
  }
  return {};
}

// Follows a chain of symbolic links to the path it finally names (which may not exist yet).
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 4096) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) return p;
    std::string to(buf.data(), static_cast<size_t>(n));
    p = to.starts_with('/') ? to : dir_of(p) + "/" + to;
  }
  throw IoError("too many levels of symbolic links; point the output at a file", ErrorPlace{path});
}

// The descriptor a path names directly (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N),
// or -1. These are written through the descriptor: following their link would find a pipe,
// a terminal or the file the shell redirected to, none of which may be renamed over.
int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix)) continue;
    const std::string_view num = std::string_view(path).substr(prefix.size());
    if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string_view::npos) return -1;
    return std::stoi(std::string(num));
  }
  return -1;
}

}  // namespace

std::string output_compression_of(const std::string& path) {
  if (ends_with(path, ".gz")) return "gzip";
  if (ends_with(path, ".zst") || ends_with(path, ".zstd")) return "zstd";
  for (std::string_view c : {".xz", ".bz2", ".lz4", ".br", ".lzma", ".Z"})
    if (ends_with(path, c))
      throw UsageError(std::string("neardup cannot write ") + std::string(c.substr(1)) +
                       " compression (it reads it); name the output .gz or .zst, or without a compression suffix", ErrorPlace{path});
  return "";
}

// Compresses what is written before it reaches the file.
struct AtomicFile::Encoder {
  bool gzip = false;
  z_stream zs{};
  ZSTD_CCtx* zc = nullptr;
  std::vector<char> out = std::vector<char>(1 << 18);

  explicit Encoder(bool use_gzip) : gzip(use_gzip) {
    if (gzip) {
      if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw Error("cannot initialise zlib");
    } else {
      zc = ZSTD_createCCtx();
      if (!zc) throw Error("cannot initialise zstd");
      ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, ZSTD_CLEVEL_DEFAULT);
      ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1);
    }
  }
  ~Encoder() {
    if (gzip) deflateEnd(&zs);
    if (zc) ZSTD_freeCCtx(zc);
  }
  // Compresses `data` (finishing the stream when `last`), handing the output to `sink`.
  template <class Sink>
  void feed(std::string_view data, bool last, Sink&& sink) {
    if (gzip) {
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      zs.avail_in = static_cast<uInt>(data.size());
      for (;;) {
        zs.next_out = reinterpret_cast<Bytef*>(out.data());
        zs.avail_out = static_cast<uInt>(out.size());
        const int rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR) throw Error("zlib: cannot compress");
        sink(out.data(), out.size() - zs.avail_out);
        if (last ? rc == Z_STREAM_END : (zs.avail_in == 0 && zs.avail_out != 0)) return;
      }
    }
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    for (;;) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      const size_t rc = ZSTD_compressStream2(zc, &ob, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(rc)) throw Error(std::string("zstd: cannot compress: ") + ZSTD_getErrorName(rc));
      sink(out.data(), ob.pos);
      if (last ? rc == 0 : in.pos == in.size) return;
    }
  }
};

namespace {

IoError output_error(const char* what, int e, const std::string& path, bool direct) {
  return IoError(std::string(what) + ": " + std::strerror(e) +
                     (e == ENOSPC || e == EDQUOT ? "; free some space and run again"
                      : e == EFBIG               ? "; the file size limit (ulimit -f) or the file system's was reached"
                                                 : "") +
                     (direct ? "" : " (the previous file, if any, is untouched)"),
                 ErrorPlace{path});
}

// The block on which a clone (reflink) of `fd`'s data must start: the file system's preferred I/O
// size where it is a power of two (Btrfs and XFS give their block), else 4 KiB.
uint64_t clone_block(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_blksize >= 512 && st.st_blksize <= (1 << 20) && std::has_single_bit(static_cast<uint64_t>(st.st_blksize)))
    return static_cast<uint64_t>(st.st_blksize);
  return 4096;
}

// The bytes of a copy to make before the next: up to `want`, and where the input's and the
// output's offsets are congruent modulo the block but not on a boundary, only up to the next
// boundary. copy_file_range is served by a clone where the file system has reflinks (Btrfs,
// XFS) and both offsets are on a block boundary; the kernel then shortens the range to whole
// blocks and copies the rest. So every later piece of a run of kept records (which a dedup's
// writer appends in several calls, as its decisions come) starts aligned and can be cloned.
size_t clone_step(uint64_t in_at, uint64_t out_at, size_t want, uint64_t block) {
  if (block == 0) return want;
  const uint64_t in_rem = in_at % block, out_rem = out_at % block;
  if (in_rem != 0 && in_rem == out_rem) return static_cast<size_t>(std::min<uint64_t>(want, block - in_rem));
  return want;
}

// The direct writes' buffers no output holds, kept for the next (up to 2 x kDirectBuffers):
// outputs written in turn (one per input) take the same memory rather than fresh pages.
class DirectBufferPool {
 public:
  static DirectBufferPool& get() {
    static DirectBufferPool* pool = new DirectBufferPool();  // never deleted: outputs may outlive statics
    return *pool;
  }
  char* take() {
    {
      std::lock_guard lock(m_);
      if (!free_.empty()) {
        char* b = free_.back();
        free_.pop_back();
        return b;
      }
    }
    // On huge pages, whatever the heap's pages: a direct write pins the pages of its buffer,
    // 1,024 of them for 4 MiB of small pages, 2 of them here. From a heap of small pages, the
    // direct writes of the crowded mix's 1.29 GB of kept records took 0.13-0.14 s of system time,
    // on huge pages 0.02-0.05 s.
    void* b = internal::map_huge_pages(kDirectBufferBytes);
    if (b == MAP_FAILED) throw std::bad_alloc();
    return static_cast<char*>(b);
  }
  void give(char* b) {
    std::lock_guard lock(m_);
    if (free_.size() < 2 * kDirectBuffers)
      free_.push_back(b);
    else
      ::munmap(b, internal::huge_pages_of(kDirectBufferBytes));
  }

 private:
  std::mutex m_;
  std::vector<char*> free_;
};

}  // namespace

// The bytes of an output on ext4 from its first copied range on: gathered in aligned buffers of
// 4 MiB and written with O_DIRECT by two threads while the next buffer fills, the last block
// padded and the file cut to its length at the end. A buffered write allocates a page cache page
// for every 4 KiB and the kernel writes it back later; on this project's 2-core VM, where a fresh
// page costs the host's work, copy_file_range of 1.29 GB with its fsync took 2.0-2.8 s and as
// much CPU, the same bytes read into reused buffers and written directly 0.6 s and 0.4 s of CPU
// (bench/write_floor.py). The output is then not in the page cache, which a job that does not
// read it again has no use for. File systems with reflinks (Btrfs, XFS) keep copy_file_range,
// which clones there.
struct AtomicFile::Direct {
  static constexpr size_t kBuffer = kDirectBufferBytes, kAlign = 4096;
  size_t max_owned = kDirectBuffers;  // AtomicFile::limit_direct_buffers
  size_t used = kBuffer;              // of each buffer (its first bytes: the pages touched)
  int fd = -1;       // the temporary file opened again with O_DIRECT
  int plain_fd = -1;  // and as it was (where a direct write is refused)
  std::string path;
  size_t owned = 0;            // buffers taken from the pool (given back when the output parks or ends)
  std::vector<char*> idle;
  char* cur = nullptr;  // being filled: the bytes from out_at on
  size_t fill = 0;
  uint64_t out_at = 0;  // always a multiple of kAlign
  std::string tail;     // the bytes of an unfinished block while parked without buffers
  std::mutex m;
  std::condition_variable cv;
  size_t running = 0;
  std::exception_ptr error;

  ~Direct() {
    wait();
    if (cur) idle.push_back(cur);
    for (char* b : idle) DirectBufferPool::get().give(b);
    if (fd >= 0) ::close(fd);
  }
  void rethrow() {
    std::lock_guard lock(m);
    if (error) std::rethrow_exception(error);
  }
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return running == 0; });
  }
  // Room in the current buffer, taking one (and the parked block's bytes) first if needed.
  std::span<char> room() {
    if (cur && fill >= used) hand_over(fill / kAlign * kAlign);
    if (!cur) {
      std::unique_lock lock(m);
      if (idle.empty() && owned < max_owned) {
        idle.push_back(DirectBufferPool::get().take());
        ++owned;
      }
      cv.wait(lock, [&] { return !idle.empty(); });
      cur = idle.back();
      idle.pop_back();
      lock.unlock();
      std::memcpy(cur, tail.data(), tail.size());
      fill = tail.size();
      tail.clear();
    }
    return {cur + fill, used - fill};  // fill < used: a buffer that reached it was handed over
  }
  void put(const char* p, size_t n) {
    while (n > 0) {
      const std::span<char> r = room();
      const size_t k = std::min(n, r.size());
      std::memcpy(r.data(), p, k);
      fill += k;
      p += k;
      n -= k;
    }
  }
  // Writes the first `bytes` of the current buffer (a multiple of kAlign) on a thread; what
  // follows them (less than a block) starts the next buffer.
  void hand_over(size_t bytes) {
    rethrow();
    tail.assign(cur + bytes, fill - bytes);
    char* b = cur;
    const uint64_t at = out_at;
    out_at += bytes;
    cur = nullptr;
    fill = 0;
    std::unique_lock lock(m);
    if (bytes == 0) {  // less than a block gathered: nothing to write yet
      idle.push_back(b);
      return;
    }
    ++running;
    lock.unlock();
    ThreadPool& io = ThreadPool::io();
    if (io.workers() == 0) {  // a child process forked from one that had them
      write(b, at, bytes);
      return;
    }
    try {
      io.submit([this, b, at, bytes] { write(b, at, bytes); });
    } catch (...) {  // not queued (no memory): nothing will write it
      lock.lock();
      --running;
      idle.push_back(b);
      cv.notify_all();
      throw;
    }
  }
  void write(char* b, uint64_t at, size_t bytes) noexcept {
    try {
      for (size_t done = 0; done < bytes;) {
        ssize_t w = ::pwrite(fd, b + done, bytes - done, static_cast<off_t>(at + done));
        if (w < 0 && errno == EINVAL)  // refused directly (alignment): through the page cache
          w = ::pwrite(plain_fd, b + done, bytes - done, static_cast<off_t>(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw output_error("cannot write output", w < 0 ? errno : EIO, path, false);
        done += static_cast<size_t>(w);
      }
    } catch (...) {
      std::lock_guard lock(m);
      if (!error) error = std::current_exception();
    }
    std::lock_guard lock(m);
    idle.push_back(b);
    --running;
    cv.notify_all();
  }
  // Writes the whole blocks gathered, keeps the unfinished one's bytes and gives the buffers
  // back, so that an output written in turn with others holds no memory while it waits.
  void park() {
    if (cur) hand_over(fill / kAlign * kAlign);
    wait();
    for (char* b : idle) DirectBufferPool::get().give(b);
    idle.clear();
    owned = 0;
    rethrow();
  }
  // Writes everything, the last block padded with zeros, and cuts the file to `length`.
  void finish(uint64_t length) {
    if (cur || !tail.empty()) {
      room();
      const size_t padded = (fill + kAlign - 1) / kAlign * kAlign;
      std::memset(cur + fill, 0, padded - fill);
      fill = padded;
      hand_over(padded);
    }
    park();
    if (retry_eintr([&] { return ::ftruncate(plain_fd, static_cast<off_t>(length)); }) != 0) throw output_error("cannot write output", errno, path, false);
  }
};

namespace {

// Why a temporary file could not be made in `dir` (errno `e`), with what to do: the directory is
// missing, not writable, or on a file system that makes no new files (/proc, /sys), where ENOENT
// would read as if the file itself were missing.
std::string why_no_temporary(const std::string& dir, int e) {
  struct stat st {};
  const std::string shown = dir.empty() ? "." : dir;
  if (::stat(shown.c_str(), &st) != 0) return "cannot create output file: the directory " + shown + " does not exist; create it first";
  if (!S_ISDIR(st.st_mode)) return "cannot create output file: " + shown + " is not a directory";
  if (e == EACCES || e == EPERM || e == EROFS)
    return std::string("cannot create output file: ") + std::strerror(e) + " in " + shown + "; choose a writable directory";
  if (e == ENOENT)
    return "cannot create output file: " + shown + " takes no new files (a virtual file system such as /proc or /sys); write the "
           "output elsewhere";
  return std::string("cannot create output file: ") + std::strerror(e) + "; check that " + shown + " is writable and has room";
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path, OutputCompression compression) : path_(path) {
  if (compression == OutputCompression::ByName) {
    const std::string c = output_compression_of(path);
    if (!c.empty()) encoder_ = std::make_unique<Encoder>(c == "gzip");
  }
  if (path.empty()) throw UsageError("an output path is empty; name a file, or - for standard output");
  if (path == "-") {
    stdout_ = direct_ = true;
    f_ = stdout;
    fd_ = STDOUT_FILENO;
    return;
  }
  int fd = -1;
  if (const int named = named_descriptor(path); named >= 0) {
    fd = ::fcntl(named, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) throw IoError(std::string("cannot write: ") + std::strerror(errno) + " (is the descriptor open?)", ErrorPlace{path});
    direct_ = true;
  } else {
    target_ = follow_links(path);
    struct stat st;
    const bool exists = ::stat(target_.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
      throw IoError("is a directory; name a file for the output", ErrorPlace{path});
    if (exists && !S_ISREG(st.st_mode)) {
      // A device, a FIFO or a socket: written in place (a FIFO blocks here until it has a reader).
      fd = retry_eintr([&] { return ::open(target_.c_str(), O_WRONLY | O_CLOEXEC); });
      if (fd < 0) throw IoError(std::string("cannot open for writing: ") + std::strerror(errno), ErrorPlace{path});
      direct_ = true;
    } else {
      const size_t slash = target_.rfind('/');
      temp_template_ = (slash == std::string::npos ? std::string() : target_.substr(0, slash + 1)) + "." +
                       (slash == std::string::npos ? target_ : target_.substr(slash + 1)) + ".neardup-tmp-XXXXXX";
      fd = open_unnamed(dir_of(target_));
      if (fd < 0) {
        fd = retry_eintr([&] {
          temp_ = temp_template_;
          return ::mkstemp(temp_.data());
        });
        if (fd < 0) throw IoError(why_no_temporary(dir_of(target_), errno), ErrorPlace{path});
        temp_slot_ = register_temporary_file(temp_);
      }
      if (exists) {
        // The replaced file's permissions (and owner, when allowed) carry over to the new one.
        ::fchmod(fd, st.st_mode & 07777);
        [[maybe_unused]] const int ignored = ::fchown(fd, st.st_uid, st.st_gid);
      } else {
        // Created 0600 (mkstemp, O_TMPFILE); give a new file the usual permissions (umask applies).
        const mode_t mask = ::umask(0);
        ::umask(mask);
        ::fchmod(fd, 0666 & ~mask);
      }
    }
  }
  f_ = open_stream(fd);
  if (!f_) {
    const int e = errno;
    ::close(fd);
    if (!temp_.empty()) ::unlink(temp_.c_str());
    unregister_temporary_file(temp_slot_);
    throw IoError(std::string("cannot open output file: ") + std::strerror(e), ErrorPlace{path});
  }
  fd_ = fd;
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  if (!direct_) sync_behind_ = std::make_unique<SyncBehind>(fd_);
}

AtomicFile::~AtomicFile() {
  direct_io_.reset();  // waits for its writes
  sync_behind_.reset();  // and its sync
  if (stdout_) return;
  if (f_) std::fclose(f_);
  // Not moved into place (or put back: commit_together): the temporary file goes.
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  unregister_temporary_file(temp_slot_);
}

void AtomicFile::fail(const char* what) { throw output_error(what, errno, path_, direct_); }

void AtomicFile::raw_write(const char* data, size_t n) {
  if (direct_io_) {
    direct_io_->put(data, n);
    written_ += n;
    if (sync_behind_) sync_behind_->wrote(written_);
    return;
  }
  if (n > 0 && std::fwrite(data, 1, n, f_) != n) fail("cannot write output");
  written_ += n;
  if (written_ - synced_ >= kWriteBehind) write_behind();
}

void AtomicFile::write(std::string_view data) {
  if (encoder_) {
    if (!data.empty()) encoder_->feed(data, false, [this](const char* p, size_t n) { raw_write(p, n); });
    return;
  }
  raw_write(data.data(), data.size());
}

void AtomicFile::put(char c) {
  if (encoder_) return write(std::string_view(&c, 1));
  if (direct_io_) return raw_write(&c, 1);
  if (std::fputc(c, f_) == EOF) fail("cannot write output");
  ++written_;
}

// Starts the disk writes of what was written so far without waiting for them, and has them
// synced on SyncBehind's thread, so that the fsync of commit() waits only for the last part
// (writing and syncing overlap). Direct writes tell SyncBehind themselves.
void AtomicFile::write_behind() {
  if (direct_) return;
  if (std::fflush(f_) != 0) fail("cannot write output");
  ::sync_file_range(fd_, static_cast<off_t>(synced_), static_cast<off_t>(written_ - synced_), SYNC_FILE_RANGE_WRITE);
  synced_ = written_;
  if (sync_behind_) sync_behind_->wrote(written_);
}

void AtomicFile::finish() {
  if (finished_) return;
  if (encoder_) encoder_->feed({}, true, [this](const char* p, size_t n) { raw_write(p, n); });
  if (direct_io_) direct_io_->finish(written_);
  if (std::fflush(f_) != 0 || std::ferror(f_)) {
    if (errno == 0) errno = EIO;
    fail("cannot write output");
  }
  if (stdout_) {
    finished_ = true;
    return;
  }
  if (direct_) {
    // Written in place: a regular file behind /dev/stdout is synced; a pipe or device cannot be.
    if (retry_eintr([&] { return ::fsync(fd_); }) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) fail("cannot sync output");
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail("cannot close output");
    finished_ = true;
    return;
  }
  if (sync_behind_) {
    if (const int e = sync_behind_->stop(); e != 0) {
      errno = e;
      fail("cannot sync output");
    }
  }
  if (retry_eintr([&] { return ::fsync(fd_); }) != 0 && errno != EINVAL) fail("cannot sync output");
  if (temp_.empty()) {  // unnamed: named now, to be renamed into place
    temp_ = link_unnamed(fd_, temp_template_);
    if (temp_.empty()) fail("cannot move output into place");
    temp_slot_ = register_temporary_file(temp_);
  }
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) fail("cannot close output");  // the destructor removes the temporary file
  finished_ = true;
}

void AtomicFile::commit() {
  AtomicFile* self = this;
  commit_together(std::span<AtomicFile* const>(&self, 1));
}

void AtomicFile::flush_appends() {
  if (direct_io_) direct_io_->park();
}

namespace {

// Whether an output's writes go directly to the disk once it copies: on ext4 (see Direct). Btrfs
// and XFS clone with copy_file_range, and other file systems may not take O_DIRECT.
bool writes_directly(int fd) {
  constexpr long kExt4 = 0xEF53;
  struct statfs fs {};
  return ::fstatfs(fd, &fs) == 0 && fs.f_type == kExt4;
}

// `fd`'s file opened again for writing with O_DIRECT (through /proc, not by its name, which
// another process could have replaced), or -1.
int reopen_direct(int fd) {
  const std::string self = descriptor_path(fd);
  const int dfd = retry_eintr([&] { return ::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC); });
  if (dfd < 0) return -1;
  struct stat a {}, b {};
  if (::fstat(fd, &a) != 0 || ::fstat(dfd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
    ::close(dfd);
    return -1;
  }
  return dfd;
}

}  // namespace

void AtomicFile::limit_direct_buffers(size_t n, size_t bytes) noexcept {
  direct_buffers_ = n;
  direct_buffer_bytes_ = std::clamp<size_t>(bytes / Direct::kAlign * Direct::kAlign, Direct::kAlign, kDirectBufferBytes);
  if (!direct_io_ || n == 0) return;  // started direct writes go on
  const std::lock_guard lock(direct_io_->m);
  direct_io_->max_owned = n;  // a lower limit stops it taking more; what it holds stays until it parks
  direct_io_->used = direct_buffer_bytes_;
}

void AtomicFile::write_directly() {
  if (!direct_io_ && !direct_ && !encoder_ && !direct_tried_ && direct_buffers_ > 0) {
    // Into a file of its own on ext4: from here on every byte goes through the direct writes,
    // starting with the written bytes of the block this one starts in.
    direct_tried_ = true;
    if (std::fflush(f_) != 0) fail("cannot write output");
    const int dfd = writes_directly(fd_) ? reopen_direct(fd_) : -1;
    if (dfd >= 0) {
      auto d = std::make_unique<Direct>();
      d->fd = dfd;
      d->plain_fd = fd_;
      d->path = path_;
      d->max_owned = direct_buffers_;
      d->used = direct_buffer_bytes_;
      d->out_at = written_ / Direct::kAlign * Direct::kAlign;
      d->tail.resize(written_ - d->out_at);
      if (!d->tail.empty() && ::pread(d->plain_fd, d->tail.data(), d->tail.size(), static_cast<off_t>(d->out_at)) != static_cast<ssize_t>(d->tail.size()))
        fail("cannot read back output");
      direct_io_ = std::move(d);
    }
  }
}

uint64_t AtomicFile::append_from(int fd, uint64_t offset, uint64_t length, const std::string& display) {
  write_directly();  // the first copy starts the direct writes where they can be
  if (direct_io_) {
    uint64_t done = 0;
    while (done < length) {
      const std::span<char> room = direct_io_->room();
      const ssize_t r = ::pread(fd, room.data(), static_cast<size_t>(std::min<uint64_t>(room.size(), length - done)), static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        throw IoError(std::string("cannot read input: ") + std::strerror(errno), ErrorPlace{display});
      }
      if (r == 0) break;  // the input's end
      direct_io_->fill += static_cast<size_t>(r);
      written_ += static_cast<uint64_t>(r);
      done += static_cast<uint64_t>(r);
      if (sync_behind_) sync_behind_->wrote(written_);
    }
    return done;
  }
  if (std::fflush(f_) != 0) fail("cannot write output");
  const int out_fd = fd_;
  uint64_t done = 0;
  bool kernel_copy = !stdout_ && !encoder_;
  // Into standard output, a special file, a compressed output or a file on another file system
  // than ext4: copied here, in order. A plain output takes copy_file_range at its position
  // (cloned as clone_step says); a compressed one, or one the kernel cannot copy into, goes
  // through memory.
  uint64_t block = 0, out_at = 0;
  if (kernel_copy) {
    const off_t at = ::lseek(out_fd, 0, SEEK_CUR);
    if (at >= 0) {
      if (clone_block_ == 0) clone_block_ = clone_block(out_fd);
      block = clone_block_;
      out_at = static_cast<uint64_t>(at);
    }
  }
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, uint64_t{1} << 30));
    if (kernel_copy) {
      loff_t in_off = static_cast<loff_t>(offset + done);
      const size_t step = clone_step(offset + done, out_at + done, std::min<size_t>(want, kWriteBehind), block);
      const ssize_t r = ::copy_file_range(fd, &in_off, out_fd, nullptr, step, 0);
      if (r > 0) {
        done += static_cast<uint64_t>(r);
        written_ += static_cast<uint64_t>(r);
        if (written_ - synced_ >= kWriteBehind) write_behind();
        continue;
      }
      if (r == 0) break;  // end of the input
      if (errno == EINTR) continue;
      if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP || errno == EBADF) {
        kernel_copy = false;  // another file system or kernel: copy through memory
        continue;
      }
      if (errno == EIO) throw IoError(std::string("cannot read input: ") + std::strerror(errno), ErrorPlace{display});
      fail("cannot write output");
    }
    thread_local std::vector<char> buf;
    buf.resize(std::min<size_t>(want, 1 << 20));
    const ssize_t r = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw IoError(std::string("cannot read input: ") + std::strerror(errno), ErrorPlace{display});
    }
    if (r == 0) break;
    write(std::string_view(buf.data(), static_cast<size_t>(r)));
    if (std::fflush(f_) != 0) fail("cannot write output");
    done += static_cast<uint64_t>(r);
  }
  return done;
}

std::string temp_directory(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

int open_unnamed(const std::string& dir) {
#ifdef O_TMPFILE
  // Read and write, as mkstemp's: the direct writes read back the block they start in.
  const int fd = retry_eintr([&] { return ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); });
  if (fd < 0) return -1;
  struct stat st {};
  if (::stat(descriptor_path(fd).c_str(), &st) != 0) {  // no /proc to reach it by
    ::close(fd);
    return -1;
  }
  return fd;
#else
  (void)dir;
  return -1;
#endif
}

std::string ScratchCopy::unavailable(const std::string& dir) {
  return "no temporary copy can be made in " + dir + " (it needs ext4 and free space; set TMPDIR to such a directory)";
}

std::unique_ptr<ScratchCopy> ScratchCopy::create(const std::string& dir, uint64_t keep_free) {
  const int fd = open_unnamed(dir);
  if (fd < 0) return nullptr;
  std::unique_ptr<ScratchCopy> c(new ScratchCopy());
  c->fd_ = fd;
  struct statfs fs {};
  if (!writes_directly(fd) || ::fstatfs(fd, &fs) != 0) return nullptr;
  const uint64_t total = uint64_t{fs.f_blocks} * static_cast<uint64_t>(fs.f_bsize);
  c->keep_free_ = keep_free != 0 ? keep_free : std::max<uint64_t>(uint64_t{1} << 30, total / 20);
  if (uint64_t{fs.f_bavail} * static_cast<uint64_t>(fs.f_bsize) <= c->keep_free_) return nullptr;
  const int dfd = reopen_direct(fd);
  if (dfd < 0) return nullptr;
  c->direct_ = std::make_unique<AtomicFile::Direct>();
  c->direct_->fd = dfd;
  c->direct_->plain_fd = fd;
  c->direct_->path = "a temporary copy in " + dir;
  c->dir_ = dir;
  c->path_ = descriptor_path(fd);
  return c;
}

ScratchCopy::~ScratchCopy() {
  direct_.reset();  // waits for its writes
  if (fd_ >= 0) ::close(fd_);
}

void ScratchCopy::give_up(std::string why) noexcept {
  if (why_.empty()) why_ = why.empty() ? "a write failed" : std::move(why);
  direct_.reset();
  [[maybe_unused]] const int ignored = fd_ >= 0 ? ::ftruncate(fd_, 0) : 0;  // its blocks freed now
}

bool ScratchCopy::append(const char* p, size_t n) noexcept {
  if (!why_.empty() || finished_) return false;
  // The free space is looked at first and then every 64 MiB: the copy stops 64 MiB short of
  // the reserve, so that it never fills the disk that the run's own outputs (or other
  // programs) need.
  constexpr uint64_t kCheckEvery = uint64_t{64} << 20;
  if (size_ == 0 || size_ + n - checked_at_ >= kCheckEvery) {
    checked_at_ = size_;
    struct statfs fs {};
    if (::fstatfs(fd_, &fs) != 0 || uint64_t{fs.f_bavail} * static_cast<uint64_t>(fs.f_bsize) < keep_free_ + kCheckEvery + n) {
      give_up("the free space in " + dir_ + " came down to " + std::to_string(keep_free_ >> 20) + " MiB");
      return false;
    }
  }
  try {
    direct_->put(p, n);
    size_ += n;
    return true;
  } catch (const std::exception& e) {
    give_up(e.what());
    return false;
  }
}

bool ScratchCopy::finish() noexcept {
  if (!why_.empty()) return false;
  if (finished_) return true;
  try {
    direct_->finish(size_);
    direct_.reset();
    finished_ = true;
    return true;
  } catch (const std::exception& e) {
    give_up(e.what());
    return false;
  }
}

namespace {

// What a path names, for telling whether two paths are one file.
struct FileIdentity {
  bool exists = false;
  bool character_device = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string resolved;  ///< when it does not exist: its directory resolved, then its name
};

FileIdentity identify(const std::string& path) {
  FileIdentity id;
  struct stat st;
  const bool ok = path == "-" ? ::fstat(1, &st) == 0 : ::stat(path.c_str(), &st) == 0;
  if (ok) {
    id.exists = true;
    id.character_device = S_ISCHR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  const std::string target = follow_links(path);
  const size_t slash = target.rfind('/');
  const std::string dir = dir_of(target);
  char* real = ::realpath(dir.c_str(), nullptr);
  id.resolved = (real ? std::string(real) : dir) + "/" + (slash == std::string::npos ? target : target.substr(slash + 1));
  std::free(real);
  return id;
}

bool same_file(const FileIdentity& a, const FileIdentity& b) {
  if (a.exists != b.exists) return false;
  return a.exists ? a.dev == b.dev && a.ino == b.ino : a.resolved == b.resolved;
}

}  // namespace

void check_outputs(std::span<const NamedPath> inputs, std::span<const NamedPath> outputs) {
  std::vector<FileIdentity> outs;
  bool any_exists = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& o = outputs[i];
    if (o.path.empty()) throw UsageError(o.role + " is empty; name a file, or - for standard output");
    outs.push_back(identify(o.path));
    any_exists = any_exists || outs.back().exists;
    for (size_t j = 0; j < i; ++j) {
      const NamedPath& p = outputs[j];
      if (o.path == "-" && p.path == "-")
        throw UsageError(p.role + " and " + o.role + " both go to standard output (-); send one of them to a file");
      if (same_file(outs[i], outs[j]) && !(outs[i].exists && outs[i].character_device))
        throw UsageError(p.role + " and " + o.role + " name the same file (" + o.path +
                         "); give each output its own file");
    }
  }
  // An output that does not exist yet cannot be an input.
  if (!any_exists) return;
  for (const NamedPath& in : inputs) {
    if (in.path == "-") continue;  // standard input is copied before anything is written
    const FileIdentity id = identify(in.path);
    if (!id.exists || id.character_device) continue;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (same_file(id, outs[i]))
        throw UsageError(outputs[i].role + " " + outputs[i].path + " is the same file as " + in.role +
                         " " + in.path +
                         "; write the output elsewhere (neardup never modifies its inputs)");
  }
}

}  // namespace neardup::io
