// A self-contained HTML report of a run (inline CSS and SVG, no script, no network): what was
// read, the similarities found, the clusters, the S-curve of the bands with the collision rate
// measured per similarity bin, the removed share per input, kept and removed documents side by
// side with the differing words marked, and the records skipped. Its cost is bounded: pairs and
// documents are sampled, texts cut (ReportLimits), and the page says so.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "neardup/pipeline.h"

namespace neardup {
namespace io {
class AtomicFile;
}

struct ReportLimits {
  size_t curve_pairs = 20000;   ///< pairs within clusters scored for the measured collision rate
  size_t largest_clusters = 10; ///< clusters listed
  size_t side_by_side = 6;      ///< pairs shown side by side (largest clusters, then borderline)
  size_t words = 1500;          ///< words of each text compared and shown
};

/// What the caller of a run knows that the pipeline does not.
struct ReportRun {
  std::string command;  ///< as typed
  bool dedup = true;    ///< dedup (removed-to-kept similarities) or pairs
  /// Pairs mode: the histogram of the reported pairs' similarities (kSimilarityBins bins over
  /// [0, 1]) and a sample of pairs just above the threshold, collected while they were written.
  std::vector<uint64_t> pair_bins;
  std::vector<ScoredPair> borderline;
  double peak_memory_bytes = 0;
  double seconds = 0;  ///< the whole run, writing included
};

inline constexpr size_t kSimilarityBins = 50;
/// The bin of a similarity in [0, 1].
inline size_t similarity_bin(double s) noexcept {
  const double b = s * static_cast<double>(kSimilarityBins);
  return b <= 0 ? 0 : b >= static_cast<double>(kSimilarityBins) ? kSimilarityBins - 1 : static_cast<size_t>(b);
}

/// Writes the report of `pipeline`'s run (after run(), and after the outputs were written).
void write_report(io::AtomicFile& out, const Pipeline& pipeline, const ReportRun& run, const ReportLimits& limits = {});

/// The whitespace-separated words of `a` and `b`, marked where they differ: a longest common
/// subsequence of at most `max_words` words each, words compared without case and the
/// punctuation around them (as shingles see them); differ_a[i] is true for the i-th word of a
/// not in it.
struct WordDiff {
  std::vector<std::string> a, b;
  std::vector<bool> differ_a, differ_b;
  bool cut = false;  ///< a text had more words than compared
};
WordDiff word_diff(std::string_view a, std::string_view b, size_t max_words);

}  // namespace neardup
