// Inputs that can be read only once (standard input, FIFOs), read by rank 0 and sent to every rank.
#include "run.h"

namespace neardup::mpi {

// ---- Inputs that can be read only once ----
//
// Standard input, a FIFO or a pipe can be read once, by one process: mpirun hands standard
// input to rank 0 alone, and ranks that each opened a FIFO would each get a part of it. So rank 0
// reads each such input and broadcasts its bytes; every rank keeps a copy (io::OnceCopy, in its
// own temporary folder) and reads that, as one process reads its spooled copy. A process
// substitution's descriptor (/dev/fd/N) belongs to the shell that started mpirun, which does not
// pass it on: refused with what to do instead.

constexpr size_t kCopyChunk = size_t{4} << 20;

// Whether rank 0 must read `p` once for every rank; UsageError for a descriptor it cannot see.
bool read_once(const std::string& p) {
  if (p == "-") return true;
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  if (p.starts_with("/dev/fd/") || p.starts_with("/proc/self/fd/"))
    throw UsageError(p + ": a process substitution's descriptor, which mpirun does not pass on to the ranks; pipe the "
                     "command into neardup-mpi's standard input instead (cmd | mpirun ... neardup-mpi dedup - ...), or "
                     "write its output to a file");
  return false;  // missing: InputSet says so
}

// One input's bytes from rank 0 (which reads them from descriptor `in`) into a copy on every
// rank. Every rank takes part in every broadcast whatever fails here, so that none waits for
// ever: a failure is remembered and thrown after the last chunk.
std::unique_ptr<io::OnceCopy> Run::receive_copy(const std::string& input, int in) {
  const std::string display = input == "-" ? "<stdin>" : input;
  std::vector<char> buf(kCopyChunk);
  bool drained = false;
  std::string read_error;
  std::exception_ptr write_error;
  const auto stream = [&](int fd) {
    drained = true;
    for (;;) {
      long long n = 0;
      if (c_.rank() == 0) {
        for (;;) {
          const ssize_t r = ::read(in, buf.data(), buf.size());
          if (r < 0 && errno == EINTR) continue;
          n = r;
          if (r < 0) read_error = std::strerror(errno);
          break;
        }
      }
      MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
      if (n <= 0) {
        if (n < 0 && c_.rank() == 0) throw IoError("cannot read: " + read_error, ErrorPlace{display});
        if (n < 0) throw UsageError("rank 0 could not read " + display);  // rank 0 says why
        break;
      }
      MPI_Bcast(buf.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
      if (fd >= 0 && !write_error) {
        try {
          io::write_copy(fd, buf.data(), static_cast<size_t>(n), display, ro_.tuning.temp_dir);
        } catch (...) {
          write_error = std::current_exception();
        }
      }
    }
    if (write_error) std::rethrow_exception(write_error);
  };
  try {
    return std::make_unique<io::OnceCopy>(display, ro_.tuning.temp_dir, stream);
  } catch (...) {
    if (!drained) stream(-1);  // the copy could not be made here: take part, then fail
    throw;
  }
}

void Run::copy_read_once_inputs() {
  std::vector<char> once(o_.inputs.size(), 0);
  int refused = 0;
  std::string why;
  if (c_.rank() == 0) {
    try {
      for (size_t i = 0; i < once.size(); ++i) once[i] = read_once(o_.inputs[i]) ? 1 : 0;
    } catch (const UsageError& e) {
      refused = 1;
      why = e.what();
    }
  }
  MPI_Bcast(&refused, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (refused) throw UsageError(c_.rank() == 0 ? why : std::string("refused on rank 0"));
  MPI_Bcast(once.data(), static_cast<int>(once.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  for (size_t i = 0; i < once.size(); ++i) {
    if (!once[i]) continue;
    const std::string& p = o_.inputs[i];
    int in = -1;
    if (c_.rank() == 0) in = p == "-" ? 0 : ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    int opened = in >= 0 ? 1 : 0;
    const int open_errno = errno;
    MPI_Bcast(&opened, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!opened) {
      if (c_.rank() == 0)
        throw IoError(std::string("cannot read: ") + std::strerror(open_errno) + "; check its permissions", ErrorPlace{p});
      throw UsageError("rank 0 could not open " + p);
    }
    std::unique_ptr<io::OnceCopy> copy;
    try {
      copy = receive_copy(p, in);
    } catch (...) {
      if (in > 0) ::close(in);
      throw;
    }
    if (in > 0) ::close(in);
    ro_.reader.copied_once.emplace_back(p, copy->path());
    once_copies_.push_back(std::move(copy));
  }
}

}  // namespace neardup::mpi
