// Switches for the fuzz targets only (fuzz/). Nothing in the library or the CLI sets them.
#pragma once

namespace neardup::internal {

// When true, NearDupIndex::open ignores checksum mismatches, so that a fuzzer's mutations reach
// the structural checks behind them (a crafted file can carry matching checksums; those checks
// must hold on their own). Defined in index.cpp.
extern bool g_fuzz_ignore_index_checksums;

}  // namespace neardup::internal
