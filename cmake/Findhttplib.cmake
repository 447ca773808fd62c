# Finds Debian's libcpp-httplib-dev, a compiled cpp-httplib that ships a pkg-config file and no
# CMake config, and defines httplib::httplib with the compile definitions the library was built
# with (its classes' layout depends on them).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_HTTPLIB QUIET cpp-httplib)
endif()
find_path(httplib_INCLUDE_DIR NAMES httplib.h HINTS ${PC_HTTPLIB_INCLUDE_DIRS})
find_library(httplib_LIBRARY NAMES cpp-httplib HINTS ${PC_HTTPLIB_LIBRARY_DIRS})
set(httplib_VERSION ${PC_HTTPLIB_VERSION})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(httplib REQUIRED_VARS httplib_LIBRARY httplib_INCLUDE_DIR VERSION_VAR httplib_VERSION)
if(httplib_FOUND AND NOT TARGET httplib::httplib)
  add_library(httplib::httplib UNKNOWN IMPORTED)
  set(_httplib_defs ${PC_HTTPLIB_CFLAGS_OTHER})
  list(FILTER _httplib_defs INCLUDE REGEX "^-D")
  list(TRANSFORM _httplib_defs REPLACE "^-D" "")
  set_target_properties(httplib::httplib PROPERTIES
    IMPORTED_LOCATION "${httplib_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${httplib_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "${_httplib_defs}")
endif()
mark_as_advanced(httplib_INCLUDE_DIR httplib_LIBRARY)
