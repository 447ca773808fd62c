// What the pipeline and neardup-mpi decide alike about documents, and say alike when a run must
// stop: keep order, and the errors for a keep-by field of two kinds and for reused ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "neardup/error.h"
#include "neardup/io/reader.h"
#include "neardup/pipeline.h"

namespace neardup {

/// Whether document a goes before document b in keep order (RunOptions::keep): the longer text
/// first (Longest), or by the keep-by value (Field: records without it last; the largest first
/// with keep_descending). False when the policy ties them: callers break ties by input order.
bool keep_before(const RunOptions& o, uint32_t length_a, const io::KeyValue& a, uint32_t length_b, const io::KeyValue& b);

/// A keep-by field that is a number in one record and a string in another: the later record
/// (`later`, whose value is a number if later_is_number) named, and the earlier one.
FormatError keep_by_kinds_differ(const RunOptions& o, bool later_is_number, const std::string& where_earlier, const ErrorPlace& later);

/// Ids used twice: `dups` records reuse an earlier id, the first of them at `later` with id `id`
/// (shown up to 200 bytes), reusing the one of the record at `where_earlier`. For plain-text
/// inputs (ids are paths) and for a JSONL file given twice, the message says so.
/// Whether sources a and b (a != b) are one file given twice, by the same or another name.
bool one_file_twice(const io::InputSet& inputs, size_t a, size_t b);

enum class ReusedIdKind { Records, TextFileTwice, JsonlFileTwice };
FormatError reused_id_error(ReusedIdKind kind, std::string_view id, uint64_t dups, const std::string& where_earlier, const ErrorPlace& later);

}  // namespace neardup
