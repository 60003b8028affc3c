// The profile model's vocabulary and the Profile itself (mlpd/profile.h). The model is built by the
// Builder of profile/builder.h, whose parts live by concern in builder.cpp, call_tree.cpp,
// tallies.cpp, naming.cpp and method_stats.cpp.
#include "mlpd/profile.h"

#include <cstdio>

namespace mlpd::profile {

std::string_view what_name(What w) {
  static constexpr std::string_view k[] = {"cpu", "alloc", "alloc-bytes", "calls", "exceptions", "monitor"};
  return k[static_cast<size_t>(w)];
}

bool parse_what(std::string_view s, What& out) {
  for (size_t i = 0; i < kWhatCount; ++i) {
    if (what_name(static_cast<What>(i)) == s) {
      out = static_cast<What>(i);
      return true;
    }
  }
  return false;
}

std::string_view what_option(What w) {
  static constexpr std::string_view k[] = {"sample", "alloc", "alloc", "calls", "exception", "monitor"};
  return k[static_cast<size_t>(w)];
}

std::string_view what_unit(What w) {
  static constexpr std::string_view k[] = {"samples", "objects", "bytes", "nanoseconds", "throws", "contentions"};
  return k[static_cast<size_t>(w)];
}

std::string_view frame_kind_name(FrameKind k) {
  static constexpr std::string_view n[] = {"managed", "native", "runtime", "special"};
  return n[static_cast<size_t>(k)];
}

std::string thread_label(const ThreadInfo& t) {
  char id[32];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(t.id));
  if (t.name.empty()) return std::string("thread ") + id;
  return t.name + " (" + id + ")";
}

Profile::Profile() = default;
Profile::~Profile() = default;
Profile::Profile(Profile&&) noexcept = default;
Profile& Profile::operator=(Profile&&) noexcept = default;
Profile::Profile(const Profile&) = default;
Profile& Profile::operator=(const Profile&) = default;

}  // namespace mlpd::profile
