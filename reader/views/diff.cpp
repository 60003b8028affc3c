// The differential flame graph's input (mlpd diff): two profiles' stacks of one --what joined by
// their frame names, B's weights as the widths and A's as the base, and its collapsed text form.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "mlpd/views.h"

namespace mlpd::views {

namespace {

// "Main (0x7f..)" -> "Main": two runs have different thread ids, so threads match by name.
void drop_thread_ids(std::vector<CollapsedStack>& stacks) {
  for (CollapsedStack& s : stacks) {
    const size_t end = s.stack.find(';');
    const size_t id = s.stack.rfind(" (0x", end);
    if (id != std::string::npos && id != 0 && (end == std::string::npos || id < end))
      s.stack.erase(id, (end == std::string::npos ? s.stack.size() : end) - id);
  }
}

}  // namespace

FlameGraphInput diff_stacks(const profile::Profile& a, const profile::Profile& b, const DiffOptions& o) {
  auto sa = collapse(a, o.what, o.threads);
  auto sb = collapse(b, o.what, o.threads);
  if (o.managed) {
    sa = managed_only(sa);
    sb = managed_only(sb);
  }
  if (o.threads) {
    drop_thread_ids(sa);
    drop_thread_ids(sb);
  }
  FlameGraphInput in;
  in.diff = true;
  in.unit = std::string(profile::what_unit(o.what));
  in.title = std::string(profile::what_name(o.what)) + " diff: " + o.name_a + " -> " + o.name_b;
  std::unordered_map<std::string, size_t> index;
  auto slot = [&](const CollapsedStack& s) {
    auto [it, inserted] = index.try_emplace(s.stack, in.stacks.size());
    if (inserted) {
      in.stacks.push_back(CollapsedStack{s.stack, s.kinds, 0});
      in.base.push_back(0);
    }
    return it->second;
  };
  for (const auto& s : sb) in.stacks[slot(s)].weight += s.weight;
  for (const auto& s : sa) in.base[slot(s)] += s.weight;
  return in;
}

std::string diff_collapsed_text(const FlameGraphInput& in) {
  std::vector<size_t> order(in.stacks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return in.stacks[x].stack < in.stacks[y].stack; });
  std::string text;
  for (size_t i : order) {
    text += in.stacks[i].stack;
    text += ' ';
    text += std::to_string(i < in.base.size() ? in.base[i] : 0);
    text += ' ';
    text += std::to_string(in.stacks[i].weight);
    text += '\n';
  }
  return text;
}

}  // namespace mlpd::views
