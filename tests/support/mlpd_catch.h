// Catch2 for the unit tests, v2 (Debian 12's catch2) or v3 (Debian 13's): one include for both.
#pragma once

#include <string>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define MLPD_CATCH_V3 1
#else
#include <catch2/catch.hpp>
#endif

namespace mlpd_test {

// A matcher for "the string contains this text": Catch::Contains in v2, ContainsSubstring in v3.
inline auto contains(const std::string& text) {
#ifdef MLPD_CATCH_V3
  return Catch::Matchers::ContainsSubstring(text);
#else
  return Catch::Contains(text);
#endif
}

}  // namespace mlpd_test
