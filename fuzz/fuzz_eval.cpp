// The TSV loaders of `neardup eval`: the input is a truth file and a pairs file separated by
// the first NUL byte. Either both load and the report is consistent, or a FormatError names
// the file and line.
#include <algorithm>
#include <string>

#include "fuzz_util.h"
#include "neardup/error.h"
#include "neardup/eval.h"

using namespace neardup;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t cut = 0;
  while (cut < size && data[cut] != 0) ++cut;
  fuzz::MemFile truth(data, cut);
  fuzz::MemFile pairs(data + std::min(cut + 1, size), size - std::min(cut + 1, size));
  EvalOptions opt;
  opt.list = true;
  try {
    const EvalResult r = evaluate_pairs(truth.path(), pairs.path(), opt);
    FUZZ_CHECK(r.overall.found <= r.overall.positives);
    FUZZ_CHECK(r.overall.correct <= r.overall.predictions);
    FUZZ_CHECK(r.misses.size() == r.overall.positives - r.overall.found);
    FUZZ_CHECK(r.false_positives.size() == r.overall.predictions - r.overall.correct);
  } catch (const FormatError&) {
  } catch (const UsageError&) {  // a threshold below the truth's floor
  }
  return 0;
}
