// neardup: find, cluster and remove near-duplicate documents.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "commands.h"
#include "neardup/neardup.h"

int main(int argc, char** argv) {
  using namespace neardup;
  cli::ask_huge_pages_for_the_heaps(argv);
  cli::install_signal_handlers("neardup");
  cli::return_large_blocks_at_once();
  cli::raise_open_file_limit();
  cli::remember_command_line(argc, argv);
  // Kernel override for tests and benchmarks (the library itself never reads the environment).
  if (const char* forced = std::getenv("NEARDUP_FORCE_ISA"); forced && *forced) {
    const auto isa = parse_isa(forced);
    if (!isa) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA=%s is not one of scalar, avx2, avx512, avx512vbmi\n", forced);
      return kExitUsage;
    }
    try {
      force_isa(*isa);
    } catch (const Error& e) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA: %s\n", cli::flag_text(e).c_str());
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
  cli::add_explain(app, run);
#ifdef NEARDUP_HAVE_SERVE
  cli::add_serve(app, run);
#endif
  app.footer("Exit codes: 0 ok, 1 internal error, 2 usage error, 3 bad input data, 4 I/O error.\n"
             "Run 'neardup COMMAND --help' for the options of a command.");

  if (const int rc = cli::check_command_words(app, argc, argv, "neardup"); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return cli::report_parse_error(app, e, "neardup");
  }
  try {
    return run();
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "neardup: error: %s\n", cli::flag_text(e).c_str());
    return cli::exit_code(e);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "neardup: error: out of memory; use fewer threads or split the input\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "neardup: internal error: %s; please report it\n", e.what());
    return kExitInternal;
  }
}
