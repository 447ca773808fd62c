// Giving the heap's free pages back to the system (glibc's malloc_trim) between the stages of a
// run, and between the groups of a verification whose memory is limited.
#pragma once

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace neardup::internal {

/// Gives every free page of the heap back. What a stage let go (a pass's buffers, the shuffle's
/// entries, a group's sets) stays in the heap, free, and the next stage's large buffers, mapped
/// anew, would come on top of it: the peak would be the sum of the stages' rather than the
/// largest. Faulting the next stage's pages in again costs a few milliseconds.
inline void release_free_memory() noexcept {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

/// The same once the heap holds more than `bound` bytes free. Within verification, after a
/// group: what a group let go (its sets, the texts and shingles they were made from) is free space
/// in the middle of the heap, which glibc keeps, so later groups would peak on top of it (the
/// crowded mix: an MPI rank peaked at 175 MiB with 60 of them free; 10 million short documents
/// under a limit of 1 GB: between groups the heap rose from 180 to 250 MiB over 68 groups, and
/// from 160 to 215 MiB trimmed). Below the bound, the free space is left for the next group,
/// which would fault it in again.
inline void release_free_memory_past(size_t bound) noexcept {
#if defined(__GLIBC__)
  if (::mallinfo2().fordblks > bound) ::malloc_trim(0);
#else
  (void)bound;
#endif
}

/// The bound verification keeps free between groups (release_free_memory_past).
inline constexpr size_t kMaxFreeHeapBytes = size_t{32} << 20;

}  // namespace neardup::internal
