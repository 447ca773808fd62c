# Finds Debian's libxxhash-dev (which ships no CMake config) and defines xxhash::xxhash.
find_path(xxhash_INCLUDE_DIR NAMES xxhash.h)
find_library(xxhash_LIBRARY NAMES xxhash)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxhash REQUIRED_VARS xxhash_LIBRARY xxhash_INCLUDE_DIR)
if(xxhash_FOUND AND NOT TARGET xxhash::xxhash)
  add_library(xxhash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxhash::xxhash PROPERTIES
    IMPORTED_LOCATION "${xxhash_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${xxhash_INCLUDE_DIR}")
endif()
mark_as_advanced(xxhash_INCLUDE_DIR xxhash_LIBRARY)
