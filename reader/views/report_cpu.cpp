// The report's CPU section as data (mlpd/report.h): hits ranked by method, with the frames that are
// not the program's own code gathered on group lines, per thread, and the sampling rates.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mlpd/conventions.h"
#include "mlpd/report.h"
#include "report_util.h"

namespace mlpd::views::report {

using namespace mlpd::profile;

namespace {

// The CPU ranking's groups (issue 22.2): frames that are not the program's own code, each kind
// gathered on one named line so that the first screen ranks the program. A frame is a wait when it
// is a native function that blocks (the leaf of a thread parked in the kernel); the runtime's
// unnamed frames are Mono's code without a symbol ("?? (libmono...+0x...)"); the profiler's own
// frames are those the reader names "[mlpd] ..." (mlpd/names.h).
enum CpuGroup : uint8_t { kNoGroup = 0, kWaits = 1, kRuntimeUnnamed = 2, kOverhead = 4 };
constexpr CpuGroup kCpuGroups[] = {kWaits, kRuntimeUnnamed, kOverhead};

bool is_wait_symbol(std::string_view name) {
  // The symbol alone: no " (module+0x...)", no "@@VERSION", no leading underscores or glibc's
  // internal prefixes (__GI___poll, __libc_accept).
  if (const size_t open = name.find(" ("); open != std::string_view::npos) name = name.substr(0, open);
  if (const size_t at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
  for (bool again = true; again;) {
    again = false;
    while (!name.empty() && name[0] == '_') name.remove_prefix(1), again = true;
    for (std::string_view pre : {"GI_", "libc_", "pthread_", "new_", "old_"})
      if (name.substr(0, pre.size()) == pre) name.remove_prefix(pre.size()), again = true;
  }
  // glibc 2.41 (Debian 13) enters every cancellable system call (futex waits, poll, read, nanosleep...)
  // through __syscall_cancel_arch, which is then the leaf of a blocked thread: a wait.
  for (std::string_view part : {"futex", "lll_lock_wait", "cond_wait", "cond_timedwait", "cond_clockwait", "sem_wait",
                                "sem_timedwait", "sem_clockwait", "nanosleep", "epoll_wait", "epoll_pwait", "sigtimedwait",
                                "sigwaitinfo", "sigsuspend", "syscall_cancel"})
    if (name.find(part) != std::string_view::npos) return true;
  for (std::string_view exact : {"poll", "ppoll", "select", "pselect", "pselect6", "usleep", "sleep", "pause", "accept",
                                 "accept4", "recv", "recvfrom", "recvmsg", "wait4", "waitpid", "waitid", "sigwait",
                                 "do_futex_wait", "join", "timedjoin_np", "clock_nanosleep"})
    if (name == exact) return true;
  return false;
}

CpuGroup cpu_group(const Frame& f) {
  if (f.name.rfind(conventions::kOwnFramePrefix, 0) == 0) return kOverhead;
  if (f.kind != FrameKind::native && f.kind != FrameKind::runtime) return kNoGroup;
  if (f.kind == FrameKind::runtime && f.name.rfind(conventions::kUnnamedNativePrefix, 0) == 0) return kRuntimeUnnamed;
  return is_wait_symbol(f.name) ? kWaits : kNoGroup;
}

std::string cpu_group_name(CpuGroup g, bool wall_clock) {
  switch (g) {
    case kWaits: return wall_clock ? "[waits] (threads blocked, sampled on the wall clock)" : "[waits]";
    case kRuntimeUnnamed: return "[runtime, unnamed]";
    case kOverhead: return "[mlpd overhead]";
    default: return "";
  }
}

// A group member as its line lists it: without the "[mlpd] " mark and a C++ parameter list, cut short.
std::string short_member(std::string_view full) {
  const std::string_view own = conventions::kOwnFramePrefix;
  std::string kept(full.rfind(own, 0) == 0 ? full.substr(own.size()) : full);
  for (size_t at; (at = kept.find("(anonymous namespace)::")) != std::string::npos;) kept.erase(at, 23);
  std::string_view name = kept;
  if (const size_t paren = name.find('('); paren != std::string_view::npos && paren > 0 && name.rfind("??", 0) != 0)
    name = name.substr(0, paren);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return elide_name(name, 48);
}

// The sampling rate the agent says it got, when the file records it (issue 22.2): a counter whose name
// mentions "delivered" -- the agent's "Sample rate delivered (Hz)" -- in hits per second. 0 when the
// file does not say.
double delivered_rate(const Profile& p) {
  for (const CounterInfo& c : p.counters())
    if (!c.is_string && c.name.find("delivered") != std::string::npos && c.last > 0) return c.last;
  return 0;
}

// The rate asked for: sample=N / sample-real=N in the header's options ("" when not given).
std::string asked_rate(const std::string& args, bool& wall_clock) {
  wall_clock = args.find("sample-real") != std::string::npos || args.find("sampling-real") != std::string::npos;
  for (std::string_view key : {"sample=", "sample-real=", "sampling-real=", "sampling="}) {
    size_t at = args.find(key);
    while (at != std::string::npos && at > 0 && args[at - 1] != ',' && args[at - 1] != ':') at = args.find(key, at + 1);
    if (at == std::string::npos) continue;
    const size_t from = at + key.size();
    size_t to = from;
    while (to < args.size() && args[to] >= '0' && args[to] <= '9') ++to;
    if (to > from) return args.substr(from, to - from);
  }
  return {};
}

// The packages that install a stripped runtime's separate debug symbols (by build id or
// .gnu_debuglink, which the agent reads when they are installed), by the module's file name as the
// unnamed frames give it ("?? (mono-sgen+0x...)"). A runtime that ships its own goes here too.
struct DebugPackage {
  std::string_view module, package;
};
constexpr DebugPackage kDebugPackages[] = {
    {"mono-sgen", "mono-runtime-dbg (Debian, Ubuntu)"},
    {"mono-boehm", "mono-runtime-dbg (Debian, Ubuntu)"},
    {"libmonosgen-2.0.so.1", "libmonosgen-2.0-1-dbg (Debian, Ubuntu)"},
    {"libmonoboehm-2.0.so.1", "libmonoboehm-2.0-1-dbg (Debian, Ubuntu)"},
};

// "?? (mono-sgen+0x1234)" -> "mono-sgen"; "" when the name is not of that form.
std::string_view unnamed_module(std::string_view name) {
  const std::string_view pre = conventions::kUnnamedNativePrefix;
  if (name.rfind(pre, 0) != 0) return {};
  name.remove_prefix(pre.size());
  const size_t plus = name.rfind("+0x");
  return plus == std::string_view::npos ? std::string_view{} : name.substr(0, plus);
}

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '`' ||
         c == '$' || c == '@' || c == '#' || static_cast<unsigned char>(c) >= 0x80;
}

}  // namespace

std::string elide_name(std::string_view in, size_t max) {
  std::string name;
  name.reserve(in.size());
  for (size_t i = 0; i < in.size();) {  // C++ ABI tags: "f[abi:cxx11]" -> "f"
    if (in.compare(i, 5, "[abi:") == 0) {
      const size_t close = in.find(']', i);
      if (close != std::string_view::npos) {
        i = close + 1;
        continue;
      }
    }
    name += in[i++];
  }
  if (name.size() <= max) return name;
  // Where a cut may fall: between a token and what is not one, and around spaces (a run of
  // separators such as "::" stays whole).
  auto cls = [&](size_t at) { return token_char(name[at]) ? 0 : name[at] == ' ' ? 1 : 2; };
  std::vector<size_t> cuts;  // boundaries inside the name, ascending
  for (size_t at = 1; at < name.size(); ++at)
    if (cls(at - 1) != cls(at) || cls(at) == 1) cuts.push_back(at);
  constexpr std::string_view kDots = "...";
  const size_t room = max > kDots.size() ? max - kDots.size() : 0;
  if (cuts.empty()) return name;
  // The end: the last token always, then earlier whole pieces while they fit in two thirds of the
  // room; the start: whole pieces up to the end of a token in what is left; then the end again in
  // what the start left over.
  size_t tail_i = cuts.size() - 1;  // index in cuts of the tail's start: the last token's at least
  while (tail_i > 0 && cls(cuts[tail_i]) != 0) --tail_i;
  auto grow_tail = [&](size_t limit, size_t head) {
    while (tail_i > 0 && cuts[tail_i - 1] > head && name.size() - cuts[tail_i - 1] <= limit) --tail_i;
  };
  grow_tail(room * 2 / 3, 0);
  const size_t tail = cuts[tail_i];
  size_t head = 0;
  for (size_t c : cuts)  // ending with a token: "a.b..." would read as a name with dots in it
    if (c < tail && c + (name.size() - tail) <= room && cls(c - 1) == 0) head = c;
  grow_tail(room - head, head);
  if (head >= cuts[tail_i]) return name;
  return name.substr(0, head) + std::string(kDots) + name.substr(cuts[tail_i]);
}

std::optional<CpuSection> cpu_section(const Profile& p, const std::vector<bool>& mask,
                                      const std::vector<MethodLine>& rows, uint64_t hits, size_t n) {
  if (!hits) return std::nullopt;
  CpuSection out;
  out.hits = hits;
  const FileHeader& h = p.header();
  out.by_self = top(rows, n, [](const MethodStat& s) { return s.samples_self; });
  out.by_total = top(rows, n, [](const MethodStat& s) { return s.samples_total; });
  // The groups (cpu_group): self hits of their frames, and the hits whose stack holds one of them.
  bool wall_clock = false;
  std::string asked = asked_rate(h.args, wall_clock);
  for (const CounterInfo& c : p.counters())  // the agent's "Sample rate asked (Hz)" counter, when no sample=N
    if (asked.empty() && !c.is_string && c.name.find("rate asked") != std::string::npos && c.last > 0)
      asked = fmt("%.0f", c.last);
  struct GroupRow {
    CpuGroup g;
    uint64_t self = 0, total = 0;
    std::vector<const MethodLine*> members;  // by self hits
  };
  std::vector<GroupRow> groups;
  std::vector<uint8_t> frame_group(p.frames().size());
  for (FrameId f = 0; f < p.frames().size(); ++f) frame_group[f] = cpu_group(p.frames()[f]);
  {
    std::vector<uint8_t> path(p.nodes().size(), 0);
    uint64_t totals[5] = {};
    for (NodeId i = 1; i < p.nodes().size(); ++i) {
      const Node& nd = p.nodes()[i];
      path[i] = path[nd.parent] | (nd.frame < frame_group.size() ? frame_group[nd.frame] : 0);
      const uint64_t w = mask[nd.thread] ? p.weight(What::cpu, i) : 0;
      if (w)
        for (CpuGroup g : kCpuGroups)
          if (path[i] & g) totals[g] += w;
    }
    for (CpuGroup g : kCpuGroups) groups.push_back(GroupRow{g, 0, totals[g], {}});
  }
  std::unordered_map<std::string_view, uint8_t> group_by_name;
  for (FrameId f = 0; f < p.frames().size(); ++f)
    if (frame_group[f]) group_by_name[p.frames()[f].name] = frame_group[f];
  auto group_of_row = [&](const MethodLine& r) -> uint8_t {
    auto it = group_by_name.find(r.name);
    return it == group_by_name.end() ? 0 : it->second;
  };
  for (GroupRow& gr : groups) {
    for (const MethodLine& r : rows)
      if (group_of_row(r) == gr.g && r.s.samples_self) {
        gr.self += r.s.samples_self;
        gr.members.push_back(&r);
      }
    std::sort(gr.members.begin(), gr.members.end(), [](const MethodLine* a, const MethodLine* b) {
      return a->s.samples_self != b->s.samples_self ? a->s.samples_self > b->s.samples_self : a->name < b->name;
    });
  }
  // The text's rankings: the program's frames and the group lines, in one order.
  auto ranked = [&](bool by_self_hits) {
    std::vector<CpuSection::Ranked> v;
    for (const MethodLine& r : rows)
      if (!group_of_row(r) && (by_self_hits ? r.s.samples_self : r.s.samples_total))
        v.push_back({r.name, std::string(frame_kind_name(r.kind)), r.s.samples_self, r.s.samples_total});
    for (const GroupRow& gr : groups) {
      if (!(by_self_hits ? gr.self : gr.total)) continue;
      std::string name = cpu_group_name(gr.g, wall_clock);
      if (!gr.members.empty()) {
        name += "  (";
        for (size_t k = 0; k < gr.members.size() && k < 3; ++k)
          name += (k ? ", " : "") + short_member(gr.members[k]->name);
        if (gr.members.size() > 3) name += ", " + u64(gr.members.size() - 3) + " more";
        name += ")";
      }
      v.push_back({name, "group", gr.self, gr.total});
    }
    std::sort(v.begin(), v.end(), [&](const CpuSection::Ranked& a, const CpuSection::Ranked& b) {
      const uint64_t ka = by_self_hits ? a.self : a.total, kb = by_self_hits ? b.self : b.total;
      return ka != kb ? ka > kb : a.name < b.name;
    });
    if (v.size() > n) v.resize(n);
    return v;
  };
  out.ranked_self = ranked(true);
  out.ranked_total = ranked(false);
  // Hits per thread (Mono's sampler hits idle threads too: this tells them apart).
  std::vector<std::pair<uint64_t, ThreadIndex>> per_thread(p.threads().size());
  for (ThreadIndex t = 0; t < per_thread.size(); ++t) per_thread[t].second = t;
  for (NodeId i = 1; i < p.nodes().size(); ++i)
    if (mask[p.nodes()[i].thread]) per_thread[p.nodes()[i].thread].first += p.weight(What::cpu, i);
  std::stable_sort(per_thread.begin(), per_thread.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  while (!per_thread.empty() && (per_thread.back().first == 0 || per_thread.size() > n)) per_thread.pop_back();
  for (const auto& [hits_t, t] : per_thread) out.threads.emplace_back(thread_label(p.threads()[t]), hits_t);
  for (const GroupRow& gr : groups) {
    if (!gr.total) continue;
    CpuSection::Group g{cpu_group_name(gr.g, false), gr.self, gr.total, {}};
    for (const MethodLine* m : gr.members) g.members.emplace_back(m->name, m->s.samples_self);
    out.groups.push_back(std::move(g));
  }
  for (const GroupRow& gr : groups) {
    if (gr.g != kRuntimeUnnamed) continue;
    for (const MethodLine* m : gr.members) {
      const std::string_view mod = unnamed_module(m->name);
      if (mod.empty()) continue;
      auto it = std::find_if(out.missing_symbols.begin(), out.missing_symbols.end(),
                             [&](const CpuSection::MissingSymbols& x) { return x.module == mod; });
      if (it == out.missing_symbols.end()) {
        CpuSection::MissingSymbols ms{std::string(mod), {}, 0};
        for (const DebugPackage& d : kDebugPackages)
          if (d.module == mod) ms.package = d.package;
        it = out.missing_symbols.insert(out.missing_symbols.end(), std::move(ms));
      }
      it->self += m->s.samples_self;
    }
  }
  std::sort(out.missing_symbols.begin(), out.missing_symbols.end(),
            [](const auto& a, const auto& b) { return a.self != b.self ? a.self > b.self : a.module < b.module; });
  out.asked_hz = asked;
  out.delivered_hz = delivered_rate(p);
  out.wall_clock = wall_clock;
  // The agent's counters of cut samples (agent/src/counters.cpp), by name.
  auto ends = [](const std::string& name, std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const CounterInfo& c : p.counters()) {
    if (c.is_string || c.last <= 0) continue;
    if (ends(c.name, "Samples truncated")) out.truncated = static_cast<uint64_t>(c.last);
    else if (ends(c.name, "Samples cut (frame not named)")) out.cut_unnamed = static_cast<uint64_t>(c.last);
    else if (ends(c.name, "Samples cut (native stack beyond the copy)")) out.cut_copy = static_cast<uint64_t>(c.last);
  }
  return out;
}

}  // namespace mlpd::views::report
