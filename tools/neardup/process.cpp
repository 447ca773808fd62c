// The process-wide settings of the command-line programs: fatal signals (temporary outputs
// removed, then the default death) and the allocator's policy for large blocks (returned to the
// system when freed, backed by huge pages).
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "neardup/cpu.h"
#include "neardup/io/reader.h"
#include "neardup/io/writer.h"

namespace {
// Blocks this large are the buffers of records of tens of MB: served by mmap, returned to the
// system when freed, and backed by huge pages (below).
constexpr size_t kLargeBlockBytes = size_t{16} << 20;
// Whether glibc backs the heaps with huge pages (glibc.malloc.hugetlb=1: see
// ask_huge_pages_for_the_heaps), so that the threads' arena heaps are advised as well.
bool g_heaps_on_huge_pages = false;
// A 4 KiB page fault this slow or slower makes huge pages pay for the heaps.
constexpr double kDearFaultMicroseconds = 5.0;

// One line of /proc/self/maps.
struct Mapping {
  uintptr_t begin = 0, end = 0;
  char perms[8] = {};
  unsigned long inode = 0;
  const char* path = "";  // empty for an anonymous mapping
};

// Calls each(const Mapping&) for the process's mappings, in address order, until it returns false.
// False if /proc/self/maps cannot be read.
template <class Each>
bool for_each_mapping(Each each) {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return false;
  char line[4352];
  while (std::fgets(line, sizeof line, f)) {
    line[std::strcspn(line, "\n")] = '\0';
    Mapping m;
    unsigned long begin = 0, end = 0, offset = 0;
    char dev[16] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &begin, &end, m.perms, &offset, dev, &m.inode, &path_at) < 6) continue;
    m.begin = begin;
    m.end = end;
    if (path_at > 0) m.path = line + path_at;
    if (!each(m)) break;
  }
  std::fclose(f);
  return true;
}
}  // namespace

