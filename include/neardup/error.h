// Errors thrown by the neardup library.
//
// The library never prints or exits (docs/architecture.md, "Habits": a silent library). Misuse and
// problems of the environment are reported by throwing an Error: a category, the place (source and
// line, where there is one), and a single-line text that says what is wrong and what to do.
//
// The text names options in a neutral form that each front end words its own way: the CLI as
// flags (`--on-error skip`), the Python module as keyword arguments (`on_error="skip"`), and
// what() as the library's field names (`on_error=skip`). option_ref() writes such a reference;
// render_options() turns every reference of a text into the front end's wording. Exit codes are
// the CLI's business: it maps the category to them (docs/cli.md).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace neardup {

enum class ErrorCategory {
  Usage,     ///< invalid arguments or options given to the library
  Format,    ///< malformed input data (bad JSON, missing field, truncated stream, damaged index)
  Io,        ///< a file cannot be opened, read or written
  Internal,  ///< a failure of a library the engine uses (cannot initialise zlib, ...)
};

/// Where a problem lies: the source (a file's name as the user gave it, "-" for stdin,
/// "<memory>" for documents given in memory) and its 1-based line, 0 where there is none.
struct ErrorPlace {
  std::string source;
  uint64_t line = 0;
};

/// A reference to an option (its library name, e.g. "on_error"), with a suggested value or
/// none, for an error text or a reason: see render_options().
std::string option_ref(std::string_view option, std::string_view value = {});

/// Words an option reference: (name, value) -> text; the value is empty when none is suggested.
using OptionWording = std::function<std::string(std::string_view option, std::string_view value)>;

/// `text` with every option reference worded by `wording`; without one, as the library's field
/// names: "on_error=skip", "text_field".
std::string render_options(std::string_view text, const OptionWording& wording = {});

/// Base of every exception the library throws.
class Error : public std::runtime_error {
 public:
  /// `text` says what is wrong and what to do, without the place, which what() puts first
  /// ("a.jsonl:3: ...").
  Error(ErrorCategory category, std::string text, ErrorPlace place = {});
  /// A failure of a library the engine uses.
  explicit Error(std::string text) : Error(ErrorCategory::Internal, std::move(text)) {}

  ErrorCategory category() const noexcept { return category_; }
  const std::string& source() const noexcept { return place_.source; }
  uint64_t line() const noexcept { return place_.line; }
  /// The first option the text refers to (its library name), or empty.
  const std::string& option() const noexcept { return option_; }
  /// The whole message with the option references worded by `wording`.
  std::string message(const OptionWording& wording) const;

 private:
  ErrorCategory category_;
  ErrorPlace place_;
  std::string text_;    // with option references
  std::string option_;
};

/// A file cannot be opened, read or written.
class IoError : public Error {
 public:
  explicit IoError(std::string text, ErrorPlace place = {}) : Error(ErrorCategory::Io, std::move(text), std::move(place)) {}
};

/// Input data is malformed (bad JSON, missing field, truncated compressed stream, ...).
class FormatError : public Error {
 public:
  explicit FormatError(std::string text, ErrorPlace place = {})
      : Error(ErrorCategory::Format, std::move(text), std::move(place)) {}
};

/// Invalid arguments given to a library function (bad parameters, inconsistent options).
class UsageError : public Error {
 public:
  explicit UsageError(std::string text, ErrorPlace place = {})
      : Error(ErrorCategory::Usage, std::move(text), std::move(place)) {}
};

namespace internal {
[[noreturn]] void assert_fail(const char* expr, const char* file, int line) noexcept;
}  // namespace internal

}  // namespace neardup

/// A broken internal invariant: aborts with the location (never used for bad input).
#define NEARDUP_ASSERT(expr) \
  ((expr) ? (void)0 : ::neardup::internal::assert_fail(#expr, __FILE__, __LINE__))
