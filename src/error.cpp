#include "neardup/error.h"

#include <cstdio>
#include <cstdlib>

namespace neardup {
namespace {

// An option reference is its name, and a space and the value if one is suggested, between two
// unit separators (0x1F): a byte no option name, value or wording contains.
constexpr char kMark = '\x1f';

std::string place_prefix(const ErrorPlace& p) {
  if (p.source.empty()) return {};
  return p.line ? p.source + ":" + std::to_string(p.line) + ": " : p.source + ": ";
}

std::string first_option(std::string_view text) {
  const size_t b = text.find(kMark);
  if (b == std::string_view::npos) return {};
  const size_t e = text.find(kMark, b + 1);
  if (e == std::string_view::npos) return {};
  const std::string_view ref = text.substr(b + 1, e - b - 1);
  return std::string(ref.substr(0, ref.find(' ')));
}

std::string library_wording(std::string_view option, std::string_view value) {
  return value.empty() ? std::string(option) : std::string(option) + "=" + std::string(value);
}

}  // namespace

std::string option_ref(std::string_view option, std::string_view value) {
  std::string r(1, kMark);
  r += option;
  if (!value.empty()) {
    r += ' ';
    r += value;
  }
  r += kMark;
  return r;
}

std::string render_options(std::string_view text, const OptionWording& wording) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t b = text.find(kMark, i);
    const size_t e = b == std::string_view::npos ? b : text.find(kMark, b + 1);
    if (e == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, b - i));
    const std::string_view ref = text.substr(b + 1, e - b - 1);
    const size_t sp = ref.find(' ');
    const std::string_view name = ref.substr(0, sp);
    const std::string_view value = sp == std::string_view::npos ? std::string_view() : ref.substr(sp + 1);
    out += wording ? wording(name, value) : library_wording(name, value);
    i = e + 1;
  }
  return out;
}

Error::Error(ErrorCategory category, std::string text, ErrorPlace place)
    : std::runtime_error(place_prefix(place) + render_options(text)),
      category_(category),
      place_(std::move(place)),
      text_(std::move(text)),
      option_(first_option(text_)) {}

std::string Error::message(const OptionWording& wording) const { return place_prefix(place_) + render_options(text_, wording); }

namespace internal {

// The one place the library writes to stderr: a broken invariant is a bug, and aborting with
// its location is the only useful thing left to do.
void assert_fail(const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "neardup: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace internal
}  // namespace neardup
