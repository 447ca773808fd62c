// The line buffer's shared parts: the table of mapped windows, the choice between mapping and
// read(2), measured once per process.
#include "io/line_buffer.h"
#include "io/retry.h"

namespace neardup::io {

// The windows mapped now (see MappedSlot).
MappedSlot g_mapped[64];

MappedSlot* register_window(const char* base, size_t bytes, const std::string& display) noexcept {
  for (MappedSlot& s : g_mapped) {
    bool free = false;
    if (!s.used.compare_exchange_strong(free, true)) continue;
    const size_t n = std::min(display.size(), sizeof s.name - 1);
    std::memcpy(s.name, display.data(), n);
    s.name[n] = '\0';
    s.end.store(reinterpret_cast<uintptr_t>(base) + bytes, std::memory_order_relaxed);
    s.begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    return &s;
  }
  return nullptr;
}

void unregister_window(MappedSlot* s) noexcept {
  if (!s) return;
  s->begin.store(0, std::memory_order_release);
  s->end.store(0, std::memory_order_relaxed);
  s->used.store(false, std::memory_order_release);
}

std::atomic<size_t> g_fail_map_in{0};

// MemoryMap::Auto: whether this machine reads a plain file faster through mapped windows than by
// read(2) into a buffer that stays mapped. Mapping pays, for every 4 KiB page, a page-table entry
// and a TLB miss on first touch (and their teardown); read(2) pays a copy. On one virtual machine
// finding the lines of the 1.5 GB crowded mix took 0.31 s mapped against 0.75 s by read(2); on
// another, whose hypervisor makes page-table work dear, 0.6-0.7 s mapped against 0.13 s. The ratio
// belongs to the machine, not to the file, so it is measured once per process: the first 4 MiB of
// the file read both ways, three times each (the best of each counts), after a read that brings
// them into the page cache. A few milliseconds, against seconds for the files it is measured on.
//
// The measurement favours read(2): it copies into one buffer that is warm in the cache, while a
// pass copies into a circle of buffers that the workers have since evicted, faults in the buffers
// grown for long lines, and moves the lines cut at a buffer's end; and the copies all fall on the
// reading thread, which hands lines to the workers. On a third machine the measurement found both
// ways about equal (0.35-0.38 ms per 4 MiB each way, the choice flipping from run to run), while
// the whole pass over the crowded mix ran at 1.30 s mapped against 1.50 s by read(2) (`pairs`,
// medians of 7 alternating runs; kernel time 0.21 against 0.52 s). So the file is mapped unless
// mapping measured dearer than twice the copy: the machine where page tables are dear measured
// about 5x.
constexpr double kMapUnlessDearerThan = 2.0;
constexpr uint64_t kMeasureBytes = uint64_t{4} << 20;
enum : int { kUnmeasured = 0, kMap = 1, kRead = 2 };
std::atomic<int> g_map_choice{kUnmeasured};
std::atomic<size_t> g_measure_sink{0};

size_t count_newlines(const char* p, size_t n) noexcept {
  size_t lines = 0;
  for (const char* end = p + n; (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)))) != nullptr; ++p) ++lines;
  return lines;
}

bool pread_all(int fd, char* to, size_t n, uint64_t offset) noexcept {
  return pread_upto(fd, to, n, offset) == static_cast<ssize_t>(n);
}

// Whether to map the plain file open as `fd` (file_bytes long) under MemoryMap::Auto.
bool should_map(int fd, uint64_t file_bytes) {
  if (const int c = g_map_choice.load(std::memory_order_relaxed); c != kUnmeasured) return c == kMap;
  if (file_bytes < kMeasureBytes) return false;  // not worth mapping, nor measuring on
  internal::ReallocBuffer buf(kMeasureBytes);
  if (!pread_all(fd, buf.data(), kMeasureBytes, 0)) return false;  // the stream will report it
  using Clock = std::chrono::steady_clock;
  double copy = 1e30, map = 1e30;
  size_t lines = 0;
  for (int round = 0; round < 3; ++round) {
    auto t = Clock::now();
    if (!pread_all(fd, buf.data(), kMeasureBytes, 0)) return false;
    lines += count_newlines(buf.data(), kMeasureBytes);
    copy = std::min(copy, std::chrono::duration<double>(Clock::now() - t).count());
    t = Clock::now();
    void* m = ::mmap(nullptr, kMeasureBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) break;
    lines += count_newlines(static_cast<const char*>(m), kMeasureBytes);
    ::munmap(m, kMeasureBytes);
    map = std::min(map, std::chrono::duration<double>(Clock::now() - t).count());
  }
  g_measure_sink.store(lines, std::memory_order_relaxed);  // the scans are the measurement: keep them
  const int choice = map < kMapUnlessDearerThan * copy ? kMap : kRead;
  g_map_choice.store(choice, std::memory_order_relaxed);
  return choice == kMap;
}

bool mapped_input_at(const void* address, char* name, size_t size) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(address);
  for (const MappedSlot& s : g_mapped) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || a < begin || a >= s.end.load(std::memory_order_relaxed)) continue;
    size_t n = 0;
    for (; n + 1 < size && s.name[n]; ++n) name[n] = s.name[n];
    if (size > 0) name[n] = '\0';
    return true;
  }
  return false;
}

}  // namespace neardup::io


namespace neardup {
void fail_input_map_for_testing(size_t n) noexcept { io::g_fail_map_in.store(n); }
int map_choice_for_testing(int choice) noexcept {
  return choice < 0 ? io::g_map_choice.load() : io::g_map_choice.exchange(choice);
}
}  // namespace neardup

