// The threads a call of the Python module runs on when the caller names none: one per hardware
// thread (module.cpp and datasketch_native.cpp).
#pragma once

#include <algorithm>
#include <thread>

namespace neardup::python {

inline int default_threads(int threads = 0) {
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace neardup::python
