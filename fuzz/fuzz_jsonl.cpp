// The JSONL reader, three ways over the same bytes (plain, gzip or zstd, as the magic says):
// RecordReader::next, next_raw + JsonlParser (the pipeline's path, also as word text, whose
// words and decoded length must be the record's), and select() by the positions found. All
// three must return the same records; bad records are skipped, and a
// damaged compressed stream is a FormatError, never a crash. The input sampler (sample_inputs),
// which reads such small inputs whole, must see the same records.
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "io/raw_records.h"
#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/text.h"

using namespace neardup;

namespace {

struct Seen {
  std::string id, text;
  uint64_t offset;
  size_t raw_size;
  size_t source;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFile file(data, size);
  io::ReaderOptions opt;
  opt.format = io::InputFormat::Jsonl;
  opt.on_error = io::OnError::Skip;
  io::InputSet inputs({file.path()}, opt.format);

  std::vector<Seen> seen;
  uint64_t skipped = 0;
  try {
    io::RecordReader reader(inputs, opt);
    io::Record r;
    while (reader.next(r)) {
      FUZZ_CHECK(r.raw.size() < (1ull << 32));
      seen.push_back({std::string(r.id), std::string(r.text), r.offset, r.raw.size(), r.source});
    }
    skipped = reader.stats().skipped;
  } catch (const FormatError&) {
    return 0;  // a damaged gzip or zstd stream
  }

  // The pipeline's path: raw lines parsed by a JsonlParser.
  {
    io::RecordReader reader(inputs, opt);
    io::JsonlParser parser(opt);
    static const size_t every_line = io::set_word_text_min_line(0);  // the fast path on short lines too
    (void)every_line;
    io::RawRecord raw;
    io::Record r, w;
    std::string problem, word_problem;
    size_t i = 0;
    uint64_t bad = 0;
    while (io::next_raw(reader, raw)) {
      if (raw.kind == io::RawRecord::Kind::Bad) {  // an empty file
        ++bad;
        continue;
      }
      FUZZ_CHECK(raw.kind == io::RawRecord::Kind::Line);
      io::JsonlParser words(opt, true);  // fresh: one that met a \u escape parses the next lines whole
      const bool word_ok = words.parse(raw.bytes, inputs.sources()[raw.source], raw.line, w, word_problem);
      if (!parser.parse(raw.bytes, inputs.sources()[raw.source], raw.line, r, problem)) {
        FUZZ_CHECK(!problem.empty());
        FUZZ_CHECK(!word_ok && word_problem == problem);
        ++bad;
        continue;
      }
      FUZZ_CHECK(word_ok && w.id == r.id && words.text_length() == r.text.size());
      FUZZ_CHECK(split_words(w.text) == split_words(r.text));
      FUZZ_CHECK(i < seen.size());
      FUZZ_CHECK(r.id == seen[i].id && r.text == seen[i].text);
      FUZZ_CHECK(raw.offset == seen[i].offset && raw.bytes.size() == seen[i].raw_size);
      ++i;
    }
    FUZZ_CHECK(i == seen.size());
    FUZZ_CHECK(bad == skipped);
  }

  // Every other record again, found by position.
  std::vector<io::RecordPos> pos;
  std::vector<size_t> want;
  for (size_t i = 0; i < seen.size(); i += 2) {
    pos.push_back({static_cast<uint32_t>(seen[i].source), static_cast<uint32_t>(seen[i].raw_size), seen[i].offset});
    want.push_back(i);
  }
  io::RecordReader reader(inputs, opt);
  reader.select(pos);
  io::Record r;
  size_t i = 0;
  while (reader.next(r)) {
    FUZZ_CHECK(i < want.size());
    FUZZ_CHECK(r.text == seen[want[i]].text);
    ++i;
  }
  FUZZ_CHECK(i == want.size());

  // The sample that plans a run (the expected memory): read whole, it sees exactly the records.
  size_t k = 0;
  double text = 0;
  const io::InputSample sample = io::sample_inputs(inputs, opt, 4 << 20, [&](std::string_view id, std::string_view t) {
    FUZZ_CHECK(k < seen.size() && id == seen[k].id && t == seen[k].text);
    ++k;
    text += static_cast<double>(t.size());
  });
  FUZZ_CHECK(sample.whole && k == seen.size() && sample.sampled_records == seen.size());
  FUZZ_CHECK(sample.records == static_cast<double>(seen.size()) && sample.text_bytes == text);
  return 0;
}
