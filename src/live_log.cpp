#include "live_log.h"

#include "internal/hash.h"

namespace neardup::internal {

namespace {

constexpr uint64_t kRecordSeed = 0x4E44555057414C31ULL;  // "NDUPWAL1"

uint64_t record_sum(const char* at, size_t bytes_after_sum) noexcept {
  return hash_bytes(at + 8, bytes_after_sum, kRecordSeed);
}

}  // namespace

void seal_record(std::string& log, size_t at, uint32_t kind) {
  const auto payload = static_cast<uint32_t>(log.size() - at - kRecordHeaderBytes);
  std::memcpy(log.data() + at + 8, &payload, 4);
  std::memcpy(log.data() + at + 12, &kind, 4);
  const uint64_t sum = record_sum(log.data() + at, payload + 8);
  std::memcpy(log.data() + at, &sum, 8);
}

bool whole_record_at(std::string_view data, size_t at, LogRecord& out) noexcept {
  if (at > data.size() || data.size() - at < kRecordHeaderBytes) return false;
  uint64_t sum;
  uint32_t payload, kind;
  std::memcpy(&sum, data.data() + at, 8);
  std::memcpy(&payload, data.data() + at + 8, 4);
  std::memcpy(&kind, data.data() + at + 12, 4);
  if (payload > data.size() - at - kRecordHeaderBytes) return false;
  if (record_sum(data.data() + at, payload + 8) != sum) return false;
  out = LogRecord{at, payload, kind & ~kGroupStart, (kind & kGroupStart) != 0};
  return true;
}

bool next_whole_record(std::string_view data, size_t from, LogRecord& out) noexcept {
  for (size_t at = from; at + kRecordHeaderBytes <= data.size(); ++at) {
    uint32_t kind;  // checked first: a checksum at every byte would cost the square of the size
    std::memcpy(&kind, data.data() + at + 12, 4);
    kind &= ~kGroupStart;
    if ((kind == kAddRecord || kind == kRemoveRecord) && whole_record_at(data, at, out)) return true;
  }
  return false;
}

bool group_starts_after(std::string_view data, size_t from) noexcept {
  LogRecord r;
  for (size_t at = from; next_whole_record(data, at, r); at = r.end())
    if (r.group_start) return true;
  return false;
}

}  // namespace neardup::internal
