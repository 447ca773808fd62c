// `neardup eval`: recall and precision of reported pairs against exact ground truth, overall
// and per similarity bin, with the misses and false positives on request.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "json.h"
#include "neardup/neardup.h"

namespace neardup::cli {
namespace {

struct EvalCliOptions {
  std::string truth, pairs, output = "-";
  double threshold = -1, floor = -1;
  bool list = false, json = false;
  bool quiet = false;
};

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string report_text(const EvalResult& r, const EvalCliOptions& o) {
  std::string out;
  const auto& a = r.overall;
  out += "truth:     " + o.truth + ": " + std::to_string(r.truth_pairs) + " pairs (floor " + fmt("%.2f", r.floor) + "), " +
         std::to_string(a.positives) + " with similarity >= " + fmt("%g", r.threshold) + "\n";
  out += "reported:  " + o.pairs + ": " + std::to_string(r.reported_pairs) + " pairs, " + std::to_string(a.predictions) +
         " with score >= " + fmt("%g", r.threshold) +
         (r.repeated_pairs ? " (" + std::to_string(r.repeated_pairs) + " repeated lines ignored)" : "") + "\n";
  out += "recall:    " + fmt("%.4f", a.recall()) + "  (" + std::to_string(a.found) + " of " + std::to_string(a.positives) + ")\n";
  out += "precision: " + fmt("%.4f", a.precision()) + "  (" + std::to_string(a.correct) + " of " + std::to_string(a.predictions) + ")\n";
  out += "F1:        " + fmt("%.4f", r.f1()) + "\n";
  out += "score error on correct pairs: mean " + fmt("%.6f", r.mean_abs_error) + ", max " + fmt("%.6f", r.max_abs_error) + "\n\n";
  out += "bin        positives     found  recall   reported   correct  precision\n";
  for (const auto& b : r.bins) {
    // An empty bin has no recall or precision to show.
    const std::string rec = b.positives ? fmt("%6.4f", b.recall()) : "     -";
    const std::string prec = b.predictions ? fmt("%6.4f", b.precision()) : "     -";
    char line[160];
    std::snprintf(line, sizeof line, "%.1f-%.1f  %10llu %9llu  %s %10llu %9llu     %s\n", b.lo, b.hi,
                  static_cast<unsigned long long>(b.positives), static_cast<unsigned long long>(b.found), rec.c_str(),
                  static_cast<unsigned long long>(b.predictions), static_cast<unsigned long long>(b.correct), prec.c_str());
    out += line;
  }
  out += "(recall per bin of true similarity, precision per bin of reported score)\n";
  return out;
}

std::string json_escape(const std::string& s) {
  std::string out;
  append_json_string(out, s);
  return out.substr(1, out.size() - 2);
}

std::string bin_json(const EvalBin& b) {
  return "{\"lo\": " + fmt("%g", b.lo) + ", \"hi\": " + fmt("%g", b.hi) + ", \"positives\": " + std::to_string(b.positives) +
         ", \"found\": " + std::to_string(b.found) + ", \"recall\": " + fmt("%.6g", b.recall()) +
         ", \"reported\": " + std::to_string(b.predictions) + ", \"correct\": " + std::to_string(b.correct) +
         ", \"precision\": " + fmt("%.6g", b.precision()) + "}";
}

std::string report_json(const EvalResult& r) {
  std::string out = "{\"threshold\": " + fmt("%g", r.threshold) + ", \"floor\": " + fmt("%g", r.floor) +
                    ", \"truth_pairs\": " + std::to_string(r.truth_pairs) + ", \"reported_pairs\": " +
                    std::to_string(r.reported_pairs) + ", \"repeated_pairs\": " + std::to_string(r.repeated_pairs) +
                    ", \"f1\": " + fmt("%.6g", r.f1()) + ", \"mean_abs_error\": " + fmt("%.6g", r.mean_abs_error) +
                    ", \"max_abs_error\": " + fmt("%.6g", r.max_abs_error) + ", \"overall\": " + bin_json(r.overall) +
                    ", \"bins\": [";
  for (size_t i = 0; i < r.bins.size(); ++i) out += (i ? ", " : "") + bin_json(r.bins[i]);
  out += "]";
  const auto list = [&](const char* name, const std::vector<EvalPair>& v) {
    out += std::string(", \"") + name + "\": [";
    for (size_t i = 0; i < v.size(); ++i)
      out += std::string(i ? ", " : "") + "[\"" + json_escape(v[i].id1) + "\", \"" + json_escape(v[i].id2) + "\", " +
             (v[i].score < 0 ? "null" : fmt("%.6f", v[i].score)) + ", " + (v[i].truth < 0 ? "null" : fmt("%.6f", v[i].truth)) + "]";
    out += "]";
  };
  if (!r.misses.empty() || !r.false_positives.empty()) {
    list("misses", r.misses);
    list("false_positives", r.false_positives);
  }
  return out + "}\n";
}

std::string report_list(const EvalResult& r) {
  std::string out;
  const auto num = [](double x) { return x < 0 ? std::string("-") : fmt("%.6f", x); };
  for (const auto& p : r.misses) out += "miss\t" + p.id1 + "\t" + p.id2 + "\t" + num(p.score) + "\t" + num(p.truth) + "\n";
  for (const auto& p : r.false_positives)
    out += "false_positive\t" + p.id1 + "\t" + p.id2 + "\t" + num(p.score) + "\t" + num(p.truth) + "\n";
  return out;
}

int run_eval(const EvalCliOptions& o) {
  EvalOptions e;
  if (o.threshold >= 0) e.threshold = o.threshold;
  if (o.floor >= 0) e.truth_floor = o.floor;
  e.list = o.list;
  const EvalResult r = evaluate_pairs(o.truth, o.pairs, e);
  io::AtomicFile out(o.output);
  out.write(o.json ? report_json(r) : o.list ? report_list(r) : report_text(r, o));
  out.commit();
  if (o.list && !o.json && !o.quiet)
    std::fprintf(stderr, "neardup: eval: recall %.4f (%llu misses), precision %.4f (%llu false positives) at %g\n",
                 r.overall.recall(), static_cast<unsigned long long>(r.misses.size()), r.overall.precision(),
                 static_cast<unsigned long long>(r.false_positives.size()), r.threshold);
  return kExitOk;
}

}  // namespace

void add_eval(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<EvalCliOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Recall and precision of reported pairs against exact ground truth");
  cmd->add_option("pairs", o->pairs, "Reported pairs: id1 TAB id2 TAB score per line (the output of 'neardup pairs')")->required();
  cmd->add_option("--truth", o->truth, "Every pair at or above the truth's floor: id1 TAB id2 TAB similarity (.gz/.zst/.xz/.bz2 read)")->required();
  cmd->add_option("-t,--threshold", o->threshold,
                  "Judge at T: positives are truth pairs >= T, predictions are reported pairs with score >= T (default: the floor)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--truth-floor", o->floor,
                  "The truth lists every pair with similarity >= this (default: 0.5, or its smallest similarity rounded down to 0.01 if lower)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--list", o->list,
                "Write the misses and false positives instead of the report: kind TAB id1 TAB id2 TAB score TAB truth ('-' where absent)");
  cmd->add_flag("--json", o->json, "Print the report (and with --list, the pairs) as one JSON object");
  cmd->add_option("-o,--output", o->output, "Output file (default: stdout)");
  cmd->add_flag("-q,--quiet", o->quiet, "No summary on stderr");
  cmd->callback([&run, o] { run = [o] { return run_eval(*o); }; });
}

}  // namespace neardup::cli
