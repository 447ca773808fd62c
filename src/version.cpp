#include <simdjson.h>
#include <unicode/uvernum.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "neardup/neardup.h"

namespace neardup {

const char* version() noexcept { return NEARDUP_VERSION; }

std::string version_info() {
  const unsigned xx = XXH_versionNumber();
  return std::string("neardup ") + NEARDUP_VERSION + " (kernel " + isa_name(active_isa()) + "; detected " +
         isa_name(detected_isa()) + ")\n" + "simdjson " + std::to_string(simdjson::SIMDJSON_VERSION_MAJOR) + "." + std::to_string(simdjson::SIMDJSON_VERSION_MINOR) + "." + std::to_string(simdjson::SIMDJSON_VERSION_REVISION) + ", zstd " + ZSTD_versionString() +
         ", zlib " + zlibVersion() + ", xxhash " + std::to_string(xx / 10000) + "." +
         std::to_string(xx / 100 % 100) + "." + std::to_string(xx % 100) + ", ICU " + U_ICU_VERSION;
}

}  // namespace neardup
