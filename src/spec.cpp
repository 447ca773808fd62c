#include "neardup/spec.h"

#include <algorithm>
#include <vector>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/option_rules.h"

namespace neardup {
namespace {

int parse_int(std::string_view token, std::string_view v) {
  int x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size())
    throw UsageError("bad pipeline spec token '" + std::string(token) + "': expected an integer");
  return x;
}

double parse_double(std::string_view token, std::string_view v) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size())
    throw UsageError("bad pipeline spec token '" + std::string(token) + "': expected a number");
  return x;
}

std::string format_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

}  // namespace

PipelineSpec PipelineSpec::parse(std::string_view text) {
  PipelineSpec s;
  std::istringstream in{std::string(text)};
  std::string token;
  bool verify_given = false;
  while (in >> token) {
    const size_t colon = token.find(':');
    if (token == "exact") {
      s.method = SketchMethod::Exact;
      continue;
    }
    if (colon == std::string::npos)
      throw UsageError("bad pipeline spec token '" + token + "': expected name:value (for example words:5)");
    const std::string_view name = std::string_view(token).substr(0, colon);
    const std::string_view value = std::string_view(token).substr(colon + 1);
    if (name == "normalize") {
      if (value != "nfkc" && value != "none")
        throw UsageError("bad pipeline spec token '" + token + "': normalize is nfkc or none");
      s.shingle.normalize = value == "nfkc" ? Normalization::Nfkc : Normalization::None;
    } else if (name == "wordbreak") {
      if (value != "icu" && value != "simple")
        throw UsageError("bad pipeline spec token '" + token + "': wordbreak is icu or simple");
      s.shingle.word_break = value == "icu" ? WordBreak::Icu : WordBreak::Simple;
    } else if (name == "words" || name == "chars") {
      s.shingle.kind = name == "words" ? ShingleKind::Words : ShingleKind::Chars;
      s.shingle.k = parse_int(token, value);
    } else if (name == "minhash") {
      s.method = SketchMethod::MinHash;
      s.num_perm = parse_int(token, value);
    } else if (name == "oph") {
      s.method = SketchMethod::Oph;
      s.num_perm = parse_int(token, value);
    } else if (name == "bottomk") {
      s.method = SketchMethod::BottomK;
      s.sketch_size = parse_int(token, value);
    } else if (name == "simhash") {
      s.method = SketchMethod::SimHash;
      s.hamming = parse_int(token, value);
    } else if (name == "weights") {
      if (value == "tf")
        s.weights = SimHashWeights::Tf;
      else if (value == "set")
        s.weights = SimHashWeights::Set;
      else if (value == "logtf")
        s.weights = SimHashWeights::LogTf;
      else
        throw UsageError("bad pipeline spec token '" + token + "': weights are tf, set or logtf");
    } else if (name == "lsh") {
      const size_t x = value.find('x');
      if (x == std::string_view::npos)
        throw UsageError("bad pipeline spec token '" + token + "': expected lsh:BANDSxROWS (for example lsh:16x8)");
      s.lsh.bands = parse_int(token, value.substr(0, x));
      s.lsh.rows = parse_int(token, value.substr(x + 1));
    } else if (name == "verify" || name == "estimate") {
      s.verify = name == "verify" ? VerifyMode::Exact : VerifyMode::Estimate;
      s.threshold = parse_double(token, value);
      verify_given = true;
    } else if (name == "seed") {
      uint64_t seed = 0;
      const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
      const std::string_view digits = hex ? value.substr(2) : value;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed, hex ? 16 : 10);
      if (ec != std::errc() || p != digits.data() + digits.size())
        throw UsageError("bad pipeline spec token '" + token + "': expected an integer seed");
      s.shingle.seed = seed;
    } else {
      throw UsageError("unknown pipeline spec token '" + token +
                       "' (known: words:K chars:N normalize:nfkc wordbreak:icu minhash:P oph:P bottomk:N simhash:K exact weights:W lsh:BxR verify:T estimate:T seed:S)");
    }
  }
  if (s.method == SketchMethod::SimHash && !verify_given) {
    s.verify = VerifyMode::Estimate;
    s.threshold = simhash_similarity(s.hamming);
  }
  return s;
}

namespace {

// A value against its rule in the table every driver's checks read (option_rules.h); `what`
// names it in the message, `shown` is the value as given.
void check_rule(std::string_view rule, double v, const std::string& what, const std::string& shown) {
  const NumberRule& r = number_rule(rule);
  if (rule_problem(r, v).empty()) return;
  const std::string range = r.integer ? "between " + std::to_string(static_cast<long long>(r.lo)) + " and " +
                                            std::to_string(static_cast<long long>(r.hi))
                                      : rule_range(r);
  throw UsageError(what + " must be " + range + ", got " + shown);
}

}  // namespace

