#include "neardup/io/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "neardup/error.h"

namespace neardup::io {

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
}

AtomicFile::~AtomicFile() {
  if (stdout_ || !f_) return;
  std::fclose(f_);
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const char* what) {
  const int e = errno;
  throw IoError(path_ + ": " + what + ": " + std::strerror(e) +
                (e == ENOSPC || e == EFBIG || e == EDQUOT ? "; free some space and run again" : "") +
                " (the previous file, if any, is untouched)");
}

void AtomicFile::write(std::string_view data) {
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f_) != data.size()) fail("cannot write output");
}

void AtomicFile::put(char c) {
  if (std::fputc(c, f_) == EOF) fail("cannot write output");
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

}  // namespace neardup::io
