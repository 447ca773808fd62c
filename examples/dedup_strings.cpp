// Finds the near-duplicate pairs among texts held in memory, through the installed neardup
// library: one text per line of standard input (ids t1, t2, ...), pairs written as `neardup
// pairs` writes them (id1 TAB id2 TAB similarity). The spec is the first argument.
//
//   dedup_strings 'words:3 oph:128 verify:0.5' < texts.txt
#include <neardup/neardup.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<neardup::io::Document> docs;
  std::string line;
  while (std::getline(std::cin, line)) docs.push_back({"t" + std::to_string(docs.size() + 1), line});
  try {
    neardup::RunOptions options;
    options.spec = neardup::PipelineSpec::parse(argc > 1 ? argv[1] : "words:3 oph:128 verify:0.5");
    neardup::Pipeline pipeline(std::move(docs), options);
    pipeline.run(neardup::Pipeline::Mode::Pairs);
    neardup::io::AtomicFile out("-");
    pipeline.write_pairs(out);
    out.commit();
    // The pairs are streamed to the output (RunOptions::stream_pairs), never all held: the
    // count is in the run's statistics once they are written.
    std::fprintf(stderr, "%llu documents, %llu pairs\n", static_cast<unsigned long long>(pipeline.stats().documents),
                 static_cast<unsigned long long>(pipeline.stats().pairs));
  } catch (const neardup::Error& e) {
    std::fprintf(stderr, "dedup_strings: %s\n", e.what());
    return 1;
  }
  return 0;
}
