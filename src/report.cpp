#include "neardup/report.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "neardup/cluster.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"
#include "neardup/union_find.h"
#include "neardup/verify.h"

namespace neardup {
namespace {

void escape(std::string& o, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string count(uint64_t v) {
  std::string s = std::to_string(v), o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) o += ',';
    o += s[i];
  }
  return o;
}

std::string bytes(double b) {
  static const char* const units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return num(b, u == 0 ? 0 : 1) + " " + units[u];
}

// Whitespace-separated tokens, as shown.
std::vector<std::string> tokens(std::string_view s, size_t max, bool& cut) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (out.size() == max) {
      cut = true;
      break;
    }
    const size_t j = s.find_first_of(" \t\r\n\f\v", i);
    out.emplace_back(s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    i = j == std::string_view::npos ? s.size() : j;
  }
  return out;
}

// A bar chart: one bar per value, heights scaled to the largest (log10(1 + v) when log).
struct Bar {
  std::string label, title;
  double value = 0;
  std::string data;  // data-* attributes
};

void bar_chart(std::string& o, const char* id, const std::vector<Bar>& bars, bool log, const char* x_label, const char* y_label) {
  const double w = 640, h = 220, left = 48, bottom = 36, top = 10;
  double most = 0;
  for (const Bar& b : bars) most = std::max(most, log ? std::log10(1 + b.value) : b.value);
  if (most <= 0) most = 1;
  const double bw = (w - left - 10) / static_cast<double>(std::max<size_t>(bars.size(), 1));
  o += "<svg class=\"chart\" id=\"" + std::string(id) + "\" viewBox=\"0 0 " + num(w, 0) + " " + num(h, 0) +
       "\" role=\"img\" aria-label=\"" + y_label + " by " + x_label + "\">";
  o += "<line class=\"axis\" x1=\"" + num(left, 0) + "\" y1=\"" + num(h - bottom, 0) + "\" x2=\"" + num(w - 10, 0) + "\" y2=\"" + num(h - bottom, 0) + "\"/>";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double v = log ? std::log10(1 + b.value) : b.value;
    const double bh = (h - bottom - top) * v / most;
    const double x = left + bw * static_cast<double>(i);
    o += "<rect class=\"bar\" x=\"" + num(x + 1, 1) + "\" y=\"" + num(h - bottom - bh, 1) + "\" width=\"" + num(std::max(bw - 2, 1.0), 1) +
         "\" height=\"" + num(bh, 1) + "\" " + b.data + "><title>";
    escape(o, b.title);
    o += "</title></rect>";
    if (!b.label.empty()) {
      o += "<text class=\"tick\" x=\"" + num(x + bw / 2, 1) + "\" y=\"" + num(h - bottom + 14, 0) + "\">";
      escape(o, b.label);
      o += "</text>";
    }
  }
  o += "<text class=\"label\" x=\"" + num(w / 2, 0) + "\" y=\"" + num(h - 4, 0) + "\">" + x_label + "</text>";
  o += "<text class=\"label\" x=\"12\" y=\"" + num(h / 2, 0) + "\" transform=\"rotate(-90 12 " + num(h / 2, 0) + ")\">" + y_label +
       (log ? " (log scale)" : "") + "</text>";
  o += "<text class=\"tick\" x=\"" + num(left - 4, 0) + "\" y=\"" + num(top + 8, 0) + "\" text-anchor=\"end\">" +
       count(static_cast<uint64_t>(std::llround(log ? std::pow(10, most) - 1 : most))) + "</text>";
  o += "</svg>";
}

void similarity_chart(std::string& o, const std::vector<uint64_t>& bins, const char* what) {
  std::vector<Bar> bars;
  size_t first = bins.size();
  for (size_t i = 0; i < bins.size(); ++i)
    if (bins[i] > 0) {
      first = i;
      break;
    }
  if (first == bins.size()) {
    o += "<p class=\"note\">No " + std::string(what) + ".</p>";
    return;
  }
  // Every bin labelled by its lower end, or every step-th one when there are more than ten (the
  // labels, 0.02 apart, would run into each other).
  const size_t step = (bins.size() - first + 9) / 10;
  for (size_t i = first; i < bins.size(); ++i) {
    const double lo = static_cast<double>(i) / kSimilarityBins, hi = static_cast<double>(i + 1) / kSimilarityBins;
    Bar b;
    b.value = static_cast<double>(bins[i]);
    b.label = (i - first) % step == 0 ? num(lo, 2) : "";
    b.title = num(lo, 2) + "-" + num(hi, 2) + ": " + count(bins[i]);
    b.data = "data-lo=\"" + num(lo, 2) + "\" data-count=\"" + std::to_string(bins[i]) + "\"";
    bars.push_back(b);
  }
  bar_chart(o, "similarities", bars, false, "Jaccard similarity", what);
}

