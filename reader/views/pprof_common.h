// What the two pprof writers share (export_pprof.cpp: the profile model's views; retention_pprof.cpp:
// the dominator tree): the string table and the gzip step.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "export_common.h"
#include "profile.pb.h"

namespace mlpd::views::detail {

// pprof's string table: index 0 is "", every other string once, UTF-8 (proto3 requires it).
class PprofStrings {
 public:
  explicit PprofStrings(perftools::profiles::Profile& pb) : pb_(pb) { pb_.add_string_table(""); }
  int64_t operator()(std::string_view raw) {
    auto [it, inserted] = index_.emplace(std::string(raw), static_cast<int64_t>(index_.size() + 1));
    if (inserted) pb_.add_string_table(utf8_clean(raw));
    return it->second;
  }

 private:
  perftools::profiles::Profile& pb_;
  std::unordered_map<std::string, int64_t> index_;
};

// Writes `data` gzip-compressed to `out` (data below 4 GiB: the callers check). False with `error` set.
bool gzip_to(const std::string& data, std::FILE* out, std::string& error);

}  // namespace mlpd::views::detail
