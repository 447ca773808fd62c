// Instruction-set dispatch. Every SIMD kernel has a scalar reference and matches it bit for bit;
// the variant is chosen at run time from the CPU. The library never reads the environment: the
// CLI maps NEARDUP_FORCE_ISA=scalar|avx2|avx512 to force_isa(), and tests call it directly.
#pragma once

#include <optional>
#include <string_view>

namespace neardup {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

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

}  // namespace neardup
