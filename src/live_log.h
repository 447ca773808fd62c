// The records of a LiveIndex's write-ahead log (docs/format.md; the header is index_file.h's):
// how they are written, sealed and found again, whole or damaged.
//
// After the header, records, each
//   u64 checksum (of every byte after it in the record) | u32 payload bytes | u32 kind | payload
// An add's payload: u32 id bytes, id, u32 signature values, values (u32), u64 set size, set (u64).
// A removal's: u32 id bytes, id. Bit 31 of the kind marks the first record of a group: the records
// written with one write(2) and synced (fdatasync) before any of their changes is acknowledged.
//
// Why the mark: a crash while a group is being written may leave any of its pages on disk and not
// others (Pillai et al., OSDI 2014), so a damaged record followed by whole ones is a crash state
// when they all belong to the last group. When a whole record that starts a group follows the
// damage, the group holding the damage was synced before that one was written: the damage is not
// a crash but a change to synced, acknowledged data, and cutting the log there would lose
// acknowledged changes silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace neardup::internal {

constexpr size_t kRecordHeaderBytes = 16;
constexpr uint32_t kGroupStart = 0x80000000u;
enum RecordKind : uint32_t { kAddRecord = 1, kRemoveRecord = 2 };

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

inline void put_id(std::string& out, std::string_view id) {
  put<uint32_t>(out, static_cast<uint32_t>(id.size()));
  out.append(id);
}

/// Seals the record that starts at `at` and runs to the end of `log`: its length, kind and checksum.
void seal_record(std::string& log, size_t at, uint32_t kind);

/// Appends one record to `group` (the bytes of one write); `fill` writes the payload. The group's
/// first record is marked as its start.
template <class Fill>
void append_record(std::string& group, RecordKind kind, Fill&& fill) {
  const size_t at = group.size();
  group.resize(at + kRecordHeaderBytes);
  fill(group);
  seal_record(group, at, at == 0 ? kind | kGroupStart : kind);
}

/// A whole record (its length within the data, its checksum holding) found in a log's bytes.
struct LogRecord {
  size_t at = 0;
  uint32_t payload = 0;
  uint32_t kind = 0;  ///< without the group-start bit
  bool group_start = false;
  size_t end() const noexcept { return at + kRecordHeaderBytes + payload; }
};

/// Whether a whole record (of any kind) starts at `at`.
bool whole_record_at(std::string_view data, size_t at, LogRecord& out) noexcept;

/// The first whole record of a known kind starting at or after `from` (a scan byte by byte), or
/// false.
bool next_whole_record(std::string_view data, size_t from, LogRecord& out) noexcept;

/// Whether a whole record marked as a group's start lies at or after `from`.
bool group_starts_after(std::string_view data, size_t from) noexcept;

/// Reads a record's payload with bounds checks: a record whose checksum holds but whose payload
/// does not parse was written by something else (std::out_of_range).
class PayloadReader {
 public:
  PayloadReader(const char* p, size_t n) : p_(p), end_(p + n) {}
  template <class T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  std::string_view bytes(uint64_t n) {
    need(n);
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  bool done() const noexcept { return p_ == end_; }

 private:
  void need(uint64_t n) const {
    if (static_cast<uint64_t>(end_ - p_) < n) throw std::out_of_range("record");
  }
  const char* p_;
  const char* end_;
};

}  // namespace neardup::internal