namespace neardup::cli {
namespace {

char g_message[160] = "neardup: interrupted; temporary files removed, no partial output left\n";
char g_program[64] = "neardup";

// Set by the first SIGBUS handler that reports (a lock-free atomic: async-signal-safe).
std::atomic<bool> g_bus_reported{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// A message to stderr from a signal handler (write(2) only: async-signal-safe).
void put(const char* s) { [[maybe_unused]] const ssize_t w = ::write(2, s, std::strlen(s)); }

// SIGINT, SIGTERM, SIGHUP, SIGPIPE: remove every temporary file (outputs are only ever renamed
// into place complete, so none is left half-written), then die of the same signal (exit status
// 128 + its number, as the shell reports it). Only async-signal-safe calls.
extern "C" void on_fatal_signal(int sig) {
  neardup::io::remove_temporary_files();
  if (sig != SIGPIPE) put(g_message);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// SIGBUS: a plain input read in place (mapped into memory) shrank under the reader, and a page
// past its new end was touched. The input is named, the temporary files removed, and the run
// ends as an I/O error (exit 4). Any other SIGBUS is left to its default death.
extern "C" void on_bus_error(int sig, siginfo_t* info, void*) {
  char name[256];
  if (!info || !neardup::io::mapped_input_at(info->si_addr, name, sizeof name)) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  // The reading thread and a worker may both touch the shrunk file: the first to get here
  // reports and ends the run, any other waits for the exit (two reports would interleave).
  if (g_bus_reported.exchange(true)) {
    for (;;) ::pause();
  }
  neardup::io::remove_temporary_files();
  char line[512] = "";
  for (const char* part : {static_cast<const char*>(g_program), ": error: ", static_cast<const char*>(name),
                           ": the input shrank while it was read (it is mapped into memory); keep inputs unchanged during a "
                           "run, or read them with --no-mmap\n"})
    std::strncat(line, part, sizeof line - std::strlen(line) - 1);
  put(line);  // one write: nothing else can come between its parts
  ::_exit(kExitIo);
}

}  // namespace

void install_signal_handlers(const char* program) {
  std::strncpy(g_program, program, sizeof g_program - 1);
  std::strncpy(g_message, program, sizeof g_message - 1);
  std::strncat(g_message, ": interrupted; temporary files removed, no partial output left\n", sizeof g_message - std::strlen(g_message) - 1);
  struct sigaction sa{};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old{};
    // A signal ignored by whoever started the program (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
  // Past `ulimit -f`, a write fails with EFBIG (an I/O error naming the file, exit 4) instead
  // of killing the process.
  ::signal(SIGXFSZ, SIG_IGN);
  struct sigaction bus{};
  bus.sa_sigaction = on_bus_error;
  bus.sa_flags = SA_SIGINFO;
  sigemptyset(&bus.sa_mask);
  ::sigaction(SIGBUS, &bus, nullptr);
}

void return_large_blocks_at_once() {
#if defined(__GLIBC__)
  // glibc serves a block from the system (mmap) above a threshold that it raises to the size of
  // every such block freed, up to 32 MiB. One record of tens of MB (its line, its parsed text,
  // the parser's buffers) thus makes every later block of up to 32 MiB come from the heap, where
  // it is kept resident between the sets held for verification: on the crowded mix the peak was
  // 400-467 MB. A fixed threshold of 16 MiB returns such blocks to the system when freed: peak
  // 353-381 MB, for about 4% more time (the pages of about a hundred large blocks are faulted in
  // anew); 8 MiB saved little more memory (350-360 MB) for 6% (BENCHMARKS.md). It is the
  // program's choice, not the library's: a program embedding the library keeps its own policy.
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargeBlockBytes));
  // Setting the mmap threshold also stops glibc from raising the trim threshold with it, which
  // then stays at 128 KiB: the free top of each thread's heap was given back to the system as
  // soon as it passed that, and faulted in again by the next records (on the crowded mix 151k page
  // faults in `pairs`, each about 2.4 us on a virtual machine). Keeping up to one large block's
  // worth free at the top: 124k faults, 4% less CPU, the same peak (BENCHMARKS.md).
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(kLargeBlockBytes));
  // The main heap grows by brk a little beyond each request (128 KiB by default), so the 2 MiB
  // range a new block falls in is seldom all inside it and cannot take a huge page (see
  // ask_huge_pages_for_the_heaps): its pages were faulted 4 KiB at a time. Growing it 16 MiB
  // beyond: `pairs` on the crowded mix 38k -> 22k page faults and 12% less CPU (5 alternating
  // runs). The pad is not resident until used, but huge pages are: `dedup`'s peak on the mix
  // 387-428 MB against 367-399 MB, under the estimate of 463 MB (BENCHMARKS.md).
  ::mallopt(M_TOP_PAD, static_cast<int>(kLargeBlockBytes));
#endif
}

void raise_open_file_limit() {
  // The soft limit on open files is often 1,024 while the hard one is far higher: a run over
  // thousands of compressed shards keeps a descriptor for each one's decompressed copy (up to a
  // quarter of the limit, io::RecordReader), and an index, its log and the outputs need more.
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

bool one_heap_for_all_threads() {
#if defined(__GLIBC__)
  // glibc gives each thread that allocates while another holds the heap's lock a heap (arena) of
  // its own, up to 8 per core. A block freed in one heap is reused only by the threads of that
  // heap, so the reading thread's buffers, each worker's scratch for its large records, and the
  // sets kept for verification each grew their own heap, and the process touched that much more
  // fresh memory. On a virtual machine whose host backs a page only when it is first touched, as
  // the 2-core machine of BENCHMARKS.md, that first touch costs more than the work done in it.
  // One heap for every thread: `pairs` on the crowded mix 1.98 s against 2.12 s (CPU 3.45 s
  // against 3.70 s, peak 324 MB against 354 MB; medians of 11 alternating runs), on the kernel
  // tree 1.07 s against 1.16 s, unchanged with minhash, bottom-k and SimHash (BENCHMARKS.md). A batch run allocates about 30,000 blocks a
  // second, too few to wait on the one lock; the service (`serve`), whose request threads
  // allocate all the time, keeps glibc's default. Set before the run's threads first allocate:
  // glibc fixes its arena limit then.
  return ::mallopt(M_ARENA_MAX, 1) == 1;
#else
  return false;
#endif
}

}  // namespace neardup::cli

