# CPack settings for the Debian package (see the top-level CMakeLists.txt).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mlpd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "mlpd")
set(CPACK_PACKAGE_CONTACT "mlpd maintainers <mlpd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "low-overhead profiler for Mono programs (Mono log profiler format)")
set(CPACK_PACKAGE_DESCRIPTION
    "mlpd profiles Mono programs with little overhead: libmlpd.so (LD_PRELOAD=libmlpd.so or\n"
    "mono --profile=mlpd) writes Mono log profiler files that mprof-report reads; the mlpd command\n"
    "verifies, dumps and compares them and talks to a running program's command port.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # mlpd_VERSION_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Libraries the binaries link (libc, libstdc++, zlib...) found by dpkg-shlibdeps; Mono itself is loaded
# by the program being profiled, never linked, so it is declared by hand. mprof-report (mono-utils)
# reads our files and the `report` option runs it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "mono-runtime (>= 6.8)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mono-utils, libcurl4")  # libcurl4: mlpd push and push= (dlopen)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
# A cross build (scripts/build-arm64.sh): the package is the target's architecture, and dpkg-shlibdeps,
# which reads this machine's package database, cannot name the target's library packages: the script
# passes the Depends it made from the sysroot's shlibs files (cpack -D CPACK_DEBIAN_PACKAGE_DEPENDS=...).
if(CMAKE_CROSSCOMPILING)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  endif()
endif()
set(CPACK_STRIP_FILES OFF)
if(NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib")
  message(STATUS "mlpd: CMAKE_INSTALL_LIBDIR is ${CMAKE_INSTALL_LIBDIR}: a package from this build puts "
                 "libmono-profiler-mlpd.so there, not in /usr/lib beside Mono's own profilers")
endif()
include(CPack)
