// `neardup tune`: LSH bands and rows from target rates on the S-curve (Mining of Massive Datasets, ch. 3), with the curve
// in the terminal or as SVG, and optionally predictions from a sample of the corpus.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "commands.h"
#include "options.h"
#include "neardup/neardup.h"

namespace neardup::cli {
namespace {

struct TuneOptions {
  int num_perm = kDefaultNumPerm;
  double threshold = kDefaultThreshold;
  double margin = 0.1;
  double fn_rate = 0.01, fp_rate = 0.01;
  std::string low, high;  // S:P
  std::string plot;
  bool json = false;
  bool quiet = false;
  std::vector<std::string> sample;
  size_t sample_docs = 2000;
  int shingle = kDefaultShingle;
  int chars = 0;
  uint64_t seed = kDefaultSeed;
  io::ReaderOptions reader;
  int threads = 0;
};

std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "S:P" -> (S, P).
std::pair<double, double> parse_point(const std::string& s, const char* flag) {
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("");
    size_t used1 = 0, used2 = 0;
    const double a = std::stod(s.substr(0, colon), &used1), b = std::stod(s.substr(colon + 1), &used2);
    if (used1 != colon || used2 != s.size() - colon - 1) throw std::invalid_argument("");
    return {a, b};
  } catch (const std::exception&) {
    throw UsageError(std::string(flag) + " takes SIMILARITY:PROBABILITY, for example 0.5:0.99; got '" + s + "'");
  }
}

std::string curve_ascii(const LshParams& p, const LshTarget& t) {
  constexpr int W = 61, H = 16;
  std::vector<std::string> grid(H + 1, std::string(W, ' '));
  for (int x = 0; x < W; ++x) {
    const double s = static_cast<double>(x) / (W - 1);
    const int y = static_cast<int>(std::lround(lsh_probability(s, p.bands, p.rows) * H));
    grid[H - y][x] = '*';
  }
  const auto mark = [&](double s, double pr, char c) {
    const int x = static_cast<int>(std::lround(s * (W - 1))), y = static_cast<int>(std::lround(pr * H));
    grid[H - y][x] = c;
  };
  mark(t.low, t.low_max, 'L');
  mark(t.high, t.high_min, 'H');
  std::string out;
  for (int y = 0; y <= H; ++y) {
    char label[16];
    if (y == 0 || y == H / 2 || y == H)
      std::snprintf(label, sizeof label, "%4.2f |", 1.0 - static_cast<double>(y) / H);
    else
      std::snprintf(label, sizeof label, "     |");
    out += std::string("  ") + label + grid[y] + "\n";
  }
  out += "       +" + std::string(W, '-') + "\n";
  out += "        0" + std::string(W / 2 - 3, ' ') + "0.5" + std::string(W / 2 - 3, ' ') + "1  similarity\n";
  out += "        * P(s)   L, H: the targets (at most L's probability, at least H's)\n";
  return out;
}

std::string curve_svg(const LshChoice& c, const LshTarget& t, int num_perm) {
  constexpr double W = 640, H = 400, M = 50;
  const auto X = [&](double s) { return M + s * (W - 2 * M); };
  const auto Y = [&](double p) { return H - M - p * (H - 2 * M); };
  char buf[512];
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                W, H, W, H);
  svg += buf;
  std::snprintf(buf, sizeof buf,
                "<text x=\"%g\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">LSH S-curve: %d bands x %d rows "
                "(%d permutations), P(s) = 1 - (1 - s^%d)^%d</text>\n",
                W / 2, c.params.bands, c.params.rows, num_perm, c.params.rows, c.params.bands);
  svg += buf;
  // Axes and grid.
  for (int i = 0; i <= 10; ++i) {
    const double v = i / 10.0;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.1f</text>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n",
                  X(v), Y(0), X(v), Y(1), X(0), Y(v), X(1), Y(v), X(v), Y(0) + 16, v, X(0) - 6, Y(v) + 4, v);
    svg += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">Jaccard similarity s</text>"
                "<text x=\"14\" y=\"%g\" text-anchor=\"middle\" transform=\"rotate(-90 14 %g)\">P(candidate)</text>\n",
                W / 2, H - 12, H / 2, H / 2);
  svg += buf;
  std::string pts;
  for (int i = 0; i <= 400; ++i) {
    const double s = i / 400.0;
    std::snprintf(buf, sizeof buf, "%.2f,%.2f ", X(s), Y(lsh_probability(s, c.params.bands, c.params.rows)));
    pts += buf;
  }
  svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
  const auto target = [&](double s, double p, const char* color, const char* label) {
    const bool right = s > 0.5;  // the label goes on the side with room, so the page never clips it
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" text-anchor=\"%s\">%s</text>\n",
                  X(s), Y(0), X(s), Y(1), color, X(s), Y(p), color, right ? X(s) - 6 : X(s) + 6, Y(p) - 6, color,
                  right ? "end" : "start", label);
    svg += buf;
  };
  char l1[96], l2[96];
  // XML: '<' and '>' in text are written as entities.
  std::snprintf(l1, sizeof l1, "P(%.3g) = %.4g (target &lt;= %.4g)", t.low, c.p_low, t.low_max);
  std::snprintf(l2, sizeof l2, "P(%.3g) = %.4g (target &gt;= %.4g)", t.high, c.p_high, t.high_min);
  target(t.low, t.low_max, "#d62728", l1);
  target(t.high, t.high_min, "#2ca02c", l2);
  svg += "</svg>\n";
  return svg;
}

