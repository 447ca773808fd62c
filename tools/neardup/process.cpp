// Fatal signals in the command-line programs: temporary outputs removed, then the default death.
#include <signal.h>
#include <unistd.h>

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

}  // namespace neardup::cli
