// Scoring a list of reported pairs against exact ground truth (`neardup eval`).
//
// The truth file lists every pair whose true similarity is at or above its floor (the shared
// corpora: every pair with word 3-shingle Jaccard >= 0.5), one per line:
// `id1<TAB>id2<TAB>similarity`. The pairs file has the same first three columns (the output of
// `neardup pairs`; more columns are ignored). Both may be gzip- or zstd-compressed; pairs are
// unordered (a, b) = (b, a).
//
// At a threshold T >= the floor: the positives are the truth pairs with similarity >= T; the
// predictions are the reported pairs with score >= T. A prediction is correct when it is a
// positive. A reported pair absent from the truth has a true similarity below the floor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neardup {

struct EvalOptions {
  std::optional<double> threshold;    ///< T; default: the floor
  std::optional<double> truth_floor;  ///< default: 0.5, or the smallest truth similarity (rounded down to 0.01) if lower
  bool list = false;                  ///< collect the misses and false positives
};

/// One similarity bin [lo, hi) (the last one includes 1.0).
struct EvalBin {
  double lo = 0, hi = 0;
  uint64_t positives = 0, found = 0;        ///< positives whose true similarity is in the bin; how many were predicted
  uint64_t predictions = 0, correct = 0;    ///< predictions whose reported score is in the bin; how many are positives
  double recall() const noexcept { return positives ? static_cast<double>(found) / static_cast<double>(positives) : 1.0; }
  double precision() const noexcept {
    return predictions ? static_cast<double>(correct) / static_cast<double>(predictions) : 1.0;
  }
};

struct EvalPair {
  std::string id1, id2;
  double score = -1;  ///< reported score, -1 if not reported
  double truth = -1;  ///< true similarity, -1 if below the floor (absent from the truth)
};

struct EvalResult {
  double threshold = 0, floor = 0;
  uint64_t truth_pairs = 0;     ///< lines of the truth file (distinct pairs)
  uint64_t reported_pairs = 0;  ///< distinct pairs in the pairs file, any score
  uint64_t repeated_pairs = 0;  ///< pairs file lines naming a pair already seen (ignored)
  EvalBin overall;              ///< lo = T, hi = 1
  std::vector<EvalBin> bins;    ///< 0.1 wide, from the bin holding T to 1.0
  /// Absolute error of the reported score on the correct predictions.
  double mean_abs_error = 0, max_abs_error = 0;
  std::vector<EvalPair> misses, false_positives;  ///< with EvalOptions::list, sorted by id
  double f1() const noexcept {
    const double p = overall.precision(), r = overall.recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

/// Reads both files and scores the pairs. Throws IoError (unreadable file), FormatError naming
/// the file and line (a line without three tab-separated columns, a similarity that is not a
/// number in [0, 1], a pair of an id with itself) and UsageError (T below the floor, or a floor
/// above a truth similarity).
EvalResult evaluate_pairs(const std::string& truth_path, const std::string& pairs_path, const EvalOptions& options);

}  // namespace neardup
