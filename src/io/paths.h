// Path helpers the output writers share.
#pragma once

#include <string>

namespace neardup::io {

/// The directory a path names a file in: "." for a bare name, "/" for one at the root.
inline std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace neardup::io
