// Instruction-set dispatch. Every SIMD kernel has a scalar reference and matches it bit for bit;
// the level is chosen at run time from the CPU, and each level is one table of kernels
// (kernels/dispatch.h). The library never reads the environment: the CLI maps
// NEARDUP_FORCE_ISA=scalar|avx2|avx512|avx512vbmi to force_isa(), and tests call it directly.
#pragma once

#include <optional>
#include <string_view>

namespace neardup {

/// Levels, each including the ones before it: Avx512 is AVX-512 F, DQ, BW and VL; Avx512Vbmi
/// adds VBMI and VBMI2 (byte permutes and compresses).
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Vbmi = 3 };

/// The best instruction set this CPU supports (among those neardup has kernels for).
Isa detected_isa() noexcept;
/// The instruction set kernels use now: detected_isa(), unless forced.
Isa active_isa() noexcept;
/// Forces kernels to `isa`; throws UsageError if the CPU does not support it.
void force_isa(Isa isa);
/// Returns to the detected instruction set.
void reset_isa() noexcept;
const char* isa_name(Isa isa) noexcept;
std::optional<Isa> parse_isa(std::string_view name) noexcept;

/// The time of one 4 KiB page fault on fresh anonymous memory, in microseconds: 512 of them on
/// 2 MiB, measured now (about 1 ms); 0 if no memory could be mapped. Like the instruction set,
/// a property of the machine that decides how neardup runs best: the `neardup` program backs its
/// heaps with transparent huge pages only where a fault is dear (docs/robustness.md). Here, in
/// the library, so that it is tested with it.
double page_fault_microseconds() noexcept;

/// Whether the arrays a run writes once in order and reads in order (the first pass's band keys
/// and text hashes, 184 B per document at 21 bands) ask for transparent huge pages once past 2
/// MiB. Default: yes, as every large array does. Where a 4 KiB page fault is cheap, 4 KiB pages
/// cost less and vary less: on a virtual machine whose host backs the guest's fresh huge pages
/// only as they are first touched, `dedup` of 1 million short documents took 0.59-0.63 s on 4 KiB
/// pages against 0.55-0.96 s on huge ones (BENCHMARKS.md). The `neardup` program turns
/// it off where a fault measures cheap (docs/robustness.md). Process-wide; set before a run.
void set_huge_pages_for_sequential_arrays(bool on) noexcept;
bool huge_pages_for_sequential_arrays() noexcept;

}  // namespace neardup