SimilaritySample read_sample(const TuneOptions& o) {
  ShingleOptions so{o.chars ? ShingleKind::Chars : ShingleKind::Words, o.chars ? o.chars : o.shingle, o.seed};
  Shingler sh(so);
  io::InputSet in(o.sample, o.reader.format);
  io::RecordReader r(in, o.reader);
  io::Record rec;
  std::vector<std::string> texts;
  std::mt19937_64 rng(o.seed);  // reservoir sampling, deterministic for a seed
  uint64_t seen = 0;
  while (r.next(rec)) {
    ++seen;
    if (texts.size() < o.sample_docs) {
      texts.emplace_back(rec.text);
    } else {
      const uint64_t j = rng() % seen;
      if (j < o.sample_docs) texts[j].assign(rec.text);
    }
  }
  std::vector<std::vector<uint64_t>> sets;
  sets.reserve(texts.size());
  for (const auto& t : texts) sets.push_back(sh.shingle_set(t));
  SimilaritySample s;
  s.corpus_docs = seen;
  s.add_all_pairs(sets, o.threads);  // 0: every hardware thread
  return s;
}

// The two points of the S-curve asked for: --low and --high, or around --threshold.
LshTarget target_of(const CLI::App* cmd, const TuneOptions& o, bool points) {
  LshTarget t;
  if (points) {
    if (o.low.empty() || o.high.empty()) throw UsageError("--low and --high go together, for example --low 0.05:0.001 --high 0.5:0.99");
    if (cmd->count("--margin") || cmd->count("--fn-rate") || cmd->count("--fp-rate") || cmd->count("--threshold"))
      throw UsageError("give either --threshold (with --margin, --fn-rate, --fp-rate) or --low and --high, not both");
    std::tie(t.low, t.low_max) = parse_point(o.low, "--low");
    std::tie(t.high, t.high_min) = parse_point(o.high, "--high");
  } else {
    t.low = o.threshold - o.margin;
    t.high = o.threshold + o.margin;
    t.low_max = o.fp_rate;
    t.high_min = 1.0 - o.fn_rate;
    if (t.low < 0.0 || t.high > 1.0)
      throw UsageError("threshold " + fmt(o.threshold) + " with margin " + fmt(o.margin) +
                       " puts a target outside [0, 1]; use a smaller --margin");
  }
  t.check();
  return t;
}

