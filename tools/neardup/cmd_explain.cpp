// `neardup explain ID1 ID2 INPUT...`: why two documents are (or are not) near-duplicates: their
// exact Jaccard similarity, shingle counts, shared and differing shingles, the sketch's estimate,
// the LSH bands that collide, and a word diff (coloured on a terminal).
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "neardup/neardup.h"

namespace neardup::cli {
namespace {

struct ExplainOptions {
  Options common;
  std::string id1, id2;
  std::string pair_file;
  int context = 6;
};

// Word K-shingles as text, for showing them: the words split_words finds (the default word
// definition), K at a time.
std::vector<std::string> shingle_texts(std::string_view text, int k) {
  const std::vector<std::string> words = split_words(text);
  // A text of fewer than K words is one shingle of all its words, as the shingler makes it.
  const size_t kk = std::min(static_cast<size_t>(k), words.size());
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (size_t i = 0; kk > 0 && i + kk <= words.size(); ++i) {
    std::string s = words[i];
    for (size_t j = i + 1; j < i + kk; ++j) s += " " + words[j];
    if (seen.insert(s).second) out.push_back(std::move(s));
  }
  return out;
}

void print_list(const char* what, const std::vector<std::string>& items, size_t total) {
  std::printf("  %s (%zu):", what, total);
  for (size_t i = 0; i < std::min<size_t>(items.size(), 5); ++i) std::printf("%s\"%s\"", i ? ", " : " ", items[i].c_str());
  if (total > 5) std::printf(", ...");
  std::printf("\n");
}

// The word diff: differing words with a few words of context around each run (coloured on a
// terminal).
void print_word_diff(const std::string (&text)[2], const ExplainOptions& o) {
  const WordDiff d = word_diff(text[0], text[1], 20000);
  const bool colour = ::isatty(1) != 0;
  const char* del_on = colour ? "\033[31m" : "[-";
  const char* del_off = colour ? "\033[0m" : "-]";
  const char* add_on = colour ? "\033[32m" : "{+";
  const char* add_off = colour ? "\033[0m" : "+}";
  std::printf("  word diff (%s only in %s, %s only in %s):\n", colour ? "\033[31mred\033[0m" : "[-...-]", o.id1.c_str(),
              colour ? "\033[32mgreen\033[0m" : "{+...+}", o.id2.c_str());
  // Walk both word lists in step: common words advance both.
  size_t i = 0, jj = 0, shown = 0;
  std::vector<std::string> pending;  // common words since the last difference
  bool any = false;
  std::string line = "   ";
  auto flush_context = [&](bool before_change) {
    const size_t ctx = static_cast<size_t>(o.context);
    if (pending.size() > 2 * ctx && any) {
      for (size_t x = 0; x < ctx; ++x) line += " " + pending[x];
      std::printf("%s ...\n", line.c_str());
      line = "    ...";
      for (size_t x = pending.size() - ctx; x < pending.size(); ++x) line += " " + pending[x];
    } else if (!any && before_change) {
      if (pending.size() > ctx) line += " ...";
      for (size_t x = pending.size() > ctx ? pending.size() - ctx : 0; x < pending.size(); ++x) line += " " + pending[x];
    } else {
      for (const auto& w : pending) line += " " + w;
    }
    pending.clear();
  };
  while (i < d.a.size() || jj < d.b.size()) {
    if (i < d.a.size() && jj < d.b.size() && !d.differ_a[i] && !d.differ_b[jj]) {
      pending.push_back(d.a[i]);
      ++i, ++jj;
      continue;
    }
    flush_context(true);
    any = true;
    std::string run;
    for (; i < d.a.size() && d.differ_a[i]; ++i) run += (run.empty() ? "" : " ") + d.a[i];
    if (!run.empty()) line += std::string(" ") + del_on + run + del_off;
    run.clear();
    for (; jj < d.b.size() && d.differ_b[jj]; ++jj) run += (run.empty() ? "" : " ") + d.b[jj];
    if (!run.empty()) line += std::string(" ") + add_on + run + add_off;
    if (++shown == 200) break;
  }
  if (!any) {
    std::printf("    (the same words)\n");
  } else {
    const size_t ctx = static_cast<size_t>(o.context);
    for (size_t x = 0; x < std::min(ctx, pending.size()); ++x) line += " " + pending[x];
    std::printf("%s%s\n", line.c_str(), pending.size() > ctx ? " ..." : "");
  }
  if (d.cut) std::printf("  (the diff covers the first 20,000 words of each)\n");
}

int run_explain(const CLI::App* cmd, ExplainOptions& o) {
  if (!o.pair_file.empty()) {
    // The positionals were all inputs.
    std::vector<std::string> all;
    for (const std::string* p : {&o.id1, &o.id2})
      if (!p->empty()) all.push_back(*p);
    all.insert(all.end(), o.common.inputs.begin(), o.common.inputs.end());
    o.common.inputs = std::move(all);
    std::FILE* f = std::fopen(o.pair_file.c_str(), "r");
    if (!f) throw IoError(o.pair_file + ": cannot open it; check --pair");
    char buf[4096];
    const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
    std::fclose(f);
    const std::string line = got ? std::string(buf) : std::string();
    const size_t t1 = line.find('\t'), t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos)
      throw FormatError(o.pair_file + ":1: not a pairs line (id1 TAB id2 TAB similarity); give a file that neardup pairs wrote");
    o.id1 = line.substr(0, t1);
    o.id2 = line.substr(t1 + 1, t2 - t1 - 1);
  }
  if (o.id1.empty() || o.id2.empty() || o.common.inputs.empty())
    throw UsageError("explain needs two ids and the inputs that hold them: neardup explain ID1 ID2 INPUT... (or --pair FILE INPUT...)");
  PipelineSpec spec = make_spec(cmd, o.common).resolved();
  io::ReaderOptions ro = o.common.reader;
  io::InputSet inputs(o.common.inputs, ro);
  io::RecordReader reader(inputs, ro);
  io::Record rec;
  std::string text[2], where[2];
  bool found[2] = {false, false};
  while ((!found[0] || !found[1]) && reader.next(rec)) {
    for (int i = 0; i < 2; ++i)
      if (!found[i] && rec.id == (i == 0 ? o.id1 : o.id2)) {
        found[i] = true;
        text[i] = std::string(rec.text);
        const io::Source& src = inputs.sources()[rec.source];
        where[i] = rec.line ? src.display + ":" + std::to_string(rec.line) : src.display;
      }
  }
  for (int i = 0; i < 2; ++i)
    if (!found[i])
      throw UsageError(std::string("id \"") + (i == 0 ? o.id1 : o.id2) + "\" is in none of the inputs; check the id and --id-field");

