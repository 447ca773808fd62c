// The process-wide settings of the command-line programs: fatal signals (temporary outputs
// removed, then the default death) and the allocator's policy for large blocks.
#include <signal.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstring>

#include "commands.h"
#include "neardup/io/writer.h"

namespace neardup::cli {
namespace {

char g_message[160] = "neardup: interrupted; temporary files removed, no partial output left\n";

// SIGINT, SIGTERM, SIGHUP, SIGPIPE: remove every temporary file (outputs are only ever renamed
// into place complete, so none is left half-written), then die of the same signal (exit status
// 128 + its number, as the shell reports it). Only async-signal-safe calls.
extern "C" void on_fatal_signal(int sig) {
  neardup::io::remove_temporary_files();
  if (sig != SIGPIPE) [[maybe_unused]] const ssize_t w = ::write(2, g_message, std::strlen(g_message));
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_signal_handlers(const char* program) {
  std::strncpy(g_message, program, sizeof g_message - 1);
  std::strncat(g_message, ": interrupted; temporary files removed, no partial output left\n", sizeof g_message - std::strlen(g_message) - 1);
  struct sigaction sa{};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old{};
    // A signal ignored by whoever started the program (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
  // Past `ulimit -f`, a write fails with EFBIG (an I/O error naming the file, exit 4) instead
  // of killing the process.
  ::signal(SIGXFSZ, SIG_IGN);
}

void return_large_blocks_at_once() {
#if defined(__GLIBC__)
  // glibc serves a block from the system (mmap) above a threshold that it raises to the size of
  // every such block freed, up to 32 MiB. One record of tens of MB (its line, its parsed text,
  // the parser's buffers) thus makes every later block of up to 32 MiB come from the heap, where
  // it is kept resident between the sets held for verification: on the crowded mix the peak was
  // 400-467 MB. A fixed threshold of 16 MiB returns such blocks to the system when freed: peak
  // 353-377 MB, for 4.6% more time (the pages of about a hundred large blocks are faulted in
  // anew); 8 MiB saves little more memory (350-360 MB) for 6% (BENCHMARKS.md). It is the
  // program's choice, not the library's: a program embedding the library keeps its own policy.
  ::mallopt(M_MMAP_THRESHOLD, 16 << 20);
#endif
}

}  // namespace neardup::cli
