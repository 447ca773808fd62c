// The ranges of the numeric options every driver takes: the command line's flags, Python's
// keyword arguments and neardup-mpi's. One table, so that a value is refused alike everywhere,
// with the same words ("shingle 0 is not in [1, 64]").
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace neardup {

struct NumberRule {
  std::string_view name;  ///< the option's name in Python (the CLI's flag with - for _)
  double lo, hi;
  bool lo_open = false, hi_open = false;
  bool integer = true;
  std::string_view means;  ///< what a value does that the range does not say, or ""
};

/// Every rule, in a fixed order.
std::span<const NumberRule> number_rules() noexcept;
/// The rule of `name`; UsageError if there is none (a bug).
const NumberRule& number_rule(std::string_view name);
/// "in [1, 64]" or "in (0, 1]".
std::string rule_range(const NumberRule& r);
/// "" if `value` is within the rule (and whole, for an integer), else what is wrong with it,
/// e.g. "is not in [1, 64]".
std::string rule_problem(const NumberRule& r, double value);

}  // namespace neardup
