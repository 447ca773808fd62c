#include "neardup/eval.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/verify.h"

namespace neardup {
namespace {

// Ids interned to dense numbers, so that a pair is one 64-bit key (smaller number first).
class Ids {
 public:
  uint32_t intern(std::string_view id) {
    const auto [it, added] = map_.try_emplace(std::string(id), static_cast<uint32_t>(names_.size()));
    if (added) names_.push_back(&it->first);
    return it->second;
  }
  const std::string& name(uint32_t i) const { return *names_[i]; }

 private:
  std::unordered_map<std::string, uint32_t> map_;
  std::vector<const std::string*> names_;  // node-based map: the keys do not move
};

EvalPair listed(const Ids& ids, uint64_t key, double score, double truth) {
  const std::string &a = ids.name(static_cast<uint32_t>(key >> 32)), &b = ids.name(static_cast<uint32_t>(key));
  return a < b ? EvalPair{a, b, score, truth} : EvalPair{b, a, score, truth};
}

uint64_t pair_key(uint32_t a, uint32_t b) noexcept {
  return a < b ? (uint64_t{a} << 32 | b) : (uint64_t{b} << 32 | a);
}

// Calls fn(id1, id2, similarity) for each non-empty line of a TSV file of pairs.
template <class Fn>
void read_pairs(const std::string& path, const char* role, Fn&& fn) {
  const std::string data = io::read_all(path, path);
  size_t line_no = 0;
  for (size_t pos = 0; pos < data.size();) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    std::string_view line(data.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const auto bad = [&](const std::string& what) {
      return FormatError(path + ":" + std::to_string(line_no) + ": " + what + " in the " + role +
                         " file; each line must be id1<TAB>id2<TAB>similarity");
    };
    const size_t t1 = line.find('\t');
    const size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string_view::npos) throw bad("fewer than three tab-separated columns");
    const std::string_view a = line.substr(0, t1), b = line.substr(t1 + 1, t2 - t1 - 1);
    std::string_view num = line.substr(t2 + 1);
    num = num.substr(0, num.find('\t'));
    double s = 0;
    const auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), s);
    if (ec != std::errc() || p != num.data() + num.size() || !(s >= 0.0 && s <= 1.0))
      throw bad("similarity '" + std::string(num.substr(0, 40)) + "' is not a number in [0, 1]");
    if (a.empty() || b.empty()) throw bad("empty id");
    if (a == b) throw bad("a pair of the id '" + std::string(a.substr(0, 80)) + "' with itself");
    fn(a, b, s);
  }
}

}  // namespace

EvalResult evaluate_pairs(const std::string& truth_path, const std::string& pairs_path, const EvalOptions& options) {
  Ids ids;
  std::unordered_map<uint64_t, double> truth;
  double min_truth = 2.0;
  read_pairs(truth_path, "truth", [&](std::string_view a, std::string_view b, double s) {
    const auto [it, added] = truth.try_emplace(pair_key(ids.intern(a), ids.intern(b)), s);
    if (!added) it->second = std::max(it->second, s);
    min_truth = std::min(min_truth, s);
  });
  EvalResult r;
  r.truth_pairs = truth.size();
  // The default floor: 0.5, the convention of the shared corpora's truth files, unless the truth
  // holds smaller similarities (then the smallest, rounded down to 0.01).
  r.floor = options.truth_floor ? *options.truth_floor : std::min(0.5, std::floor(min_truth * 100 + 1e-9) / 100);
  if (!(r.floor >= 0.0 && r.floor <= 1.0)) throw UsageError("eval: " NEARDUP_OPT("truth_floor") " must be in [0, 1]");
  if (min_truth + kSimilarityEpsilon < r.floor)
    throw UsageError("eval: " + truth_path + " holds a pair of similarity " + std::to_string(min_truth) +
                     ", below " + option_ref("truth_floor", std::to_string(r.floor)) + "; lower the floor");
  r.threshold = options.threshold ? *options.threshold : r.floor;
  if (!(r.threshold >= 0.0 && r.threshold <= 1.0)) throw UsageError("eval: " NEARDUP_OPT("threshold") " must be in [0, 1]");
  if (r.threshold + kSimilarityEpsilon < r.floor)
    throw UsageError("eval: " + option_ref("threshold", std::to_string(r.threshold)) + " is below the truth's floor " +
                     std::to_string(r.floor) + ": pairs between them are not in the truth and cannot be judged");
  const double t = r.threshold - kSimilarityEpsilon;

  // Bins of 0.1 from the one holding T; the last includes 1.0.
  const int first = std::min(9, static_cast<int>(std::floor(r.threshold * 10 + 1e-9)));
  for (int i = first; i < 10; ++i) r.bins.push_back({i / 10.0, (i + 1) / 10.0});
  const auto bin_of = [&](double s) -> EvalBin& {
    const int i = std::clamp(static_cast<int>(std::floor(s * 10 + 1e-9)), first, 9);
    return r.bins[static_cast<size_t>(i - first)];
  };
  r.overall = {r.threshold, 1.0};

  std::unordered_map<uint64_t, double> reported;
  read_pairs(pairs_path, "pairs", [&](std::string_view a, std::string_view b, double s) {
    if (!reported.try_emplace(pair_key(ids.intern(a), ids.intern(b)), s).second) ++r.repeated_pairs;
  });
  r.reported_pairs = reported.size();

  double err_sum = 0;
  for (const auto& [key, s] : reported) {
    if (s < t) continue;
    const auto it = truth.find(key);
    const bool ok = it != truth.end() && it->second >= t;
    EvalBin& bin = bin_of(s);
    ++bin.predictions;
    ++r.overall.predictions;
    if (ok) {
      ++bin.correct;
      ++r.overall.correct;
      const double e = std::abs(s - it->second);
      err_sum += e;
      r.max_abs_error = std::max(r.max_abs_error, e);
    } else if (options.list) {
      r.false_positives.push_back(listed(ids, key, s, it == truth.end() ? -1.0 : it->second));
    }
  }
  r.mean_abs_error = r.overall.correct ? err_sum / static_cast<double>(r.overall.correct) : 0.0;
  for (const auto& [key, j] : truth) {
    if (j < t) continue;
    const auto it = reported.find(key);
    const bool found = it != reported.end() && it->second >= t;
    EvalBin& bin = bin_of(j);
    ++bin.positives;
    ++r.overall.positives;
    if (found) {
      ++bin.found;
      ++r.overall.found;
    } else if (options.list) {
      r.misses.push_back(listed(ids, key, it == reported.end() ? -1.0 : it->second, j));
    }
  }
  const auto by_id = [](const EvalPair& x, const EvalPair& y) { return std::tie(x.id1, x.id2) < std::tie(y.id1, y.id2); };
  std::sort(r.misses.begin(), r.misses.end(), by_id);
  std::sort(r.false_positives.begin(), r.false_positives.end(), by_id);
  return r;
}

}  // namespace neardup
