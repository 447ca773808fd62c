// What SimHash planning (simhash_plan.cpp) and searching (simhash_search.cpp) share.
#pragma once

#include <cstdint>

namespace neardup::internal {

/// Values sharing the top `matched` bits of a permuted fingerprint: equal after shifting the
/// rest out.
inline uint64_t simhash_prefix(uint64_t permuted, int matched) noexcept { return matched == 0 ? 0 : permuted >> (64 - matched); }

/// Throws UsageError unless 0 <= k <= 16.
void check_hamming(int k);

}  // namespace neardup::internal