int run_tune(const CLI::App* cmd, const TuneOptions& o) {
  if (!o.plot.empty() && !o.plot.ends_with(".svg") && !o.plot.starts_with("/dev/"))
    throw UsageError("--plot " + o.plot + ": the plot is written as SVG; name the file .svg (rsvg-convert or a browser turns it into PNG)");
  const bool points = !o.low.empty() || !o.high.empty();
  const LshTarget t = target_of(cmd, o, points);
  const LshChoice c = lsh_tune(o.num_perm, t);
  const LshChoice rule = lsh_tune_threshold(points ? t.high : o.threshold, o.num_perm);
  const int needed = c.met ? 0 : lsh_min_num_perm(t);
  std::unique_ptr<SimilaritySample> sample;
  if (!o.sample.empty()) sample = std::make_unique<SimilaritySample>(read_sample(o));
  const double recall_at = points ? t.high : o.threshold;

  // The rows shown: for each r, the fewest bands reaching the recall (the only b that can win
  // for that r), as long as b * r <= P; plus the choice.
  std::vector<LshChoice> rows;
  for (const LshChoice& x : lsh_tune_all(o.num_perm, t)) {
    if (x.p_high < t.high_min) continue;
    if (!rows.empty() && rows.back().params.rows == x.params.rows) continue;
    rows.push_back(x);
  }
  if (std::none_of(rows.begin(), rows.end(), [&](const LshChoice& x) { return x.params == c.params; })) rows.push_back(c);

  // Not met: the closest choice is printed, and stderr says so and what to change, so that a
  // script reading only stdout or --json is told too.
  if (!c.met && !o.quiet) {
    if (needed)
      std::fprintf(stderr, "neardup: warning: tune: no bands x rows of %d permutations meets both targets (the closest is printed); "
                   "pass --num-perm %d, or relax --low/--high (--margin, --fn-rate, --fp-rate)\n", o.num_perm, needed);
    else
      std::fprintf(stderr, "neardup: warning: tune: no bands x rows of up to 4096 permutations meets both targets (the closest is "
                   "printed); widen --margin or relax the rates\n");
  }
  if (!o.plot.empty()) {
    io::AtomicFile f(o.plot);  // the name was checked before the work
    f.write(curve_svg(c, t, o.num_perm));
    f.commit();
  }
  if (o.json) {
    std::printf("{\"bands\": %d, \"rows\": %d, \"num_perm\": %d, \"met\": %s, \"low\": %.6g, \"low_max\": %.6g, "
                "\"p_low\": %.6g, \"high\": %.6g, \"high_min\": %.6g, \"p_high\": %.6g, \"s_at_low_max\": %.6g, "
                "\"s_at_high_min\": %.6g, \"threshold\": %.6g, \"min_num_perm\": %d",
                c.params.bands, c.params.rows, o.num_perm, c.met ? "true" : "false", t.low, t.low_max, c.p_low, t.high,
                t.high_min, c.p_high, c.s_low, c.s_high, c.threshold, c.met ? o.num_perm : needed);
    if (sample) {
      std::printf(", \"sample\": {\"docs\": %llu, \"corpus_docs\": %llu, \"pairs_at_least\": %llu, \"considered\": [",
                  static_cast<unsigned long long>(sample->sample_docs), static_cast<unsigned long long>(sample->corpus_docs),
                  static_cast<unsigned long long>(sample->pairs_at_least(recall_at)));
      for (size_t i = 0; i < rows.size(); ++i) {
        const double rec = sample->expected_recall(rows[i].params, recall_at);
        std::printf("%s{\"bands\": %d, \"rows\": %d, \"predicted_candidates\": %.6g, \"expected_recall\": %s}", i ? ", " : "",
                    rows[i].params.bands, rows[i].params.rows, sample->predicted_candidates(rows[i].params),
                    rec < 0 ? "null" : std::to_string(rec).c_str());
      }
      std::printf("]}");
    }
    std::printf("}\n");
    return kExitOk;
  }

  std::printf("Target: P(%.4g) <= %.4g (false positives) and P(%.4g) >= %.4g (recall), %d permutations\n", t.low,
              t.low_max, t.high, t.high_min, o.num_perm);
  std::printf("Choice: %d bands x %d rows (%d of %d permutations)  %s\n", c.params.bands, c.params.rows,
              c.params.bands * c.params.rows, o.num_perm, c.met ? "target met" : "TARGET NOT MET");
  std::printf("  P(%.4g) = %.6g   P(%.4g) = %.6g\n", t.low, c.p_low, t.high, c.p_high);
  std::printf("  P(s) = %.4g at s = %.4f, %.4g at s = %.4f; threshold (1/b)^(1/r) = %.4f\n", t.low_max, c.s_low,
              t.high_min, c.s_high, c.threshold);
  if (!c.met) {
    if (needed)
      std::printf("  No (b, r) with b * r <= %d meets both; %d permutations would (--num-perm %d).\n", o.num_perm, needed, needed);
    else
      std::printf("  No (b, r) meets both with up to 4096 permutations; widen the margin or relax the rates.\n");
  }
  std::printf("  Spec: lsh:%dx%d   Flags: --num-perm %d --bands %d --rows %d\n", c.params.bands, c.params.rows,
              o.num_perm, c.params.bands, c.params.rows);
  std::printf("pairs/dedup --threshold %.4g would use %d x %d by default (the largest r with P(t) >= 0.99, b = "
              "floor(P/r))\n\n",
              points ? t.high : o.threshold, rule.params.bands, rule.params.rows);

  std::printf("  s     ");
  for (const auto& x : rows) std::printf(" %8s", (std::to_string(x.params.bands) + "x" + std::to_string(x.params.rows)).c_str());
  std::printf("\n");
  for (int i = 0; i <= 20; ++i) {
    const double s = i / 20.0;
    std::printf("  %.2f  ", s);
    for (const auto& x : rows) std::printf(" %8.5f", lsh_probability(s, x.params.bands, x.params.rows));
    std::printf("\n");
  }
  std::printf("  (columns: for each r, the fewest bands reaching the recall; the choice is %dx%d)\n\n",
              c.params.bands, c.params.rows);
  if (sample) {
    std::printf("Sample: %llu of %llu documents, %llu pairs, %llu with s >= %.4g\n",
                static_cast<unsigned long long>(sample->sample_docs), static_cast<unsigned long long>(sample->corpus_docs),
                static_cast<unsigned long long>(sample->sample_pairs()),
                static_cast<unsigned long long>(sample->pairs_at_least(recall_at)), recall_at);
    std::printf("  %-9s %22s %26s\n", "b x r", "predicted candidates", "expected recall at s >= t");
    for (const auto& x : rows) {
      const double rec = sample->expected_recall(x.params, recall_at);
      char rs[32];
      if (rec < 0)
        std::snprintf(rs, sizeof rs, "n/a (no sampled pair)");
      else
        std::snprintf(rs, sizeof rs, "%.4f", rec);
      std::printf("  %-9s %22.4g %26s\n", (std::to_string(x.params.bands) + "x" + std::to_string(x.params.rows)).c_str(),
                  sample->predicted_candidates(x.params), rs);
    }
    std::printf("\n");
  }
  std::printf("%s", curve_ascii(c.params, t).c_str());
  if (!o.plot.empty()) std::printf("S-curve written to %s\n", o.plot.c_str());
  return kExitOk;
}

}  // namespace

