// The TSV outputs every driver writes (CLI, Python, MPI): one line per pair, per removed
// document, per member of a cluster. Ids are printed as they are (the reader refuses ids with a
// TAB, CR or LF); similarities with six decimals, so outputs compare byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "neardup/cluster.h"
#include "neardup/types.h"

namespace neardup::io {

class AtomicFile;

/// A document's id by its number.
using IdOf = std::function<std::string_view(DocId)>;

/// Appends a similarity as every output prints it: six decimals.
void append_similarity(std::string& line, double s);

/// `id_a TAB id_b TAB similarity` per pair, and TAB the Hamming distance of their SimHashes when
/// `simhashes` is given. The ids `id` returns must stay valid until it returns: the first
/// document's is looked up once for a run of pairs by it, and held while the others are.
void write_pairs(AtomicFile& out, std::span<const ScoredPair> pairs, const IdOf& id, std::span<const uint64_t> simhashes = {});

/// `removed_id TAB kept_id TAB similarity` per removed document, in input order;
/// removed_similarity[j] is that of the j-th removed document to its kept one.
void write_removed(AtomicFile& out, const Clustering& clustering, std::span<const double> removed_similarity, const IdOf& id);

/// `cluster TAB id TAB kept|removed` for each document of a cluster of two or more; clusters
/// numbered in the order of their first document, members in input order.
void write_clusters(AtomicFile& out, const Clustering& clustering, const IdOf& id);

}  // namespace neardup::io
