// The document table: what the pipeline keeps of each document after the first pass, in input
// order (its number is its place): its id, its text length, where its record lies (JSONL inputs,
// so that later passes read only the records they need and copy kept lines without parsing
// them), and its --keep-by value. Texts and shingles are not kept here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "neardup/io/reader.h"
#include "neardup/types.h"

namespace neardup {

class DocumentTable {
 public:
  /// Appends a document: its number is the count before. `pos` is stored when positions are
  /// kept (every document has one or none does), `key` when keep-by values are.
  void add(std::string_view id, uint32_t length, const io::RecordPos* pos, const io::KeyValue* key) {
    id_blob_.append(id);
    id_end_.push_back(id_blob_.size());
    lengths_.push_back(length);
    if (pos) pos_.push_back(*pos);
    if (key) {
      key_kind_.push_back(static_cast<uint8_t>(key->kind));
      key_num_.push_back(key->number);
      key_blob_.append(key->text);
      key_end_.push_back(key_blob_.size());
    }
  }

  size_t size() const noexcept { return lengths_.size(); }
  std::string_view id(DocId d) const noexcept { return slice(id_blob_, id_end_, d); }
  /// Text bytes (at most --max-doc-bytes, under 4 GiB).
  uint32_t length(DocId d) const noexcept { return lengths_[d]; }
  std::span<const uint32_t> lengths() const noexcept { return lengths_; }

  /// Whether each document's record position is kept (JSONL inputs found again by position).
  bool has_positions() const noexcept { return !pos_.empty(); }
  const io::RecordPos& pos(DocId d) const noexcept { return pos_[d]; }
  std::span<const io::RecordPos> positions() const noexcept { return pos_; }

  /// The keep-by value of d (Missing when none is kept).
  io::KeyValue key(DocId d) const noexcept {
    if (d >= key_kind_.size()) return {};
    return {static_cast<io::KeyValue::Kind>(key_kind_[d]), key_num_[d], slice(key_blob_, key_end_, d)};
  }

  /// The bytes the table holds (the memory estimate's state).
  uint64_t bytes() const noexcept {
    return id_blob_.size() + id_end_.size() * sizeof(uint64_t) + lengths_.size() * sizeof(uint32_t) +
           pos_.size() * sizeof(io::RecordPos) + key_kind_.size() + key_num_.size() * sizeof(double) + key_blob_.size() +
           key_end_.size() * sizeof(uint64_t);
  }

 private:
  static std::string_view slice(const std::string& blob, const std::vector<uint64_t>& ends, DocId d) noexcept {
    const uint64_t b = d == 0 ? 0 : ends[d - 1];
    return std::string_view(blob).substr(b, ends[d] - b);
  }

  std::string id_blob_;
  std::vector<uint64_t> id_end_;
  std::vector<uint32_t> lengths_;
  std::vector<io::RecordPos> pos_;
  // The keep-by field per document: KeyValue::Kind, the number, the string (blob and ends).
  std::vector<uint8_t> key_kind_;
  std::vector<double> key_num_;
  std::string key_blob_;
  std::vector<uint64_t> key_end_;
};

}  // namespace neardup
