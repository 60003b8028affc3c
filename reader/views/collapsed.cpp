// Collapsed stacks ("frame;frame;leaf COUNT", root first), the input format of FlameGraph's
// flamegraph.pl and of inferno, and the aggregation the HTML flame graph and diff start from.
#include <algorithm>
#include <charconv>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <string_view>
#include <unordered_map>

#include "mlpd/views.h"

namespace mlpd::views {

using namespace mlpd::profile;

namespace {

char kind_letter(FrameKind k) {
  switch (k) {
    case FrameKind::managed: return 'm';
    case FrameKind::native: return 'n';
    case FrameKind::runtime: return 'r';
    case FrameKind::special: return 's';
  }
  return 's';
}

// ';' separates frames and the last ' ' separates the count: frame names keep neither.
void append_frame(std::string& s, std::string_view name) {
  for (char c : name) s += (c == ';') ? ':' : (c == '\n' || c == '\r') ? ' ' : c;
}

class CollapsedExporter final : public Exporter {
 public:
  explicit CollapsedExporter(const ExportOptions& o) : o_(o) {}
  uint64_t estimate(const Profile& p) override {
    return estimate_stacks(p, effective_what(p, o_), true, 1, o_.threads ? 64 : 24);
  }
  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    std::string buf;
    bool failed = false;
    for_each_collapsed(p, effective_what(p, o_), o_.threads,
                       [&](const std::string& stack, const std::string&, uint64_t weight) {
                         buf += stack;
                         buf += ' ';
                         char num[24];
                         buf.append(num, std::to_chars(num, num + sizeof num, weight).ptr);
                         buf += '\n';
                         if (buf.size() > (1u << 20)) {
                           failed |= std::fwrite(buf.data(), 1, buf.size(), out) != buf.size();
                           buf.clear();
                         }
                       });
    if (failed || std::fwrite(buf.data(), 1, buf.size(), out) != buf.size() || std::ferror(out)) {
      error = "write error";
      return false;
    }
    return true;
  }

 private:
  ExportOptions o_;
};

}  // namespace

void for_each_collapsed(const Profile& p, What what, bool threads,
                        const std::function<void(const std::string&, const std::string&, uint64_t)>& fn) {
  const auto& nodes = p.nodes();
  const size_t nn = nodes.size();
  // Which nodes lead to a weight (parents come before children, so one backward pass).
  std::vector<uint8_t> live(nn, 0);
  for (size_t n = nn; n-- > 1;) {
    if (p.weight(what, static_cast<NodeId>(n)) != 0) live[n] = 1;
    if (live[n]) live[nodes[n].parent] = 1;
  }
  // Frame names interned: frames of the same name (distinct method pointers, say) merge.
  std::deque<std::string> names;  // stable addresses: name_ids' keys point into it
  std::vector<char> name_kind;
  std::unordered_map<std::string_view, uint32_t> name_ids;
  std::vector<uint32_t> frame_name(p.frames().size(), UINT32_MAX);
  auto name_of_frame = [&](FrameId f) {
    if (frame_name[f] == UINT32_MAX) {
      const Frame& fr = p.frames()[f];
      std::string n;
      append_frame(n, fr.name.empty() ? std::string_view("[unnamed]") : std::string_view(fr.name));
      auto it = name_ids.find(n);
      if (it == name_ids.end()) {
        names.push_back(std::move(n));
        name_kind.push_back(kind_letter(fr.kind));
        it = name_ids.emplace(names.back(), static_cast<uint32_t>(names.size() - 1)).first;
      }
      frame_name[f] = it->second;
    }
    return frame_name[f];
  };
  // The merged tree: children by (merged parent, name); node 0 is the root.
  struct M {
    uint32_t name = 0;
    uint64_t weight = 0;
    std::vector<uint32_t> kids;
  };
  std::vector<M> tree(1);
  std::vector<char> kind_of(1, 's');
  std::unordered_map<uint64_t, uint32_t> child;
  auto merged_child = [&](uint32_t parent, uint32_t name, char kind) {
    auto [it, inserted] = child.try_emplace((static_cast<uint64_t>(parent) << 32) | name, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(tree.size());
      tree.push_back(M{name, 0, {}});
      kind_of.push_back(kind);
      tree[parent].kids.push_back(it->second);
    }
    return it->second;
  };
  std::vector<uint32_t> m(nn, 0);
  for (size_t n = 1; n < nn; ++n) {
    if (!live[n]) continue;
    const Node& nd = nodes[n];
    if (nd.frame == kNoFrame) {  // a thread
      if (threads) {
        std::string label;
        append_frame(label, thread_label(p.threads()[nd.thread]));
        auto it = name_ids.find(label);
        if (it == name_ids.end()) {
          names.push_back(std::move(label));
          name_kind.push_back('t');
          it = name_ids.emplace(names.back(), static_cast<uint32_t>(names.size() - 1)).first;
        }
        m[n] = merged_child(0, it->second, 't');
      }
      continue;
    }
    const uint32_t name = name_of_frame(nd.frame);
    m[n] = merged_child(m[nd.parent], name, name_kind[name]);
    tree[m[n]].weight += p.weight(what, static_cast<NodeId>(n));
  }
  // Depth-first, callees in name order, one path string reused.
  for (M& t : tree)
    std::sort(t.kids.begin(), t.kids.end(), [&](uint32_t x, uint32_t y) { return names[tree[x].name] < names[tree[y].name]; });
  std::string path, kinds;
  struct Step {
    uint32_t node;
    size_t next;  // next child to visit
    size_t path_len, kinds_len;
  };
  std::vector<Step> stack{{0, 0, 0, 0}};
  while (!stack.empty()) {
    Step& s = stack.back();
    if (s.next == tree[s.node].kids.size()) {
      path.resize(s.path_len);
      kinds.resize(s.kinds_len);
      stack.pop_back();
      continue;
    }
    const uint32_t c = tree[s.node].kids[s.next++];
    const size_t pl = path.size(), kl = kinds.size();
    if (!path.empty()) path += ';';
    path += names[tree[c].name];
    kinds += kind_of[c];
    if (tree[c].weight) fn(path, kinds, tree[c].weight);
    stack.push_back({c, 0, pl, kl});
  }
}

