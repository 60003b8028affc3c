// The folded dominator tree as collapsed stacks of retained bytes (retained_stacks: what mlpd export
// --what retained draws), and those stacks as pprof's profile.proto, gzip-compressed:
// one sample per stack, leaf first, valued in retained bytes ("retained"/"bytes"), one Function and
// one Location per distinct frame (a root or a class). `go tool pprof -top` then lists the classes by
// the bytes they retain themselves, `-cum` with what they hold.
#include <string_view>
#include <unordered_map>

#include "pprof_common.h"
#include "mlpd/retention.h"
#include "profile.pb.h"

namespace mlpd::views {

namespace {

// A frame name: the stack separator is ';'.
std::string frame(std::string s) {
  for (char& c : s)
    if (c == ';') c = ':';
  return s;
}

}  // namespace

std::vector<CollapsedStack> retained_stacks(const Retention& r) {
  std::vector<CollapsedStack> stacks(r.folded.size());
  std::vector<uint64_t> self(r.folded.size());
  for (size_t i = 0; i < r.folded.size(); ++i) {
    const FoldedNode& x = r.folded[i];
    CollapsedStack& s = stacks[i];
    if (x.parent == UINT32_MAX) {
      const RootName& root = r.roots[x.root];
      s.stack = frame(root.name.empty() ? root.kind : root.kind + " \"" + root.name + "\"");
      s.kinds = "t";
    } else {
      s.stack = stacks[x.parent].stack;
      s.kinds = stacks[x.parent].kinds;
      self[x.parent] -= x.retained;
    }
    s.stack += ';' + frame(r.classes[x.klass].name);
    s.kinds += 'm';
    self[i] += x.retained;
  }
  std::vector<CollapsedStack> kept;
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (self[i] == 0) continue;
    stacks[i].weight = self[i];
    kept.push_back(std::move(stacks[i]));
  }
  return kept;
}

bool write_retained_pprof(const std::vector<CollapsedStack>& stacks, std::FILE* out, std::string& error) {
  perftools::profiles::Profile pb;
  detail::PprofStrings str(pb);
  auto* type = pb.add_sample_type();
  type->set_type(str("retained"));
  type->set_unit(str("bytes"));
  pb.mutable_period_type()->set_type(str("retained"));
  pb.mutable_period_type()->set_unit(str("bytes"));
  pb.set_period(1);
  std::unordered_map<std::string, uint64_t> locations;  // frame name -> location (= function) id
  auto location = [&](std::string_view name) {
    auto [it, added] = locations.emplace(std::string(name), locations.size() + 1);
    if (added) {
      auto* fn = pb.add_function();
      fn->set_id(it->second);
      // No system name: pprof takes a function with one for C++ and cuts `<...>` out of
      // `List<CacheItem>` (issue 22, item 10).
      fn->set_name(str(name));
      auto* loc = pb.add_location();
      loc->set_id(it->second);
      loc->add_line()->set_function_id(it->second);
    }
    return it->second;
  };
  std::vector<std::string_view> frames;
  for (const CollapsedStack& s : stacks) {
    frames.clear();
    std::string_view rest = s.stack;
    for (size_t semi; (semi = rest.find(';')) != std::string_view::npos; rest.remove_prefix(semi + 1))
      frames.push_back(rest.substr(0, semi));
    frames.push_back(rest);
    auto* sample = pb.add_sample();
    for (size_t k = frames.size(); k > 0; --k) sample->add_location_id(location(frames[k - 1]));
    sample->add_value(static_cast<int64_t>(s.weight));
  }
  std::string bytes;
  if (!pb.SerializeToString(&bytes) || bytes.size() >= (uint64_t(1) << 32)) {
    error = "the profile cannot be serialized";
    return false;
  }
  return detail::gzip_to(bytes, out, error);
}

}  // namespace mlpd::views
