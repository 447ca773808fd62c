// The keep and cluster policies as every driver spells them, and the check of a keep-by field
// against the inputs.
#include "pipeline/impl.h"

namespace neardup {

namespace {

// "FIELD", "FIELD:desc" or "FIELD:asc" into `o`; what is wrong with it (examples worded as
// `option`), or "".
std::string keep_field(RunOptions& o, std::string_view spelling, std::string_view option) {
  std::string_view field = spelling;
  bool descending = true;
  if (const size_t colon = spelling.rfind(':'); colon != std::string_view::npos) {
    const std::string_view order = spelling.substr(colon + 1);
    if (order != "asc" && order != "desc") return "the order after ':' is asc or desc (for example " + option_ref(option, "score:desc") + ")";
    descending = order == "desc";
    field = spelling.substr(0, colon);
  }
  if (field.empty()) return "it needs a field's name (for example " + option_ref(option, "score") + ")";
  o.keep = KeepPolicy::Field;
  o.keep_by = std::string(field);
  o.keep_descending = descending;
  return "";
}

}  // namespace

void set_keep_by(RunOptions& o, std::string_view spelling) {
  if (const std::string problem = keep_field(o, spelling, "keep_by"); !problem.empty())
    throw UsageError(option_ref("keep_by", spelling) + ": " + problem);
}

void set_keep(RunOptions& o, std::string_view spelling) {
  o.keep_by.clear();
  o.keep_descending = true;
  if (spelling == "first" || spelling == "longest") {
    o.keep = spelling == "first" ? KeepPolicy::First : KeepPolicy::Longest;
    return;
  }
  if (const std::string problem = keep_field(o, spelling, "keep"); !problem.empty())
    throw UsageError(option_ref("keep", spelling) + ": " + problem + "; or first or longest");
}

ClusterMode cluster_mode(std::string_view spelling) {
  if (spelling == "components") return ClusterMode::Components;
  if (spelling == "leader") return ClusterMode::Leader;
  throw UsageError(option_ref("cluster", spelling) + " is not one of components, leader");
}


void apply_keep(RunOptions& o, const io::InputSet& inputs) {
  if (o.keep_by.empty()) {
    if (o.keep == KeepPolicy::Field) throw UsageError("keep policy 'field' needs the field's name (RunOptions::keep_by)");
    return;
  }
  const auto& sources = inputs.sources();
  if (sources.size() == 1 && sources.front().kind == io::SourceKind::Memory)
    throw UsageError(option_ref("keep", o.keep_by) + " names a JSONL field, which documents given in memory do "
                     "not have; keep the first or the longest of a cluster there");
  if (!inputs.all_jsonl())
    throw UsageError(NEARDUP_OPT("keep_by") " reads a field of JSONL records; the inputs include plain-text files (use " NEARDUP_OPT_IS("keep", "first") " or longest)");
  o.keep = KeepPolicy::Field;
  o.reader.key_field = o.keep_by;
}

}  // namespace neardup