std::vector<CollapsedStack> collapse(const Profile& p, What what, bool threads) {
  std::vector<CollapsedStack> out;
  for_each_collapsed(p, what, threads, [&](const std::string& stack, const std::string& kinds, uint64_t weight) {
    out.push_back(CollapsedStack{stack, kinds, weight});
  });
  std::sort(out.begin(), out.end(), [](const CollapsedStack& a, const CollapsedStack& b) { return a.stack < b.stack; });
  return out;
}

std::vector<CollapsedStack> managed_only(const std::vector<CollapsedStack>& stacks) {
  std::map<std::string, CollapsedStack> merged;
  for (const CollapsedStack& s : stacks) {
    std::string stack, kinds;
    size_t at = 0;
    for (size_t k = 0; k < s.kinds.size() && at <= s.stack.size(); ++k) {
      // One frame per kind letter, ';' between frames (the last frame runs to the end).
      const size_t end = k + 1 < s.kinds.size() ? s.stack.find(';', at) : s.stack.size();
      if (end == std::string::npos) break;
      const std::string_view frame(s.stack.data() + at, end - at);
      const char kind = s.kinds[k];
      // A frame the same as its caller's is shown once: .NET's OSR body runs over its own tier-0
      // frame, and a method calling itself directly is folded alike on both runtimes.
      const bool repeat = !kinds.empty() && kinds.back() == kind && stack.size() >= frame.size() &&
                          std::string_view(stack).substr(stack.size() - frame.size()) == frame &&
                          (stack.size() == frame.size() || stack[stack.size() - frame.size() - 1] == ';');
      if (((kind == 'm' && frame.substr(0, 9) != "(wrapper ") || kind == 't') && !repeat) {
        if (!stack.empty()) stack += ';';
        stack += frame;
        kinds += kind;
      }
      at = end + 1;
    }
    if (kinds.empty() || kinds == "t") {
      if (!stack.empty()) stack += ';';
      stack += "[not managed]";
      kinds += 's';
    }
    auto [it, inserted] = merged.try_emplace(stack, CollapsedStack{stack, kinds, 0});
    it->second.weight += s.weight;
  }
  std::vector<CollapsedStack> out;
  out.reserve(merged.size());
  for (auto& [_, s] : merged) out.push_back(std::move(s));
  return out;
}

std::unique_ptr<Exporter> make_collapsed_exporter(const ExportOptions& o) {
  return std::make_unique<CollapsedExporter>(o);
}

}  // namespace mlpd::views

namespace mlpd::views {

profile::What effective_what(const profile::Profile& p, const ExportOptions& o) {
  using profile::What;
  if (o.what_given) return o.what;
  for (What w : {What::cpu, What::calls, What::alloc, What::exceptions, What::monitor})
    if (p.total(w) != 0) return w;
  return What::cpu;
}

std::string missing_what_error(const profile::Profile& p, profile::What w) {
  if (p.total(w) != 0) return {};
  std::string m = "the file has no ";
  switch (w) {
    case profile::What::cpu: m += "CPU samples"; break;
    case profile::What::alloc:
    case profile::What::alloc_bytes: m += "allocations"; break;
    case profile::What::calls: m += "method calls with a duration"; break;
    case profile::What::exceptions: m += "exception throws"; break;
    case profile::What::monitor: m += "monitor contentions"; break;
  }
  m += " for --what ";
  m += profile::what_name(w);
  m += " (record them with the '";
  m += profile::what_option(w);
  m += "' profiler option, e.g. ";
  // How each way of profiling is given the option (issue 34: one row per runtime's own way).
  static constexpr std::string_view kRecordWith[] = {
      "MLPD_OPTIONS=",          // our agent, any runtime
      "mono --profile=log:",    // Mono's own log profiler
  };
  for (size_t i = 0; i < std::size(kRecordWith); ++i) {
    if (i) m += " or ";
    m += kRecordWith[i];
    m += profile::what_option(w);
  }
  m += ")";
  return m;
}

}  // namespace mlpd::views
