#include "neardup/cpu.h"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "neardup/error.h"

namespace neardup {
namespace {

Isa detect() noexcept {
#if !defined(__x86_64__)
  return Isa::Scalar;  // the SIMD kernels are x86-64's; elsewhere the scalar ones serve
#else
  __builtin_cpu_init();
  // The SIMD kernels are also built with POPCNT and BMI1, which every AVX2 CPU has.
  if (!__builtin_cpu_supports("popcnt") || !__builtin_cpu_supports("bmi")) return Isa::Scalar;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2") ? Isa::Avx512Vbmi : Isa::Avx512;
  if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
  return Isa::Scalar;
#endif
}

std::atomic<int>& forced() {
  static std::atomic<int> value{-1};
  return value;
}

}  // namespace


Isa detected_isa() noexcept {
  static const Isa isa = detect();
  return isa;
}

Isa active_isa() noexcept {
  const int f = forced().load(std::memory_order_relaxed);
  return f < 0 ? detected_isa() : static_cast<Isa>(f);
}

void force_isa(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected_isa()))
    throw UsageError(std::string("this CPU does not support ") + isa_name(isa) +
                     " (best available: " + isa_name(detected_isa()) + ")");
  forced().store(static_cast<int>(isa), std::memory_order_relaxed);
}

void reset_isa() noexcept { forced().store(-1, std::memory_order_relaxed); }

const char* isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Vbmi: return "avx512vbmi";
  }
  return "?";
}

double page_fault_microseconds() noexcept {
  constexpr size_t kBytes = size_t{2} << 20, kPage = 4096;
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
#ifdef MADV_NOHUGEPAGE
  ::madvise(p, kBytes, MADV_NOHUGEPAGE);  // 4 KiB pages even where the system gives huge ones unasked
#endif
  const auto t = std::chrono::steady_clock::now();
  for (size_t i = 0; i < kBytes; i += kPage) static_cast<volatile char*>(p)[i] = 1;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
  ::munmap(p, kBytes);
  return us / static_cast<double>(kBytes / kPage);
}

namespace {
std::atomic<bool> g_sequential_huge_pages{true};
}  // namespace

void set_huge_pages_for_sequential_arrays(bool on) noexcept { g_sequential_huge_pages.store(on, std::memory_order_relaxed); }
bool huge_pages_for_sequential_arrays() noexcept { return g_sequential_huge_pages.load(std::memory_order_relaxed); }

std::optional<Isa> parse_isa(std::string_view name) noexcept {
  if (name == "scalar") return Isa::Scalar;
  if (name == "avx2") return Isa::Avx2;
  if (name == "avx512") return Isa::Avx512;
  if (name == "avx512vbmi") return Isa::Avx512Vbmi;
  return std::nullopt;
}

}  // namespace neardup
