# Project-wide warning flags, applied per target with mlpd_warnings(target).
function(mlpd_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
  # GCC 12 at -O2/-O3 reports -Wrestrict inside libstdc++ for `"literal" + std::string` (GCC bug
  # 105329, a false positive: the inlined memcpy's impossible sizes); it cannot be fixed in our code
  # short of avoiding operator+ everywhere, so it is off for GCC.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(MLPD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
