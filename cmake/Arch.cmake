# Which arch/<isa>/ folder the build uses: MLPD_ARCH (x86_64, aarch64 or generic), by default from
# CMAKE_SYSTEM_PROCESSOR. A processor without a folder of its own builds with generic/ (CLOCK_MONOTONIC,
# leaf-only native samples, Mono's stack walk for every backtrace) and says so.
set(MLPD_ARCH "" CACHE STRING "Machine support from arch/: x86_64, aarch64 or generic (empty: from the processor)")
set_property(CACHE MLPD_ARCH PROPERTY STRINGS "" x86_64 aarch64 generic)
if(MLPD_ARCH STREQUAL "")
  string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" _proc)
  if(_proc MATCHES "^(x86_64|amd64)$")
    set(MLPD_ARCH x86_64)
  elseif(_proc MATCHES "^(aarch64|arm64)$")
    set(MLPD_ARCH aarch64)
  else()
    message(STATUS "mlpd: no arch/ folder for processor '${CMAKE_SYSTEM_PROCESSOR}': building with "
                   "arch/generic (CLOCK_MONOTONIC, leaf-only native samples)")
    set(MLPD_ARCH generic)
  endif()
elseif(NOT MLPD_ARCH MATCHES "^(x86_64|aarch64|generic)$")
  message(FATAL_ERROR "MLPD_ARCH='${MLPD_ARCH}': expected x86_64, aarch64 or generic")
endif()
message(STATUS "mlpd: arch/${MLPD_ARCH}")
