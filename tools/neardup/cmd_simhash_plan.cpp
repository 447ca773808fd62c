// `neardup simhash-plan`: the table plan the SimHash search uses for a distance and a number of
// fingerprints, with its expected work and memory.
#include <bit>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "commands.h"
#include "options.h"
#include "neardup/neardup.h"

namespace neardup::cli {
namespace {

struct PlanOptions {
  int hamming = kDefaultHamming;
  uint64_t docs = 0;
  bool batch = false;
  uint64_t memory = 0;
  bool tables = false;
  bool json = false;
  bool quiet = false;
};

int run_plan(const PlanOptions& o) {
  const SimHashPlan p =
      plan_simhash_tables(o.hamming, o.docs, o.batch ? SimHashWorkload::Batch : SimHashWorkload::Online, o.memory);
  std::map<int, int, std::greater<>> matched;  // bits -> tables
  for (uint64_t m : p.masks) ++matched[std::popcount(m)];
  std::string bits;
  for (const auto& [b, n] : matched) bits += (bits.empty() ? "" : ", ") + std::to_string(b) + " bits x " + std::to_string(n);
  if (o.json) {
    std::printf("{\"hamming\": %d, \"docs\": %llu, \"workload\": \"%s\", \"layout\": \"%s\", \"tables\": %zu, "
                "\"expected_candidates_per_query\": %.6g, \"batch_pairs_compared\": %.6g, \"bytes\": %llu, \"masks\": [",
                p.k, static_cast<unsigned long long>(p.docs), o.batch ? "batch" : "online", p.layout.c_str(), p.tables(),
                p.expected_candidates, p.batch_pairs, static_cast<unsigned long long>(p.bytes));
    for (size_t t = 0; t < p.masks.size(); ++t)
      std::printf("%s\"0x%016llx\"", t ? ", " : "", static_cast<unsigned long long>(p.masks[t]));
    std::printf("]}\n");
    return kExitOk;
  }
  std::printf("SimHash tables for Hamming distance <= %d over %llu fingerprints (%s)\n", p.k,
              static_cast<unsigned long long>(p.docs), o.batch ? "batch find-all" : "online queries");
  std::printf("  layout:              %s\n", p.layout.c_str());
  std::printf("  tables:              %zu (matched: %s)\n", p.tables(), bits.c_str());
  std::printf("  candidates/query:    %.4g expected (sum over tables of docs / 2^matched)\n", p.expected_candidates);
  std::printf("  batch comparisons:   %.4g expected (sum over tables of docs^2 / 2^(matched+1))\n", p.batch_pairs);
  std::printf("  memory:              %llu bytes (12 per fingerprint per table)\n", static_cast<unsigned long long>(p.bytes));
  if (o.tables) std::printf("%s", p.describe().c_str());
  return kExitOk;
}

}  // namespace

void add_simhash_plan(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("simhash-plan", "Print the SimHash table plan for a distance and a corpus size");
  cmd->add_option("--hamming", o->hamming, "Largest Hamming distance to find")->required()->check(rule_check("hamming"));
  cmd->add_option("--docs", o->docs, "Expected number of fingerprints")->required()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_flag("--batch", o->batch, "Plan for one batch find-all (pairs, dedup) instead of online queries");
  cmd->add_option("--memory", o->memory, "Largest memory for the tables, in bytes (default: no limit)");
  cmd->add_flag("--tables", o->tables, "Also list every table's matched bits");
  cmd->add_flag("--json", o->json, "Print the plan as one JSON object");
  cmd->add_flag("-q,--quiet", o->quiet, "No messages on stderr (it prints none but errors)");
  cmd->callback([&run, o] { run = [o] { return run_plan(*o); }; });
}

}  // namespace neardup::cli
