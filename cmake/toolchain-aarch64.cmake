# Cross build for arm64 (scripts/build-arm64.sh): Debian's aarch64-linux-gnu-gcc with a Debian 12 arm64
# root as the sysroot (scripts/mono-root.sh arm64 puts the development packages there: libc6-dev,
# libstdc++-12-dev, libunwind-dev, libdeflate-dev, zlib1g-dev, libprotobuf-dev, libmono-2.0-dev, catch2).
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DMLPD_SYSROOT=/path/to/root ...
# Programs (protoc, mcs, python3) are this machine's; headers, libraries and CMake packages the root's.
# Tests that run a target (ctest) go through qemu-user with the root's loader and libraries.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The toolchain file is read again for every try_compile: the root comes from the cache or the
# environment (build-arm64.sh sets both).
if(NOT MLPD_SYSROOT AND DEFINED ENV{MLPD_SYSROOT})
  set(MLPD_SYSROOT "$ENV{MLPD_SYSROOT}")
endif()
if(NOT MLPD_SYSROOT OR NOT EXISTS "${MLPD_SYSROOT}/usr/include/aarch64-linux-gnu")
  message(FATAL_ERROR "toolchain-aarch64.cmake: MLPD_SYSROOT='${MLPD_SYSROOT}' is not an arm64 root with "
                      "the development packages (scripts/mono-root.sh arm64)")
endif()
set(ENV{MLPD_SYSROOT} "${MLPD_SYSROOT}")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES MLPD_SYSROOT)

set(CMAKE_SYSROOT "${MLPD_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${MLPD_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (libdeflate, mono-2): the root's .pc files, their paths under the root.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${MLPD_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${MLPD_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${MLPD_SYSROOT}/usr/lib/pkgconfig:${MLPD_SYSROOT}/usr/share/pkgconfig")
unset(ENV{PKG_CONFIG_PATH})

# The host's protoc (the same protobuf release as the root's library: Debian 12's both).
find_program(Protobuf_PROTOC_EXECUTABLE protoc)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L "${MLPD_SYSROOT}")
