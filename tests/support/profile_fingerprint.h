// Test support: every field of a Profile (reader/profile), as one string, so that two builds of one
// file can be compared whole (the parallel build against the one-thread build: the unit test
// profile_parallel_test.cpp and the fuzz target profile_fuzz). The fields are the model's own lists
// (Fields<T>, mlpd/profile.h), walked down to numbers and strings: a field added to the model is in the
// fingerprint without a word here (tests/unit/reader/profile_fields_test.cpp). Header-only: the fuzz
// target compiles it with its own instrumentation.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "mlpd/profile.h"

namespace mlpd::test {

namespace fingerprint_detail {

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsArray : std::false_type {};
template <class T, size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};

// A model struct: one with a field list.
template <class T>
concept Listed = requires { sizeof(profile::Fields<T>); };

struct Writer {
  std::string& s;
  template <class T>
  void operator()(const char* name, const T& x) {
    s += name;
    s += '=';
    put(x);
    s += ' ';
  }
  void num(uint64_t v) { s += std::to_string(v); }
  template <class T>
  void put(const T& x) {
    if constexpr (std::is_same_v<T, std::string>) {
      num(x.size());
      s += ':';
      s += x;
    } else if constexpr (std::is_same_v<T, double>) {
      uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      num(bits);
    } else if constexpr (std::is_enum_v<T>) {
      num(static_cast<uint64_t>(x));
    } else if constexpr (std::is_integral_v<T>) {
      num(static_cast<uint64_t>(x));
    } else if constexpr (IsVector<T>::value || IsArray<T>::value) {
      s += '[';
      num(x.size());
      for (const auto& e : x) {
        s += ' ';
        put(e);
      }
      s += ']';
    } else {
      static_assert(Listed<T>, "a model field of a type the fingerprint cannot write: give it Fields<T>");
      s += '{';
      profile::visit_fields(x, *this);
      s += '}';
    }
  }
};

}  // namespace fingerprint_detail

inline std::string profile_fingerprint(const profile::Profile& p) {
  std::string s;
  fingerprint_detail::Writer w{s};
  profile::visit_fields(p, w);
  return s;
}

// Where two fingerprints first differ: the fields before it (the path there) and what follows in each.
inline std::string fingerprint_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "";
  const size_t from = i > 300 ? i - 300 : 0;
  return "..." + a.substr(from, i - from) + "\n  first: " + a.substr(i, 80) + "\n  second: " + b.substr(i, 80);
}

}  // namespace mlpd::test
