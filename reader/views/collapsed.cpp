// Collapsed stacks ("frame;frame;leaf COUNT", root first), the input format of FlameGraph's
// flamegraph.pl and of inferno, and the aggregation the HTML flame graph and diff start from.
#include <algorithm>
#include <charconv>
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
  bool write(const Profile& p, std::FILE* out, std::string& error) override {
    std::string buf;
    for (const CollapsedStack& s : collapse(p, o_.what, o_.threads)) {
      buf += s.stack;
      buf += ' ';
      char num[24];
      buf.append(num, std::to_chars(num, num + sizeof num, s.weight).ptr);
      buf += '\n';
      if (buf.size() > (1u << 20)) {
        if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) break;
        buf.clear();
      }
    }
    if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size() || std::ferror(out)) {
      error = "write error";
      return false;
    }
    return true;
  }

 private:
  ExportOptions o_;
};

}  // namespace

std::vector<CollapsedStack> collapse(const Profile& p, What what, bool threads) {
  const auto& nodes = p.nodes();
  std::unordered_map<std::string, size_t> index;
  std::vector<CollapsedStack> out;
  std::vector<FrameId> frames;
  std::string key, kinds;
  for (NodeId n = 1; n < nodes.size(); ++n) {
    const uint64_t w = p.weight(what, n);
    if (w == 0 || nodes[n].frame == kNoFrame) continue;
    p.stack(n, frames);
    key.clear();
    kinds.clear();
    if (threads) {
      append_frame(key, thread_label(p.threads()[nodes[n].thread]));
      kinds += 't';
    }
    for (FrameId f : frames) {
      if (!key.empty()) key += ';';
      const Frame& fr = p.frames()[f];
      append_frame(key, fr.name.empty() ? std::string_view("[unnamed]") : std::string_view(fr.name));
      kinds += kind_letter(fr.kind);
    }
    auto [it, inserted] = index.try_emplace(key, out.size());
    if (inserted) out.push_back(CollapsedStack{key, kinds, 0});
    out[it->second].weight += w;
  }
  std::sort(out.begin(), out.end(), [](const CollapsedStack& a, const CollapsedStack& b) { return a.stack < b.stack; });
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
  m += "' profiler option, e.g. MLPD_OPTIONS=";
  m += profile::what_option(w);
  m += " or mono --profile=log:";
  m += profile::what_option(w);
  m += ")";
  return m;
}

}  // namespace mlpd::views