  DocumentSketcher sk[2] = {DocumentSketcher(spec), DocumentSketcher(spec)};
  std::vector<ShingleHash> set[2];
  size_t with_repeats[2];
  for (int i = 0; i < 2; ++i) {
    with_repeats[i] = sk[i].shingle(text[i]).size();
    set[i] = sk[i].set();
  }
  const double j = jaccard(set[0], set[1]);
  size_t shared = 0;
  for (size_t a = 0, b = 0; a < set[0].size() && b < set[1].size();) {
    if (set[0][a] == set[1][b]) {
      ++shared, ++a, ++b;
    } else if (set[0][a] < set[1][b]) {
      ++a;
    } else {
      ++b;
    }
  }
  std::printf("%s (%s) and %s (%s)\n", o.id1.c_str(), where[0].c_str(), o.id2.c_str(), where[1].c_str());
  std::printf("  spec: %s\n", spec.to_string().c_str());
  std::printf("  exact Jaccard: ");
  std::string js;
  io::append_similarity(js, j);
  std::printf("%s (%zu shared of %zu distinct shingles; threshold %.2f: %s)\n", js.c_str(), shared, set[0].size() + set[1].size() - shared,
              spec.threshold, j + kSimilarityEpsilon >= spec.threshold ? "near-duplicates" : "not near-duplicates");
  std::printf("  shingles: %zu (%zu distinct) and %zu (%zu distinct)\n", with_repeats[0], set[0].size(), with_repeats[1], set[1].size());
  if (spec.shingle.kind == ShingleKind::Words) {
    const auto a = shingle_texts(text[0], spec.shingle.k), b = shingle_texts(text[1], spec.shingle.k);
    const std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
    std::vector<std::string> both, only_a, only_b;
    for (const auto& s : a) (sb.count(s) ? both : only_a).push_back(s);
    for (const auto& s : b)
      if (!sa.count(s)) only_b.push_back(s);
    print_list("shared", both, both.size());
    print_list(("only in " + o.id1).c_str(), only_a, only_a.size());
    print_list(("only in " + o.id2).c_str(), only_b, only_b.size());
  }
  if (uses_signatures(spec.method)) {
    const size_t k = static_cast<size_t>(spec.num_perm);
    std::vector<SigValue> sig[2] = {std::vector<SigValue>(k), std::vector<SigValue>(k)};
    for (int i = 0; i < 2; ++i) sk[i].signature(sig[i]);
    size_t equal = 0;
    for (size_t x = 0; x < k; ++x) equal += sig[0][x] == sig[1][x];
    std::vector<int> bands;
    for (int b = 0; b < spec.lsh.bands; ++b)
      if (signature_band_key(sig[0], b, spec.lsh, spec.shingle.seed) == signature_band_key(sig[1], b, spec.lsh, spec.shingle.seed))
        bands.push_back(b);
    std::printf("  sketch estimate: %.6f (%zu of %zu values equal)\n", static_cast<double>(equal) / static_cast<double>(k), equal, k);
    std::string which;
    for (size_t i = 0; i < std::min<size_t>(bands.size(), 12); ++i) which += (i ? "," : " (bands ") + std::to_string(bands[i]);
    if (!bands.empty()) which += bands.size() > 12 ? ", ...)" : ")";
    std::printf("  LSH: %zu of %d bands of %d rows collide%s: %s; a pair at J = %.3f is a candidate with probability %.4f\n",
                bands.size(), spec.lsh.bands, spec.lsh.rows, which.c_str(), bands.empty() ? "not a candidate" : "a candidate", j,
                lsh_probability(j, spec.lsh.bands, spec.lsh.rows));
  } else if (spec.method == SketchMethod::SimHash) {
    DocumentSketcher sh[2] = {DocumentSketcher(spec), DocumentSketcher(spec)};
    uint64_t h[2];
    for (int i = 0; i < 2; ++i) {
      sh[i].shingle(text[i]);
      h[i] = sh[i].simhash();
    }
    const int d = hamming_distance(h[0], h[1]);
    std::printf("  SimHash: distance %d of 64 bits (estimate 1 - d/64 = %.6f); %s --hamming %d: %s\n", d, simhash_similarity(d),
                d <= spec.hamming ? "within" : "beyond", spec.hamming, d <= spec.hamming ? "a candidate" : "not a candidate");
  }
  print_word_diff(text, o);
  return kExitOk;
}

}  // namespace

void add_explain(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand("explain", "Explain one pair: exact Jaccard, shingles, sketch estimate, colliding bands, word diff");
  cmd->add_option("id1", o->id1, "The first document's id")->required();
  cmd->add_option("id2", o->id2, "The second document's id (not with --pair)");
  cmd->add_option("inputs", o->common.inputs, "The inputs that hold the two documents");
  cmd->add_option("--pair", o->pair_file, "Take the two ids from the first line of a pairs file (then every positional is an input)");
  cmd->add_option("--context", o->context, "Words shown around each difference")->default_val(6)->check(CLI::Range(0, 1000));
  add_sketch_options(cmd, o->common);
  add_reader_options(cmd, o->common);
  // What explain does not use: it verifies exactly and shows the estimate whatever --verify
  // says, and writes no rejects.
  for (const char* unused : {"--verify", "--rejects"}) cmd->remove_option(cmd->get_option(unused));
  cmd->get_option("--threshold")->description("Similarity threshold T: the pair is called near-duplicates at J >= T");
  cmd->add_flag("-q,--quiet", o->common.quiet, "No messages on stderr (it prints none but errors)");
  cmd->callback([&run, cmd, o] { run = [=] { return run_explain(cmd, *o); }; });
}

}  // namespace neardup::cli
