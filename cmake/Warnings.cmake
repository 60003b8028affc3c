# Project-wide warning flags, applied per target with mlpd_warnings(target).
function(mlpd_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers)
  if(MLPD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