void doc_column(std::string& o, const std::vector<std::string>& words, const std::vector<bool>& differ, bool cut, std::string_view id,
                const char* role) {
  constexpr size_t kShown = 200;  // more behind a fold
  o += "<div class=\"doc " + std::string(role) + "\"><div class=\"docid\">" + role + ": ";
  escape(o, id);
  o += "</div><p>";
  for (size_t i = 0; i < words.size(); ++i) {
    if (i == kShown) o += "</p><details><summary>" + count(words.size() - kShown) + " more words</summary><p>";
    if (differ[i]) o += "<mark>";
    escape(o, words[i]);
    if (differ[i]) o += "</mark>";
    o += ' ';
  }
  o += words.size() > kShown ? "</p></details>" : "</p>";
  if (cut) o += "<p class=\"note\">(cut: only the first words were compared)</p>";
  o += "</div>";
}

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{width:100%;max-width:720px;height:auto;display:block}
.bar{fill:#4a78b0}.axis{stroke:#555}.tick{font-size:10px;fill:#444;text-anchor:middle}.label{font-size:11px;fill:#333;text-anchor:middle}
.curve{fill:none;stroke:#b04a4a;stroke-width:2}.point{fill:#4a78b0}.threshold{stroke:#888;stroke-dasharray:4 3}
.pair{display:flex;gap:1em;margin:1em 0;page-break-inside:avoid}.doc{flex:1;min-width:0;border:1px solid #ddd;padding:.5em;overflow-wrap:anywhere}
.docid{font-weight:600;font-size:12px;color:#555}mark{background:#ffd86b}.note{color:#666;font-size:12px}
@media print{details{display:block}details>summary{display:none}}
)";

}  // namespace

WordDiff word_diff(std::string_view a, std::string_view b, size_t max_words) {
  WordDiff d;
  d.a = tokens(a, max_words, d.cut);
  d.b = tokens(b, max_words, d.cut);
  const size_t n = d.a.size(), m = d.b.size();
  // Words compare as the shingles see them: case and the punctuation around them aside.
  auto key = [](const std::string& w) {
    size_t i = 0, j = w.size();
    while (i < j && std::ispunct(static_cast<unsigned char>(w[i]))) ++i;
    while (j > i && std::ispunct(static_cast<unsigned char>(w[j - 1]))) --j;
    std::string k = w.substr(i, j - i);
    for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return k.empty() ? w : k;
  };
  std::vector<std::string> ka(n), kb(m);
  for (size_t i = 0; i < n; ++i) ka[i] = key(d.a[i]);
  for (size_t j = 0; j < m; ++j) kb[j] = key(d.b[j]);
  // Longest common subsequence, by the usual table (at most max_words^2 cells of 16 bits).
  std::vector<uint16_t> t((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint16_t& { return t[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = ka[i] == kb[j] ? static_cast<uint16_t>(at(i + 1, j + 1) + 1) : std::max(at(i + 1, j), at(i, j + 1));
  d.differ_a.assign(n, true);
  d.differ_b.assign(m, true);
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (ka[i] == kb[j]) {
      d.differ_a[i++] = false;
      d.differ_b[j++] = false;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return d;
}

// One report page, a method per section, over the run's state.
class ReportPage {
 public:
  ReportPage(const Pipeline& pipeline, const ReportRun& r, const ReportLimits& l)
      : p(pipeline), run(r), limits(l), s(p.stats()), spec(p.spec()), cl(p.clustering()), groups(cluster_members(cl)), order(groups.size()) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a].size() > groups[b].size(); });
  }

  // The run.
  void run_table() {
    // The run.
    o += "<h2 id=\"run\">The run</h2><table>";
    auto row = [&](const std::string& k, const std::string& v) {
      o += "<tr><th>";
      escape(o, k);
      o += "</th><td>";
      escape(o, v);
      o += "</td></tr>";
    };
    if (!run.command.empty()) row("command", run.command);
    const auto& sources = p.inputs().sources();
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(sources.size(), 5); ++i) names += (i ? ", " : "") + sources[i].display;
    if (sources.size() > 5) names += ", and " + count(sources.size() - 5) + " more";
    row("inputs", count(sources.size()) + (sources.size() == 1 ? " file: " : " files: ") + names);
    row("documents", count(s.documents) + " (" + count(s.empty) + " empty, " + count(s.reader.skipped) + " bad records skipped)");
    row("text", bytes(static_cast<double>(s.text_bytes)) + ", " + count(s.shingles) + " shingles");
    row("spec", spec.to_string());
    row("found", count(s.candidates) + " candidate pairs verified, " + count(s.verified) + " above the threshold; " + count(s.clusters) +
                     " clusters, " + count(s.removed) + " removed");
    if (s.removed_below_threshold > 0)
      row("through chains", count(s.removed_below_threshold) + " removed documents are less similar than the threshold to their kept one");
    const StageTimes& t = s.times;
    row("time per stage", "read+shingle+sketch " + num(t.pass1, 2) + " s, candidates " + num(t.lsh, 2) + " s, verify " + num(t.verify, 2) +
                              " s, cluster " + num(t.cluster, 2) + " s, write " + num(t.write, 2) + " s");
    if (run.seconds > 0)
      row("throughput", num(run.seconds, 2) + " s in all, " + num(static_cast<double>(s.text_bytes) / 1e6 / run.seconds, 0) + " MB/s of text");
    if (run.peak_memory_bytes > 0) row("peak memory", bytes(run.peak_memory_bytes));
    o += "</table>";
  }

  // Similarities.
  void similarities() {
    // Similarities.
    std::vector<uint64_t> bins(kSimilarityBins, 0);
    if (run.dedup) {
      for (const double v : p.removed_similarity()) ++bins[similarity_bin(v)];
    } else {
      bins = run.pair_bins;
      bins.resize(kSimilarityBins, 0);
    }
    o += "<h2 id=\"similarities\">" + std::string(run.dedup ? "Removed documents by their similarity to the kept one" : "Pairs by similarity") + "</h2>";
    similarity_chart(o, bins, run.dedup ? "removed documents" : "pairs");
  }

  // Clusters.
  void clusters() {
    // Clusters.
    o += "<h2 id=\"clusters\">Clusters</h2>";
    if (groups.empty()) {
      o += "<p class=\"note\">No cluster of two documents or more.</p>";
    } else {
      std::map<int, uint64_t> by_size;  // log2 classes: 2, 3-4, 5-8, ...
      for (const auto& g : groups) ++by_size[static_cast<int>(std::ceil(std::log2(static_cast<double>(g.size()))))];
      std::vector<Bar> bars;
      for (const auto& [c, n] : by_size) {
        const uint64_t lo = c <= 1 ? 2 : (uint64_t{1} << (c - 1)) + 1, hi = uint64_t{1} << c;
        Bar b;
        b.value = static_cast<double>(n);
        b.label = lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
        b.title = b.label + " documents: " + count(n) + " clusters";
        b.data = "data-sizes=\"" + b.label + "\" data-count=\"" + std::to_string(n) + "\"";
        bars.push_back(b);
      }
      bar_chart(o, "cluster-sizes", bars, true, "documents per cluster", "clusters");
      o += "<table id=\"largest\"><tr><th>documents</th><th>kept</th><th>others</th></tr>";
      for (size_t i = 0; i < std::min(order.size(), limits.largest_clusters); ++i) {
        const auto& g = groups[order[i]];
        o += "<tr><td class=\"n\">" + count(g.size()) + "</td><td>";
        escape(o, p.id(cl.keeper[g.front()]));
        o += "</td><td>";
        size_t shown = 0;
        for (const DocId d : g) {
          if (cl.kept(d) || shown == 3) continue;
          o += shown++ ? ", " : "";
          escape(o, p.id(d));
        }
        if (g.size() > 4) o += ", ...";
        o += "</td></tr>";
      }
      o += "</table>";
    }
  }

  // The S-curve and the measured collision rate; the pairs sampled.
  size_t s_curve() {
    // The S-curve and the measured collision rate.
    size_t sampled = 0;
    if (uses_signatures(spec.method)) {
      const int b = spec.lsh.bands, r = spec.lsh.rows;
      o += "<h2 id=\"s-curve\">The S-curve of " + std::to_string(b) + " bands of " + std::to_string(r) + " rows</h2>";
      // Pairs within clusters, spread over the clusters, scored exactly: the fraction of each
      // similarity bin that shares a band is the collision rate LSH achieved.
      constexpr size_t kCurveBins = 20;
      std::vector<uint64_t> n(kCurveBins, 0), hit(kCurveBins, 0);
      const size_t per_cluster = groups.empty() ? 0 : std::max<size_t>(20, limits.curve_pairs / groups.size());
      for (const auto& g : groups) {
        size_t taken = 0;
        const size_t pairs = g.size() * (g.size() - 1) / 2;
        const size_t stride = std::max<size_t>(1, pairs / per_cluster);
        size_t k = 0;
        for (size_t y = 1; y < g.size() && taken < per_cluster && sampled < limits.curve_pairs; ++y)
          for (size_t x = 0; x < y && taken < per_cluster && sampled < limits.curve_pairs; ++x, ++k) {
            if (k % stride != 0) continue;
            const double j = p.similarity(g[x], g[y]);
            const size_t bin = std::min(kCurveBins - 1, static_cast<size_t>(j * kCurveBins));
            ++n[bin];
            hit[bin] += p.share_band(g[x], g[y]) ? 1 : 0;
            ++taken;
            ++sampled;
          }
      }
      const double w = 640, h = 260, left = 48, bottom = 36, top = 10;
      auto X = [&](double v) { return left + (w - left - 10) * v; };
      auto Y = [&](double v) { return h - bottom - (h - bottom - top) * v; };
      o += "<svg class=\"chart\" id=\"s-curve-chart\" viewBox=\"0 0 " + num(w, 0) + " " + num(h, 0) + "\" role=\"img\" aria-label=\"S-curve\">";
      o += "<line class=\"axis\" x1=\"" + num(X(0), 0) + "\" y1=\"" + num(Y(0), 0) + "\" x2=\"" + num(X(1), 0) + "\" y2=\"" + num(Y(0), 0) + "\"/>";
      o += "<line class=\"axis\" x1=\"" + num(X(0), 0) + "\" y1=\"" + num(Y(0), 0) + "\" x2=\"" + num(X(0), 0) + "\" y2=\"" + num(Y(1), 0) + "\"/>";
      o += "<line class=\"threshold\" x1=\"" + num(X(spec.threshold), 1) + "\" y1=\"" + num(Y(0), 0) + "\" x2=\"" + num(X(spec.threshold), 1) +
           "\" y2=\"" + num(Y(1), 0) + "\"><title>threshold " + num(spec.threshold, 2) + "</title></line>";
      o += "<polyline class=\"curve\" points=\"";
      for (int i = 0; i <= 100; ++i) {
        const double x = i / 100.0;
        o += num(X(x), 1) + "," + num(Y(lsh_probability(x, b, r)), 1) + " ";
      }
      o += "\"><title>P(s) = 1 - (1 - s^" + std::to_string(r) + ")^" + std::to_string(b) + "</title></polyline>";
      for (size_t i = 0; i < kCurveBins; ++i) {
        if (n[i] < 5) continue;
        const double mid = (static_cast<double>(i) + 0.5) / kCurveBins, rate = static_cast<double>(hit[i]) / static_cast<double>(n[i]);
        o += "<circle class=\"point\" cx=\"" + num(X(mid), 1) + "\" cy=\"" + num(Y(rate), 1) + "\" r=\"4\" data-s=\"" + num(mid, 3) +
             "\" data-rate=\"" + num(rate, 4) + "\" data-n=\"" + std::to_string(n[i]) + "\"><title>J " + num(mid - 0.025, 2) + "-" +
             num(mid + 0.025, 2) + ": " + count(hit[i]) + " of " + count(n[i]) + " pairs share a band (" + num(100 * rate, 1) +
             "%); the curve promises " + num(100 * lsh_probability(mid, b, r), 1) + "%</title></circle>";
      }
      for (int i = 0; i <= 10; i += 2) {
        o += "<text class=\"tick\" x=\"" + num(X(i / 10.0), 1) + "\" y=\"" + num(Y(0) + 14, 0) + "\">" + num(i / 10.0, 1) + "</text>";
        o += "<text class=\"tick\" x=\"" + num(X(0) - 6, 1) + "\" y=\"" + num(Y(i / 10.0) + 3, 1) + "\" text-anchor=\"end\">" + num(i / 10.0, 1) + "</text>";
      }
      o += "<text class=\"label\" x=\"" + num(w / 2, 0) + "\" y=\"" + num(h - 4, 0) + "\">Jaccard similarity</text>";
      o += "<text class=\"label\" x=\"12\" y=\"" + num(h / 2, 0) + "\" transform=\"rotate(-90 12 " + num(h / 2, 0) + ")\">probability of sharing a band</text>";
      o += "</svg><p class=\"note\">The line is the probability that a pair of similarity s shares at least one band; the points are "
           "the fraction of pairs within clusters (" + count(sampled) + " sampled, exact similarity) that did, per bin of 0.05 with 5 "
           "pairs or more. Points below the line where it matters (at and above the threshold) are where recall is lost; pairs that "
           "share no band are still joined through others in their cluster.</p>";
    }
    return sampled;
  }

  // Removed share per input.
  void per_input() {
    const auto& sources = p.inputs().sources();
    // Removed share per input.
    if (run.dedup) {
      o += "<h2 id=\"per-input\">Removed per input file</h2>";
      if (p.size() > 0 && p.source_of(0) >= 0) {
        std::vector<uint64_t> docs(sources.size(), 0), removed(sources.size(), 0);
        for (DocId d = 0; d < p.size(); ++d) {
          const auto src = static_cast<size_t>(p.source_of(d));
          ++docs[src];
          removed[src] += cl.kept(d) ? 0 : 1;
        }
        std::vector<size_t> by(sources.size());
        for (size_t i = 0; i < by.size(); ++i) by[i] = i;
        std::stable_sort(by.begin(), by.end(), [&](size_t a, size_t b) { return removed[a] > removed[b]; });
        o += "<table id=\"removed-per-input\"><tr><th>input</th><th>documents</th><th>removed</th><th>share</th></tr>";
        for (size_t i = 0; i < std::min<size_t>(by.size(), 30); ++i) {
          const size_t src = by[i];
          o += "<tr data-removed=\"" + std::to_string(removed[src]) + "\"><td>";
          escape(o, sources[src].display);
          o += "</td><td class=\"n\">" + count(docs[src]) + "</td><td class=\"n\">" + count(removed[src]) + "</td><td class=\"n\">" +
               num(docs[src] ? 100.0 * static_cast<double>(removed[src]) / static_cast<double>(docs[src]) : 0, 1) + "%</td></tr>";
        }
        o += "</table>";
        if (by.size() > 30) o += "<p class=\"note\">The 30 inputs with the most removed documents, of " + count(by.size()) + ".</p>";
      } else {
        o += "<p class=\"note\">Per input file for JSONL inputs (each plain-text file is one document).</p>";
      }
    }
  }

  // Side by side; the pairs shown.
  size_t side_by_side() {
    // Side by side: the largest clusters (kept against its least similar member), then pairs just
    // above the threshold.
    std::vector<std::pair<DocId, DocId>> shown;
    const size_t half = std::max<size_t>(1, limits.side_by_side / 2);
    for (size_t i = 0; i < order.size() && shown.size() < half; ++i) {
      const auto& g = groups[order[i]];
      const DocId kept = cl.keeper[g.front()];
      DocId worst = kept;
      double least = 2;
      for (const DocId d : g) {
        if (d == kept) continue;
        const double sim = p.similarity(std::min(d, kept), std::max(d, kept));
        if (sim < least) least = sim, worst = d;
      }
      if (worst != kept) shown.push_back({kept, worst});
    }
    std::vector<std::pair<DocId, DocId>> borderline;
    if (run.dedup) {
      const auto sims = p.removed_similarity();
      size_t r = 0;
      for (DocId d = 0; d < p.size(); ++d) {
        if (cl.kept(d)) continue;
        const double v = sims[r++];
        if (v + kSimilarityEpsilon >= spec.threshold && v < spec.threshold + 0.05) borderline.push_back({cl.keeper[d], d});
      }
    } else {
      for (const ScoredPair& q : run.borderline) borderline.push_back({q.a, q.b});
    }
    for (size_t i = 0; i < borderline.size() && shown.size() < limits.side_by_side; i += std::max<size_t>(1, borderline.size() / half))
      shown.push_back(borderline[i]);
    o += "<h2 id=\"side-by-side\">Side by side</h2>";
    if (shown.empty()) o += "<p class=\"note\">No pair to show.</p>";
    std::vector<DocId> need;
    for (const auto& [a, b] : shown) need.insert(need.end(), {a, b});
    std::sort(need.begin(), need.end());
    need.erase(std::unique(need.begin(), need.end()), need.end());
    const std::vector<std::string> texts = p.texts(need);
    auto text_of = [&](DocId d) -> const std::string& { return texts[place_in(need, d)]; };
    for (const auto& [a, b] : shown) {
      const double sim = p.similarity(std::min(a, b), std::max(a, b));
      const WordDiff d = word_diff(text_of(a), text_of(b), limits.words);
      o += "<section class=\"pair-block\" data-similarity=\"" + num(sim, 6) + "\"><h3>";
      escape(o, p.id(a));
      o += " and ";
      escape(o, p.id(b));
      o += ": J = " + num(sim, 3) + "</h3><div class=\"pair\">";
      const bool dedup_pair = run.dedup && cl.keeper[b] == a;
      doc_column(o, d.a, d.differ_a, d.cut, p.id(a), dedup_pair ? "kept" : "first");
      doc_column(o, d.b, d.differ_b, d.cut, p.id(b), dedup_pair ? "removed" : "second");
      o += "</div></section>";
    }
    return shown.size();
  }

  // Skipped records.
  void skipped() {
    // Skipped records.
    o += "<h2 id=\"skipped\">Skipped records</h2>";
    if (s.reader.skipped == 0) {
      o += "<p>None.</p>";
    } else {
      o += "<table id=\"skip-kinds\"><tr><th>reason</th><th>records</th></tr>";
      for (const auto& [kind, k] : s.reader.skip_kinds) {
        o += "<tr><td>";
        escape(o, render_options(kind));  // option references in the library's wording
        o += "</td><td class=\"n\">" + count(k) + "</td></tr>";
      }
      o += "</table><p>The first:</p><ul>";
      for (const auto& m : s.reader.first_skips) {
        o += "<li>";
        escape(o, render_options(m));
        o += "</li>";
      }
      o += "</ul>";
    }
  }

  std::string o;
  const Pipeline& p;
  const ReportRun& run;
  const ReportLimits& limits;
  const RunStats& s;
  const PipelineSpec& spec;
  const Clustering& cl;
  const std::vector<std::vector<DocId>> groups;
  std::vector<size_t> order;  // of the groups, largest first
};

void write_report(io::AtomicFile& out, const Pipeline& p, const ReportRun& run, const ReportLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  ReportPage page(p, run, limits);
  const RunStats& s = p.stats();
  std::string& o = page.o;
  o += "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>neardup report</title><style>";
  o += kStyle;
  o += "</style></head><body data-documents=\"" + std::to_string(s.documents) + "\" data-removed=\"" + std::to_string(s.removed) +
       "\" data-clusters=\"" + std::to_string(s.clusters) + "\" data-pairs=\"" + std::to_string(s.pairs) + "\" data-skipped=\"" +
       std::to_string(s.reader.skipped) + "\">";
  o += "<h1>neardup " + std::string(run.dedup ? "dedup" : "pairs") + ": " + count(s.documents) + " documents, " +
       (run.dedup ? count(s.removed) + " removed" : count(s.pairs) + " pairs") + "</h1>";
  page.run_table();
  page.similarities();
  page.clusters();
  const size_t sampled = page.s_curve();
  page.per_input();
  const size_t shown = page.side_by_side();
  page.skipped();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o += "<p class=\"note\" id=\"bounds\">This page was built in " + num(took, 2) + " s from samples: " + count(sampled) +
       " pairs within clusters for the S-curve (at most " + count(limits.curve_pairs) + "), the " +
       std::to_string(limits.largest_clusters) + " largest clusters, " + std::to_string(shown) +
       " pairs side by side compared on their first " + count(limits.words) + " words.</p>";
  o += "</body></html>\n";
  out.write(o);
}

}  // namespace neardup