// Sanitizers bring their own allocator (and their own operator new): the replacement below is
// left out.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define NEARDUP_OWN_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NEARDUP_OWN_ALLOCATOR 1
#endif

namespace neardup::cli {

// glibc's malloc backs its heaps with transparent huge pages only under the tunable
// glibc.malloc.hugetlb=1, and reads tunables once, when a process starts: the program sets it and
// starts itself again (the same process: exec keeps the pid, the open files and the arguments).
// Where huge pages are given on advice (the usual "madvise" setting), a heap that grows then
// faults 2 MiB at a time instead of 4 KiB. On one virtual machine an anonymous 4 KiB page fault
// cost 11.8 us and a huge page 0.3 us per 4 KiB; `pairs` on the crowded mix took 2.43 s instead
// of 3.08 s (CPU 4.17 against 5.06 s, page faults 93k against 162k; medians of 3 alternating runs),
// at 6% more peak memory (BENCHMARKS.md). On another a fault cost 1.5-2.5 us, and fresh huge
// pages, which its host backed 2 MiB at a time as the guest first touched them, cost four times
// what 4 KiB pages did (2.1-2.9 ms per MB against 0.5-0.6 ms): `pairs` on the mix ran in 1.63 s
// without the heaps on huge pages against 1.69-1.80 s with them (medians of 6 alternating runs,
// each after 6 s idle; back to back about the same). So the heaps ask for huge pages only where a
// fault is dear: kDearFaultMicroseconds or more, measured at start (page_fault_microseconds, about
// 1 ms). Where it is cheap, neither do the per-document arrays written and read in order
// (set_huge_pages_for_sequential_arrays): on the second machine `dedup` of 1 million short
// documents took 0.59-0.63 s with them on 4 KiB pages against 0.55-0.96 s on huge ones (8
// alternating runs; the slow runs those whose fresh huge pages the host had to back). The
// large blocks of operator new and the library's other large buffers keep asking for them: one
// 50 MB record took 67 ms with them against 82 ms without on the second machine, where `pairs`
// on the mix was the same either way (back to back). On a third, whose 4 KiB faults cost 4.3-5.8
// us (its runs fell on either side of the bound), neither way won everywhere: with the heaps on
// huge pages `dedup` of 1 million short documents in clusters took 1.08x the time it took with
// them on 4 KiB pages (median of 8 pairs of alternating runs, 0.93-1.31x), and `pairs` on the
// dense licence mix 0.94x (0.88-1.05x in 5 pairs; a sixth, in which the machine stalled for
// about 34 s, left out). So the bound stays where it is.
#if defined(__GLIBC__) && !defined(NEARDUP_OWN_ALLOCATOR)
// Whether /proc/self/exe is the file this code was loaded from: not so when the program was
// started through the dynamic loader (`ld.so ./neardup ...`) or under a tool that runs it
// itself, where executing /proc/self/exe again would start the loader or the tool instead.
// `exe` receives the file's path (at least 4096 bytes).
static bool runs_as_its_own_file(char* exe) noexcept {
  const ssize_t n = ::readlink("/proc/self/exe", exe, 4095);
  if (n <= 0) return false;
  exe[n] = '\0';
  const auto here = reinterpret_cast<uintptr_t>(&runs_as_its_own_file);
  bool same = false;
  for_each_mapping([&](const Mapping& m) {
    if (here < m.begin || here >= m.end) return true;
    same = std::strcmp(m.path, exe) == 0;
    return false;
  });
  return same;
}
#endif

void ask_huge_pages_for_the_heaps(char** argv) {
#if defined(__GLIBC__) && !defined(NEARDUP_OWN_ALLOCATOR)
  const char* old = std::getenv("GLIBC_TUNABLES");
  // Set already (by this program before its exec, or by the user, who may also turn it off with
  // glibc.malloc.hugetlb=0): the threads' arena heaps follow it. A secure-execution process has
  // its tunables filtered: left alone.
  if (const char* t = old ? std::strstr(old, "glibc.malloc.hugetlb=") : nullptr) {
    g_heaps_on_huge_pages = t[std::strlen("glibc.malloc.hugetlb=")] != '0';
    return;
  }
  if (::getauxval(AT_SECURE)) return;
  // With "always" the heaps get huge pages anyway, with "never" not at all.
  char mode[128] = {};
  if (FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    const size_t n = std::fread(mode, 1, sizeof mode - 1, f);
    std::fclose(f);
    mode[n] = '\0';
  }
  if (!std::strstr(mode, "[madvise]")) return;
  if (page_fault_microseconds() < kDearFaultMicroseconds) {
    // Cheap faults: the arrays written and read in order take 4 KiB pages too (neardup/cpu.h).
    set_huge_pages_for_sequential_arrays(false);
    return;
  }
  char exe[4096];
  if (!runs_as_its_own_file(exe)) return;
  const std::string saved = old ? old : "";
  const std::string value = saved.empty() ? "glibc.malloc.hugetlb=1" : saved + ":glibc.malloc.hugetlb=1";
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  // By its own path, not /proc/self/exe: the kernel names the process after the file executed,
  // and `ps` or `pgrep -x neardup` would see "exe".
  ::execv(exe, argv);
  // Not started again (no /proc): the program goes on as it is.
  if (old) {
    ::setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
#endif
}

}  // namespace neardup::cli

// Blocks of kLargeBlockBytes or more from operator new ask for transparent huge pages: they are
// the buffers of records of tens of MB (the JSON parser's text and tape, word and shingle
// arrays), filled once and freed, so that each of their 4 KiB pages costs a page fault; with
// huge pages one fault maps 2 MiB. One 50 MB record: 13k page faults instead of 36k, 134 ms
// instead of 176 (medians of 9; 50 records of 1 MB: 96 ms either way; BENCHMARKS.md). Smaller
// blocks keep glibc's default. Every form of operator new and delete is replaced, so that new
// and delete stay a matched pair of malloc and free.
#if !defined(NEARDUP_OWN_ALLOCATOR)
namespace {

// glibc's heaps of the threads' arenas: 64 MiB mappings aligned to their size (HEAP_MAX_SIZE), made
// writable from their start as they grow (mprotect of the pages needed, no more), the rest
// reserved without access.
constexpr uintptr_t kArenaHeapBytes = uintptr_t{64} << 20;
const uintptr_t g_brk_start = reinterpret_cast<uintptr_t>(::sbrk(0));
thread_local uintptr_t t_seen_heap = 0;
std::atomic<uintptr_t> g_heaps[64];  // heaps handled (or found not to be heaps), by any thread

// Whether [heap, heap + kArenaHeapBytes) is exactly a glibc arena heap holding `at`: anonymous
// private mappings, the first starting at `heap` and writable with `at` in it, then at most one
// without access, the last ending at heap + kArenaHeapBytes (from /proc/self/maps). Anything else
// there (the main arena's mmap fallback, other mappings) is left alone.
bool is_arena_heap(uintptr_t heap, uintptr_t at) noexcept {
  uintptr_t next = heap;
  int parts = 0;
  bool ok = true, holds = false;
  const bool read = for_each_mapping([&](const Mapping& m) {
    if (m.end <= heap || m.begin >= heap + kArenaHeapBytes) return true;
    const bool writable = std::strcmp(m.perms, "rw-p") == 0, reserved = std::strcmp(m.perms, "---p") == 0;
    ok = m.begin == next && m.inode == 0 && *m.path == '\0' && (parts == 0 ? writable : reserved) && ++parts <= 2;
    if (ok && writable) holds = at >= m.begin && at < m.end;
    next = m.end;
    return ok;
  });
  return read && ok && holds && next == heap + kArenaHeapBytes;
}

// Where the heaps are on huge pages (glibc.malloc.hugetlb=1) and `p` lies in one of the threads'
// arena heaps (not in the main heap, which grows by brk and gets huge pages from glibc), the
// whole heap is made writable and asked for huge pages, once per heap. glibc advises only the
// heap's first part, and a heap grows a few pages at a time, so the 2 MiB range a new block falls
// in is seldom all writable: without both, the threads' heaps faulted 4 KiB at a time (`pairs` on
// the crowded mix: 68-77k page faults, and 26-40k with both, for 6-9% less CPU; BENCHMARKS.md).
// The pages stay unmapped until touched; glibc only ever makes more of a heap writable (it gives
// memory back with MADV_DONTNEED), so it never undoes this.
void advise_arena_heap(const void* p) noexcept {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t heap = at & ~(kArenaHeapBytes - 1);
  if (heap == t_seen_heap) return;
  if (!g_heaps_on_huge_pages) return;
  // Remembered either way: a window of the main heap holds no arena heap (those are mappings of
  // their own), so the next blocks from it return above.
  t_seen_heap = heap;
  if (at >= g_brk_start && at < reinterpret_cast<uintptr_t>(::sbrk(0))) return;
  for (auto& slot : g_heaps) {
    uintptr_t v = slot.load(std::memory_order_acquire);
    if (v == heap) return;
    if (v != 0) continue;
    if (!slot.compare_exchange_strong(v, heap)) {
      if (v == heap) return;
      continue;
    }
    if (is_arena_heap(heap, at) && ::mprotect(reinterpret_cast<void*>(heap), kArenaHeapBytes, PROT_READ | PROT_WRITE) == 0)
      ::madvise(reinterpret_cast<void*>(heap), kArenaHeapBytes, MADV_HUGEPAGE);  // advice only
    return;
  }
}

// The main heap's pages from its top on, faulted in ahead (MADV_POPULATE_WRITE) by the thread
// whose block came near them, outside the heap's lock: glibc writes the header of the free rest
// of the heap past each block it carves from the top, so a thread that took a block of a few KiB
// took the next page's fault while holding the lock that every other thread waited on (one heap
// for every thread: one_heap_for_all_threads). Reading the dense licence variants' group again,
// whose 26,600 sets of about 500 hashes are each a block of the workers, a third of the run's
// context switches were waits for that lock. With the pages faulted in ahead: on those variants
// alone 11.5-14.8k page faults instead of 38.7-39.0k and 4.1-4.6k context switches instead of
// 4.9-6.5k; `pairs` of the dense licence mix 1.75 s against 1.825 s and 1.745 s against 1.79 s
// (8 and 12 alternating runs, each after `zstd`), the crowded mix and a dedup of 1 million short
// documents within the noise (1.115 against 1.13 s, 0.925 against 0.91 s).
constexpr uintptr_t kPopulateAhead = uintptr_t{2} << 20;
std::atomic<uintptr_t> g_populated{0};
std::atomic<bool> g_populate{true};

void populate_heap_ahead(const void* p, size_t n) noexcept {
  if (!g_populate.load(std::memory_order_relaxed)) return;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  if (end < g_brk_start) return;
  const auto top = reinterpret_cast<uintptr_t>(::sbrk(0));  // glibc's copy of the break: no system call
  if (end >= top) return;  // not the main heap
  // Past the top, the heap was given back since (malloc_trim, or glibc trimming its top).
  uintptr_t done = g_populated.load(std::memory_order_relaxed);
  if (std::min(done, top) > end + kPopulateAhead / 2) return;
  const uintptr_t from = std::max((end + 4095) & ~uintptr_t{4095}, std::min(done, top));
  const uintptr_t to = std::min(from + kPopulateAhead, top);
  if (from >= to || !g_populated.compare_exchange_strong(done, to)) return;
#ifdef MADV_POPULATE_WRITE
  const int saved = errno;
  if (::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) g_populate = false;  // before Linux 5.14
  errno = saved;
#else
  g_populate = false;
#endif
}

void* allocate(size_t n) noexcept {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p && n < kLargeBlockBytes) {
    populate_heap_ahead(p, n);
    advise_arena_heap(p);
  }
  if (p && n >= kLargeBlockBytes) {
    // Whole pages of the block: at the mmap threshold set above, glibc maps it alone.
    const auto begin = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
    const auto end = (reinterpret_cast<uintptr_t>(p) + n + 4095) & ~uintptr_t{4095};
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice only: may fail
  }
  return p;
}

void* allocate_or_throw(size_t n) {
  for (;;) {
    if (void* p = allocate(n)) return p;
    const std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

}  // namespace

void* operator new(size_t n) { return allocate_or_throw(n); }
void* operator new[](size_t n) { return allocate_or_throw(n); }
// The nothrow forms try as the others do (the new handler included) and return null instead of
// throwing.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate_or_throw(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // NEARDUP_OWN_ALLOCATOR
