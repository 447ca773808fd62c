# Cross-compiling for 64-bit ARM with Debian's cross compiler (g++-aarch64-linux-gnu) against
# Debian's arm64 libraries (multiarch: `dpkg --add-architecture arm64`, then the -dev packages
# with :arm64; scripts/install-deps.sh portable installs them). Run the result with qemu-user:
#   qemu-aarch64 build-aarch64/neardup ...
# (without -L: the arm64 libraries, C library included, are where the loader looks; -L
# /usr/aarch64-linux-gnu would mix the cross compiler's C library with the arm64 one)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# GCC notes on aarch64 that passing std::pair<double, double> changed in GCC 10 (-Wpsabi): an ABI
# note for mixing objects built by older compilers, which this build never does.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
# Libraries and packages' CMake files from the arm64 packages only; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
