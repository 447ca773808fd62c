#include "neardup/io/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "neardup/error.h"
#include "neardup/io/stream.h"

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

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (path == "-") {
    stdout_ = true;
    f_ = stdout;
    return;
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  temp_ = (slash == std::string::npos ? std::string() : dir) + "." + base + ".neardup-tmp-XXXXXX";
  const int fd = ::mkstemp(temp_.data());
  if (fd < 0)
    throw IoError(path + ": cannot create output file: " + std::strerror(errno) +
                  "; check that the directory exists and is writable");
  // mkstemp creates 0600; give the result the usual permissions (umask applies).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    ::close(fd);
    ::unlink(temp_.c_str());
    throw IoError(path + ": cannot open output file: " + std::strerror(errno));
  }
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  temp_slot_ = register_temporary_file(temp_);
}

AtomicFile::~AtomicFile() {
  if (stdout_) return;
  if (f_) {
    std::fclose(f_);
    ::unlink(temp_.c_str());
  }
  unregister_temporary_file(temp_slot_);
}

void AtomicFile::fail(const char* what) {
  const int e = errno;
  throw IoError(path_ + ": " + what + ": " + std::strerror(e) +
                (e == ENOSPC || e == EDQUOT ? "; free some space and run again"
                 : e == EFBIG               ? "; the file size limit (ulimit -f) or the file system's was reached"
                                            : "") +
                " (the previous file, if any, is untouched)");
}

void AtomicFile::write(std::string_view data) {
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f_) != data.size()) fail("cannot write output");
  written_ += data.size();
  if (written_ - synced_ >= kWriteBehind) write_behind();
}

void AtomicFile::put(char c) {
  if (std::fputc(c, f_) == EOF) fail("cannot write output");
  ++written_;
}

// Starts the disk writes of what was written so far without waiting for them, so that the
// fsync of commit() waits only for the last part (writing and syncing overlap).
void AtomicFile::write_behind() {
  if (stdout_) return;
  if (std::fflush(f_) != 0) fail("cannot write output");
  ::sync_file_range(::fileno(f_), static_cast<off_t>(synced_), static_cast<off_t>(written_ - synced_), SYNC_FILE_RANGE_WRITE);
  synced_ = written_;
}

void AtomicFile::commit() {
  if (stdout_) {
    if (std::fflush(f_) != 0) fail("cannot write output");
    return;
  }
  if (std::fflush(f_) != 0) fail("cannot write output");
  if (::fsync(::fileno(f_)) != 0 && errno != EINVAL) fail("cannot sync output");
  if (std::fclose(f_) != 0) {
    f_ = nullptr;
    ::unlink(temp_.c_str());
    fail("cannot close output");
  }
  f_ = nullptr;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(temp_.c_str());
    errno = e;
    fail("cannot move output into place");
  }
}

uint64_t AtomicFile::append_from(int fd, uint64_t offset, uint64_t length, const std::string& display) {
  if (std::fflush(f_) != 0) fail("cannot write output");
  const int out_fd = ::fileno(f_);
  uint64_t done = 0;
  bool kernel_copy = !stdout_;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, uint64_t{1} << 30));
    if (kernel_copy) {
      loff_t in_off = static_cast<loff_t>(offset + done);
      const ssize_t r = ::copy_file_range(fd, &in_off, out_fd, nullptr, std::min<size_t>(want, kWriteBehind), 0);
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
      if (errno == EIO) throw IoError(display + ": cannot read input: " + std::strerror(errno));
      fail("cannot write output");
    }
    thread_local std::vector<char> buf;
    buf.resize(std::min<size_t>(want, 1 << 20));
    const ssize_t r = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw IoError(display + ": cannot read input: " + std::strerror(errno));
    }
    if (r == 0) break;
    write(std::string_view(buf.data(), static_cast<size_t>(r)));
    if (std::fflush(f_) != 0) fail("cannot write output");
    done += static_cast<uint64_t>(r);
  }
  return done;
}

void append_ranges(const std::string& path, const std::string& display, std::span<const ByteRange> ranges, AtomicFile& out) {
  if (ranges.empty()) return;
  const auto short_of = [&](uint64_t missing, const ByteRange& r) {
    if (missing == 1 && &r == &ranges.back()) {
      out.put('\n');  // the last line had no newline
      return;
    }
    throw IoError(display + ": ends before byte " + std::to_string(r.offset + r.length) +
                  "; the input changed while neardup was running (do not modify inputs during a run)");
  };
  auto stream = open_stream(path, display);
  if (stream->compression() == Compression::None) {
    stream.reset();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(display + ": cannot open input: " + std::strerror(errno));
    try {
      for (const ByteRange& r : ranges) {
        const uint64_t got = out.append_from(fd, r.offset, r.length, display);
        if (got < r.length) short_of(r.length - got, r);
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  std::vector<char> buf(1 << 20);
  uint64_t pos = 0;
  for (const ByteRange& r : ranges) {
    if (r.offset < pos) throw UsageError("append_ranges: ranges out of order");
    if (stream->skip(r.offset - pos) != r.offset - pos) short_of(r.length + 2, r);
    pos = r.offset;
    uint64_t left = r.length;
    while (left > 0) {
      const size_t got = stream->read(buf.data(), static_cast<size_t>(std::min<uint64_t>(left, buf.size())));
      if (got == 0) break;
      out.write(std::string_view(buf.data(), got));
      left -= got;
      pos += got;
    }
    if (left > 0) short_of(left, r);
  }
}

}  // namespace neardup::io
