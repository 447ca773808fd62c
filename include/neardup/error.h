// Errors thrown by the neardup library, and the exit codes the CLI maps them to.
//
// The library never prints or exits (DESIGN.md, habit 8). Misuse and problems of the environment
// are reported by throwing one of these; each message is a single line that names the file and,
// where there is one, the line or record, says what is wrong and what to do.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace neardup {

/// Documented process exit codes of the `neardup` CLI (docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,    ///< a bug: an unexpected exception
  kExitUsage = 2,       ///< bad command line (unknown flag, bad value, missing argument)
  kExitBadInput = 3,    ///< malformed input data: bad JSON, missing text field, empty or truncated file
  kExitIo = 4,          ///< cannot read an input or write an output (missing path, permission, full disk)
  kExitInterrupted = 130,
};

/// Base of every exception the library throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, int exit_code = kExitInternal)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// A file cannot be opened, read or written.
class IoError : public Error {
 public:
  explicit IoError(const std::string& what) : Error(what, kExitIo) {}
};

/// Input data is malformed (bad JSON, missing field, truncated compressed stream, ...).
class FormatError : public Error {
 public:
  explicit FormatError(const std::string& what) : Error(what, kExitBadInput) {}
};

/// Invalid arguments given to a library function (bad parameters, inconsistent options).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, kExitUsage) {}
};

namespace internal {
[[noreturn]] void assert_fail(const char* expr, const char* file, int line) noexcept;
}  // namespace internal

}  // namespace neardup

/// A broken internal invariant: aborts with the location (never used for bad input).
#define NEARDUP_ASSERT(expr) \
  ((expr) ? (void)0 : ::neardup::internal::assert_fail(#expr, __FILE__, __LINE__))
