// Umbrella header of the neardup library.
#pragma once

#include <string>

#include "neardup/allpairs.h"
#include "neardup/bucket_verify.h"
#include "neardup/bottomk.h"
#include "neardup/cluster.h"
#include "neardup/cpu.h"
#include "neardup/error.h"
#include "neardup/eval.h"
#include "neardup/index.h"
#include "neardup/live_index.h"
#include "neardup/io/reader.h"
#include "neardup/io/stream.h"
#include "neardup/io/tsv.h"
#include "neardup/io/writer.h"
#include "neardup/lsh_index.h"
#include "neardup/minhash.h"
#include "neardup/pipeline.h"
#include "neardup/report.h"
#include "neardup/shingle.h"
#include "neardup/simhash.h"
#include "neardup/spec.h"
#include "neardup/stages.h"
#include "neardup/text.h"
#include "neardup/option_rules.h"
#include "neardup/thread_pool.h"
#include "neardup/tune.h"
#include "neardup/types.h"
#include "neardup/union_find.h"
#include "neardup/verify.h"

namespace neardup {

/// The library version, e.g. "0.1.0".
const char* version() noexcept;
/// One line naming the version, the active SIMD kernel and the dependency versions.
std::string version_info();

}  // namespace neardup
