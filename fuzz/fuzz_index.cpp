// The index file loader. Checksums are ignored here, so that mutations reach the structural
// checks behind them: a file is either refused with FormatError or opens into an index whose
// every id, statistic and query can be read without going astray.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "internal/fuzzing.h"
#include "neardup/error.h"
#include "neardup/index.h"

using namespace neardup;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  internal::g_fuzz_ignore_index_checksums = true;
  fuzz::MemFile file(data, size);
  std::unique_ptr<NearDupIndex> idx;
  try {
    idx = NearDupIndex::open(file.path());
  } catch (const FormatError&) {
    return 0;
  }
  size_t id_bytes = 0;
  for (DocId d = 0; d < idx->slots(); ++d) id_bytes += idx->id(d).size();
  FUZZ_CHECK(id_bytes <= size);
  (void)idx->stats();
  IndexSketcher sketcher(idx->spec());
  IndexSketch q;
  std::vector<IndexMatch> out;
  for (const char* text : {"the quick brown fox jumps over the lazy dog", "", "a b c d e f g h i j"}) {
    sketcher.sketch(text, q);
    idx->query(q, 0.0, out);
    for (const auto& m : out) FUZZ_CHECK(m.doc < idx->slots());
  }
  if (idx->slots() > 0) idx->contains(std::string(idx->id(0)));
  return 0;
}
