// neardup: find, cluster and remove near-duplicate documents.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "commands.h"
#include "neardup/neardup.h"

namespace {

// SIGINT, SIGTERM, SIGHUP, SIGPIPE: remove every temporary file (outputs are only ever renamed
// into place complete, so none is left half-written), then die of the same signal (exit status
// 128 + its number, as the shell reports it). Only async-signal-safe calls.
extern "C" void on_fatal_signal(int sig) {
  neardup::io::remove_temporary_files();
  if (sig != SIGPIPE) {
    static const char msg[] = "neardup: interrupted; temporary files removed, no partial output left\n";
    [[maybe_unused]] const ssize_t w = ::write(2, msg, sizeof msg - 1);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_signal_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old{};
    // A signal ignored by whoever started neardup (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
  // Past `ulimit -f`, a write fails with EFBIG (an I/O error naming the file, exit 4) instead
  // of killing the process.
  ::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace neardup;
  install_signal_handlers();
  // Kernel override for tests and benchmarks (the library itself never reads the environment).
  if (const char* forced = std::getenv("NEARDUP_FORCE_ISA"); forced && *forced) {
    const auto isa = parse_isa(forced);
    if (!isa) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA=%s is not one of scalar, avx2, avx512\n", forced);
      return kExitUsage;
    }
    try {
      force_isa(*isa);
    } catch (const Error& e) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA: %s\n", e.what());
      return kExitUsage;
    }
  }

  CLI::App app{"neardup: find, cluster and remove near-duplicate documents (MinHash + LSH, bottom-k + exact join, SimHash + permuted tables; exact verification)",
               "neardup"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return version_info(); });
  std::function<int()> run;
  cli::add_pairs_and_dedup(app, run);
  cli::add_simhash_plan(app, run);
  cli::add_tune(app, run);
  cli::add_index(app, run);
  cli::add_eval(app, run);
  app.footer("Exit codes: 0 ok, 1 internal error, 2 usage error, 3 bad input data, 4 I/O error.\n"
             "Run 'neardup COMMAND --help' for the options of a command.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  try {
    return run();
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "neardup: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "neardup: error: out of memory; use fewer threads or split the input\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "neardup: internal error: %s; please report it\n", e.what());
    return kExitInternal;
  }
}
