// Subcommands of the neardup CLI. Argument parsing only; the work is in the library.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "neardup/error.h"

namespace neardup {

/// Documented process exit codes of the `neardup` CLI (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,    ///< a bug: an unexpected exception
  kExitUsage = 2,       ///< bad command line (unknown flag, bad value, missing argument)
  kExitBadInput = 3,    ///< malformed input data: bad JSON, missing text field, empty or truncated file
  kExitIo = 4,          ///< cannot read an input or write an output (missing path, permission, full disk)
};

namespace cli {

/// The exit code of a library error, by its category.
inline int exit_code(const Error& e) noexcept {
  switch (e.category()) {
    case ErrorCategory::Usage: return kExitUsage;
    case ErrorCategory::Format: return kExitBadInput;
    case ErrorCategory::Io: return kExitIo;
    case ErrorCategory::Internal: break;
  }
  return kExitInternal;
}

/// An option as the CLI names it: on_error, skip -> "--on-error skip".
inline std::string flag_wording(std::string_view option, std::string_view value) {
  std::string flag = "--";
  for (const char c : option) flag += c == '_' ? '-' : c;
  if (!value.empty()) {
    flag += ' ';
    flag += value;
  }
  return flag;
}

/// A library text (an error, a reason a record was skipped) with its options named as flags.
inline std::string flag_text(std::string_view text) { return render_options(text, flag_wording); }
/// A library error's message with its options named as flags.
inline std::string flag_text(const Error& e) { return e.message(flag_wording); }

/// A word where a command was expected that names none: "unknown command", with the nearest one,
/// and the usage exit code; 0 when the words are fine. `program`: "neardup" or "neardup-mpi";
/// `quiet`: say nothing (neardup-mpi's ranks but rank 0).
int check_command_words(CLI::App& app, int argc, char** argv, const char* program, bool quiet = false);
/// A parse error as one line, with the nearest option for an unknown one; the usage exit code.
int report_parse_error(CLI::App& app, const CLI::ParseError& e, const char* program);

/// SIGINT, SIGTERM, SIGHUP, SIGPIPE remove the temporary outputs, print "<program>: interrupted"
/// and end the process by the same signal; SIGXFSZ becomes an I/O error.
void install_signal_handlers(const char* program);
/// Blocks of 16 MiB or more are given back to the system as soon as they are freed, each
/// thread's heap keeps up to that much free at its top, and the main heap grows that much beyond
/// each request (glibc's mmap and trim thresholds and top pad).
void return_large_blocks_at_once();
/// Raises the soft limit on open files to the hard one (a run over many compressed shards).
void raise_open_file_limit();
/// Batch runs (pairs, dedup): every thread allocates from one heap (glibc's M_ARENA_MAX = 1), so
/// that memory one thread frees is reused by the others. Call before the run starts its threads.
/// Returns whether the threads now share one heap.
bool one_heap_for_all_threads();
/// First thing in main: where transparent huge pages are given on advice and a 4 KiB page fault
/// is dear (page_fault_microseconds, neardup/cpu.h), starts the program again (exec, same pid)
/// with glibc's tunable glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, so that its heaps fault
/// 2 MiB at a time. Returns when it is set already (=0 turns it off), when huge pages are not on
/// advice, when faults are cheap, or when the exec fails.
void ask_huge_pages_for_the_heaps(char** argv);
/// The command line as typed (for reports), set by main().
void remember_command_line(int argc, char** argv);
const std::string& command_line();
/// Adds `pairs` and `dedup` to `app`; `run` is set to the chosen command's action.
void add_pairs_and_dedup(CLI::App& app, std::function<int()>& run);
/// Adds `simhash-plan`.
void add_simhash_plan(CLI::App& app, std::function<int()>& run);
/// Adds `index` and its subcommands.
void add_index(CLI::App& app, std::function<int()>& run);
/// Adds `eval`.
void add_eval(CLI::App& app, std::function<int()>& run);
/// Adds `explain`.
void add_explain(CLI::App& app, std::function<int()>& run);
/// Adds `serve` (built with NEARDUP_BUILD_SERVE).
void add_serve(CLI::App& app, std::function<int()>& run);
/// Adds `tune`.
void add_tune(CLI::App& app, std::function<int()>& run);

}  // namespace cli
}  // namespace neardup
