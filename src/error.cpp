#include "neardup/error.h"

#include <cstdio>
#include <cstdlib>

namespace neardup::internal {

// The one place the library writes to stderr: a broken invariant is a bug, and aborting with
// its location is the only useful thing left to do.
void assert_fail(const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "neardup: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace neardup::internal