PipelineSpec PipelineSpec::resolved() const {
  PipelineSpec s = *this;
  check_rule("shingle", s.shingle.k, "shingle size", std::to_string(s.shingle.k));
  check_rule("num_perm", s.num_perm, s.method == SketchMethod::Oph ? "OPH bins" : "permutations", std::to_string(s.num_perm));
  check_rule("threshold", s.threshold, "threshold", format_double(s.threshold));
  if (s.method == SketchMethod::SimHash) {
    check_rule("hamming", s.hamming, "Hamming distance", std::to_string(s.hamming));
    if (s.lsh.bands != 0 || s.lsh.rows != 0)
      throw UsageError("bands and rows apply to minhash and oph only; simhash finds pairs with permuted tables");
    return s;
  }
  if (s.method == SketchMethod::Exact) {
    if (s.verify != VerifyMode::Exact)
      throw UsageError("the exact method computes every similarity exactly; " NEARDUP_OPT_IS("verify", "estimate") " does not apply to it");
    if (s.lsh.bands != 0 || s.lsh.rows != 0)
      throw UsageError("bands and rows apply to minhash and oph only; the exact method joins the shingle sets, without LSH");
    return s;
  }
  if (s.method == SketchMethod::BottomK) {
    check_rule("sketch_size", s.sketch_size, "sketch size", std::to_string(s.sketch_size));
    if (s.lsh.bands != 0 || s.lsh.rows != 0)
      throw UsageError("bands and rows apply to minhash and oph only; bottomk finds every pair with a join, without LSH");
    return s;
  }
  if (s.lsh.bands == 0 && s.lsh.rows == 0) {
    s.lsh = choose_lsh_params(s.threshold, s.num_perm);
  } else if (s.lsh.bands < 1 || s.lsh.rows < 1 || s.lsh.bands * s.lsh.rows > s.num_perm) {
    throw UsageError("bands x rows must be at least 1x1 and at most the permutations (" +
                     std::to_string(s.num_perm) + "), got " + std::to_string(s.lsh.bands) + "x" +
                     std::to_string(s.lsh.rows));
  }
  return s;
}

std::string PipelineSpec::to_string() const {
  std::string out = (shingle.kind == ShingleKind::Words ? "words:" : "chars:") + std::to_string(shingle.k);
  if (shingle.normalize == Normalization::Nfkc) out += " normalize:nfkc";
  if (shingle.word_break == WordBreak::Icu) out += " wordbreak:icu";
  if (method == SketchMethod::Exact) {
    out += " exact";
  } else if (method == SketchMethod::BottomK) {
    out += " bottomk:" + std::to_string(sketch_size);
  } else if (method == SketchMethod::SimHash) {
    out += " simhash:" + std::to_string(hamming);
    if (weights != SimHashWeights::Set) out += std::string(" weights:") + simhash_weights_name(weights);
  } else {
    out += (method == SketchMethod::Oph ? " oph:" : " minhash:") + std::to_string(num_perm);
  }
  if (lsh.bands > 0) out += " lsh:" + std::to_string(lsh.bands) + "x" + std::to_string(lsh.rows);
  out += (verify == VerifyMode::Exact ? " verify:" : " estimate:") + format_double(threshold);
  if (shingle.seed != kDefaultSeed) out += " seed:" + std::to_string(shingle.seed);
  return out;
}

SignatureHasher::SignatureHasher(const PipelineSpec& spec) : num_perm_(spec.num_perm) {
  if (spec.method == SketchMethod::MinHash)
    minhash_.emplace(spec.num_perm, spec.shingle.seed);
  else if (spec.method == SketchMethod::Oph)
    oph_.emplace(spec.num_perm, spec.shingle.seed);
  else
    throw UsageError("signatures are computed for minhash and oph specs only");
}

void SignatureHasher::sketch(std::span<const ShingleHash> shingles, std::span<SigValue> out) const {
  if (oph_) oph_->sketch(shingles, out);
  else minhash_->sketch(shingles, out);
}

void SignatureHasher::add(std::span<const ShingleHash> shingles, std::span<SigValue> acc) const {
  if (oph_) return oph_->bin_into(shingles, acc);
  // A MinHash value is the smallest over the shingles: the pieces' smallest, merged.
  thread_local std::vector<SigValue> part;
  part.resize(acc.size());
  minhash_->sketch(shingles, part);
  for (size_t i = 0; i < acc.size(); ++i) acc[i] = std::min(acc[i], part[i]);
}

void SignatureHasher::finish(std::span<SigValue> acc) const {
  if (oph_) oph_->densify(acc);
}

}  // namespace neardup
