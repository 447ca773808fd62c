// Bad records: how they are counted and reported, and where a record is (its file, line and byte).
#include "neardup/io/reader.h"

#include "internal/parallel.h"
#include "internal/realloc_buffer.h"
#include "internal/testing.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fnmatch.h>

#include "internal/utf8.h"
#include "kernels/dispatch.h"
#include "internal/option_text.h"
#include "neardup/error.h"
#include "neardup/io/stream.h"
#include "neardup/io/writer.h"


namespace fs = std::filesystem;

namespace neardup::io {

void BadRecords::report(const std::string& where, const Rejected& r) {
  std::string msg = where + ": " + std::string(r.reason);
  if (policy_ == OnError::Fail) {
    // `where` is the source and line, the source alone (a whole file), or the source and the
    // byte where a line of unknown number starts: the error's place is the source and line.
    std::string text = r.line != 0 || where.size() <= r.input.size() + 2 ? std::string(r.reason)
                                                                         : where.substr(r.input.size() + 2) + ": " + std::string(r.reason);
    throw FormatError(text + "; fix the input, or skip bad records with " NEARDUP_OPT_IS("on_error", "skip"),
                      ErrorPlace{std::string(r.input), r.line});
  }
  ++skipped_;
  const std::string_view kind = r.kind.empty() ? std::string_view("other") : r.kind;
  auto k = std::find_if(kinds_.begin(), kinds_.end(), [&](const auto& e) { return e.first == kind; });
  if (k == kinds_.end())
    kinds_.emplace_back(std::string(kind), 1);
  else
    ++k->second;
  if (on_reject_) on_reject_(r);
  if (first_.size() < kFirstKept) first_.push_back(std::move(msg));
}

void BadRecords::add(uint64_t skipped, const std::vector<std::string>& first, const std::vector<std::pair<std::string, uint64_t>>& kinds) {
  skipped_ += skipped;
  for (const std::string& m : first)
    if (first_.size() < kFirstKept) first_.push_back(m);
  for (const auto& kind : kinds) {
    auto k = std::find_if(kinds_.begin(), kinds_.end(), [&](const auto& e) { return e.first == kind.first; });
    if (k == kinds_.end())
      kinds_.push_back(kind);
    else
      k->second += kind.second;
  }
}

std::string record_where(const Source& source, uint64_t line, uint64_t offset) {
  if (line == 0) return source.display + ": the line at byte " + std::to_string(offset);
  return source.display + ":" + std::to_string(line);
}

BadRecord bad_record(const Source& source, uint64_t line, uint64_t offset, std::string_view kind, std::string_view reason,
                     std::optional<std::string_view> record) {
  BadRecord b;
  b.where = record || line ? record_where(source, line, offset) : source.display;
  Rejected& r = b.rejected;
  r.input = source.display;
  r.line = line;
  r.offset = offset;
  r.kind = kind;
  r.reason = reason;
  r.has_record = record.has_value();
  if (record) r.record = *record;
  return b;
}

uint64_t line_number_at(const Source& source, uint64_t offset) {
  try {
    auto stream = open_stream(source.path, source.display);
    std::vector<char> buf(1 << 16);
    uint64_t done = 0, newlines = 0;
    while (done < offset) {
      const size_t got = stream->read(buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), offset - done)));
      if (got == 0) return 0;
      newlines += static_cast<uint64_t>(std::count(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(got), '\n'));
      done += got;
    }
    return newlines + 1;
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace neardup::io