void add_tune(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* cmd = app.add_subcommand("tune", "Choose LSH bands and rows from target false-negative and false-positive rates");
  cmd->add_option("--num-perm", o->num_perm, "MinHash permutations available (b * r <= P)")
      ->default_val(kDefaultNumPerm)->check(rule_check("num_perm"));
  cmd->add_option("-t,--threshold", o->threshold, "Similarity threshold t; the targets are at t - margin and t + margin")
      ->default_val(kDefaultThreshold)->check(unit_interval());
  cmd->add_option("--margin", o->margin, "Distance d from the threshold of the two target similarities")
      ->default_val(0.1)->check(interval(0, 1, true, true));
  cmd->add_option("--fn-rate", o->fn_rate, "Largest false-negative rate allowed at t + d")->default_val(0.01)->check(interval(0, 1, true, true));
  cmd->add_option("--fp-rate", o->fp_rate, "Largest false-positive rate allowed at t - d")->default_val(0.01)->check(interval(0, 1, true, true));
  cmd->add_option("--low", o->low, "S:P, at most probability P of a candidate at similarity S (e.g. 0.05:0.001)");
  cmd->add_option("--high", o->high, "S:P, at least probability P of a candidate at similarity S (e.g. 0.5:0.99)");
  cmd->add_option("--plot", o->plot, "Write the S-curve as an SVG file");
  cmd->add_flag("--json", o->json, "Print the choice as one JSON object");
  cmd->add_flag("-q,--quiet", o->quiet, "No warnings on stderr");
  cmd->add_option("--sample", o->sample, "Inputs to sample: predict candidates and recall of each (b, r) from their pair similarities");
  cmd->add_option("--sample-docs", o->sample_docs, "Documents in the sample (uniform reservoir; all pairs are scored)")
      ->default_val(2000)->check(CLI::Range(size_t{2}, size_t{20000}));
  cmd->add_option("-k,--shingle", o->shingle, "Words per shingle for the sample")->default_val(kDefaultShingle)->check(rule_check("shingle"));
  cmd->add_option("--chars", o->chars, "Character N-gram shingles for the sample")->check(rule_check("chars"));
  cmd->add_option("--seed", o->seed, "Seed of the shingle hashes and of the sample");
  cmd->add_option("--text-field", o->reader.text_field, "JSONL field holding the text")->default_val("text");
  cmd->add_option("--id-field", o->reader.id_field, "JSONL field holding the id")->default_val("id");
  add_no_mmap_flag(cmd, o->reader);
  cmd->add_option("-j,--threads", o->threads, "Worker threads for scoring the sample")->check(rule_check("threads"));
  cmd->callback([&run, o, cmd] { run = [o, cmd] { return run_tune(cmd, *o); }; });
}

}  // namespace neardup::cli
