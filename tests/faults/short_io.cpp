// Short counts on every read and write: an LD_PRELOAD library for tests/faults/sweep.py.
//
// A read or write of a regular file may transfer fewer bytes than asked (a signal, a quota
// reached part way, NFS); callers must continue where it stopped. strace can only fake such a
// return value (the bytes are then not written at all), so this library makes the calls short
// for real: each read, pread, write, pwrite and copy_file_range on a descriptor above 2 moves at
// most half of what was asked (at least one byte; from 8 KiB on, a whole number of 4 KiB blocks,
// so that writes to files opened with O_DIRECT stay aligned).
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

size_t cut(int fd, size_t n) {
  if (fd <= 2 || n <= 1) return n;
  if (n >= 8192) return (n / 2) & ~size_t{4095};
  return n / 2;
}

}  // namespace

#define REAL(name) (reinterpret_cast<decltype(&name)>(dlsym(RTLD_NEXT, #name)))

extern "C" {

ssize_t read(int fd, void* buf, size_t n) { return REAL(read)(fd, buf, cut(fd, n)); }
ssize_t write(int fd, const void* buf, size_t n) { return REAL(write)(fd, buf, cut(fd, n)); }
ssize_t pread(int fd, void* buf, size_t n, off_t at) { return REAL(pread)(fd, buf, cut(fd, n), at); }
ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) { return REAL(pwrite)(fd, buf, cut(fd, n), at); }
ssize_t pread64(int fd, void* buf, size_t n, off_t at) { return REAL(pread64)(fd, buf, cut(fd, n), at); }
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t at) { return REAL(pwrite64)(fd, buf, cut(fd, n), at); }
ssize_t copy_file_range(int in, off_t* in_at, int out, off_t* out_at, size_t n, unsigned flags) {
  return REAL(copy_file_range)(in, in_at, out, out_at, cut(out, n), flags);
}
}
