// Scratch buffers kept between calls (per thread, or in a per-thread object) hold at most
// kScratchKeepBytes each once a call is done: a large document grows them for its own time
// only, so a worker that once met a 60 MB text does not keep 60 MB for the rest of the run.
#pragma once

#include <string>
#include <vector>

#include "internal/realloc_buffer.h"
#include "neardup/types.h"

namespace neardup::internal {

/// `keep`: a larger bound for buffers whose every use is bounded (a long text's pieces).
template <class T, class A>
void trim_scratch(std::vector<T, A>& v, size_t keep = kScratchKeepBytes) noexcept {
  if (v.capacity() * sizeof(T) > keep) std::vector<T, A>().swap(v);
}

inline void trim_scratch(std::string& s) noexcept {
  if (s.capacity() > kScratchKeepBytes) std::string().swap(s);
}

inline void trim_scratch(ReallocBuffer& b) {
  if (b.size() > kScratchKeepBytes) b.resize(0);
}

}  // namespace neardup::internal
