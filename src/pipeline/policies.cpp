// The keep and cluster policies as every driver spells them, and the check of a keep-by field
// against the inputs.
#include "pipeline/policies.h"

#include <sys/stat.h>

#include "internal/option_text.h"
#include "neardup/io/reader.h"

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

Measure measure_of(std::string_view spelling) {
  if (spelling == "jaccard") return Measure::Jaccard;
  if (spelling == "containment") return Measure::Containment;
  throw UsageError(option_ref("measure", spelling) + " is not one of jaccard, containment");
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

bool keep_before(const RunOptions& o, uint32_t length_a, const io::KeyValue& a, uint32_t length_b, const io::KeyValue& b) {
  using Kind = io::KeyValue::Kind;
  if (o.keep == KeepPolicy::Longest) return length_a > length_b;
  if (o.keep != KeepPolicy::Field) return false;
  const bool ma = a.kind == Kind::Missing, mb = b.kind == Kind::Missing;
  if (ma || mb) return !ma && mb;
  if (a.kind == Kind::Number) return o.keep_descending ? a.number > b.number : a.number < b.number;
  return o.keep_descending ? a.text > b.text : a.text < b.text;
}

FormatError keep_by_kinds_differ(const RunOptions& o, bool later_is_number, const std::string& where_earlier, const ErrorPlace& later) {
  return FormatError(std::string("keep-by field \"") + o.reader.key_field + "\" is a " + (later_is_number ? "number" : "string") +
                         " here but a " + (later_is_number ? "string" : "number") + " in " + where_earlier +
                         "; give every record the same kind of value (numbers, or strings such as ISO dates)",
                     later);
}

bool one_file_twice(const io::InputSet& inputs, size_t a, size_t b) {
  if (a == b) return false;
  const auto& sources = inputs.sources();
  struct stat sa {}, sb {};
  return ::stat(sources[a].path.c_str(), &sa) == 0 && ::stat(sources[b].path.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

FormatError reused_id_error(ReusedIdKind kind, std::string_view id, uint64_t dups, const std::string& where_earlier, const ErrorPlace& later) {
  const std::string shown(id.substr(0, 200));
  if (kind == ReusedIdKind::JsonlFileTwice)
    return FormatError("the same file is given twice; give each file once, or pass " NEARDUP_OPT_IS("on_duplicate_id", "keep") " to "
                       "treat the copies as separate documents", ErrorPlace{later.source});
  if (kind == ReusedIdKind::TextFileTwice)
    return FormatError("the same file is given twice (directly or inside a folder); give each file once, or pass "
                       NEARDUP_OPT_IS("on_duplicate_id", "keep") " to treat the copies as separate documents", ErrorPlace{shown});
  return FormatError(std::string("id \"") + shown + "\" is already used by " + where_earlier + " (" + std::to_string(dups) +
                         (dups == 1 ? " record reuses" : " records reuse") + " an earlier id); ids name documents in the "
                         "outputs, so make them unique, or pass " NEARDUP_OPT_IS("on_duplicate_id", "keep") " to treat them as separate documents",
                     later);
}

}  // namespace neardup
