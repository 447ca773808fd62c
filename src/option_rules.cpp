#include "neardup/option_rules.h"

#include <cmath>
#include <cstdio>

#include "neardup/error.h"

namespace neardup {
namespace {

// The bounds of the engine, which PipelineSpec::resolved checks a spec against too: shingles of
// up to 64 words or characters, signatures and LSH of up to 4096 values, bottom-k sketches of
// up to 65536, SimHash distances up to 16 (the permuted tables' plans, simhash_plan.h).
constexpr NumberRule kRules[] = {
    {"threshold", 0, 1, true, false, false, ""},
    {"containment", 0, 1, true, false, false, ""},
    {"shingle", 1, 64, false, false, true, ""},
    {"chars", 1, 64, false, false, true, ""},
    {"num_perm", 1, 4096, false, false, true, ""},
    {"sketch_size", 1, 65536, false, false, true, ""},
    {"hamming", 0, 16, false, false, true, ""},
    {"bands", 1, 4096, false, false, true, ""},
    {"rows", 1, 4096, false, false, true, ""},
    {"threads", 0, 1024, false, false, true, "0: every core"},
    {"top", 0, 4294967295.0, false, false, true, "0: every pair above the threshold"},
    {"memory_limit", 0, 9.2e18, false, false, true, "bytes; 0: no limit"},
};

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

}  // namespace

std::span<const NumberRule> number_rules() noexcept { return kRules; }

const NumberRule& number_rule(std::string_view name) {
  for (const NumberRule& r : kRules)
    if (r.name == name) return r;
  throw UsageError("no rule for the option '" + std::string(name) + "'");
}

std::string rule_range(const NumberRule& r) {
  return std::string("in ") + (r.lo_open ? "(" : "[") + number_text(r.lo) + ", " + number_text(r.hi) + (r.hi_open ? ")" : "]");
}

std::string rule_problem(const NumberRule& r, double v) {
  if (std::isnan(v)) return "is not a number";
  if (r.integer && v != std::floor(v)) return "is not a whole number";
  const bool ok = (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi);
  if (ok) return "";
  return "is not " + rule_range(r) + (r.means.empty() ? "" : " (" + std::string(r.means) + ")");
}

}  // namespace neardup
