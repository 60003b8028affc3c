// mlpd report: one screen that says where the time and the memory went, or its JSON form.
#include <algorithm>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <ctime>
#include <unordered_map>

#include "mlpd/json.h"
#include "mlpd/format.h"
#include "mlpd/views.h"

namespace mlpd::views {

using namespace mlpd::profile;

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string u64(uint64_t v) { return std::to_string(v); }

std::string duration(uint64_t ns) {
  if (ns >= 10'000'000'000ull) return fmt("%.1f s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000'000ull) return fmt("%.3f s", static_cast<double>(ns) / 1e9);
  if (ns >= 1'000'000ull) return fmt("%.3f ms", static_cast<double>(ns) / 1e6);
  if (ns >= 1'000ull) return fmt("%.3f us", static_cast<double>(ns) / 1e3);
  return fmt("%" PRIu64 " ns", ns);
}

std::string bytes_h(uint64_t b) {
  if (b >= (1ull << 30)) return fmt("%.2f GiB", static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt("%.2f MiB", static_cast<double>(b) / (1ull << 20));
  if (b >= (1ull << 10)) return fmt("%.1f KiB", static_cast<double>(b) / (1ull << 10));
  return fmt("%" PRIu64 " B", b);
}

double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0; }

// Per-method numbers merged by name (distinct method pointers can share a name).
struct Row {
  std::string name;
  FrameKind kind = FrameKind::managed;
  MethodStat s;
};

std::vector<Row> rows_by_name(const Profile& p, const std::vector<MethodStat>& stats) {
  std::unordered_map<std::string_view, size_t> index;
  std::vector<Row> rows;
  for (FrameId f = 0; f < stats.size(); ++f) {
    const Frame& fr = p.frames()[f];
    auto [it, inserted] = index.try_emplace(fr.name, rows.size());
    if (inserted) rows.push_back(Row{fr.name, fr.kind, {}});
    MethodStat& d = rows[it->second].s;
    const MethodStat& s = stats[f];
    d.samples_self += s.samples_self;
    d.samples_total += s.samples_total;
    d.calls += s.calls;
    d.self_ns += s.self_ns;
    d.total_ns += s.total_ns;
    d.alloc_objects += s.alloc_objects;
    d.alloc_bytes += s.alloc_bytes;
    d.throws += s.throws;
    d.contentions += s.contentions;
    d.jit_code_bytes += s.jit_code_bytes;
  }
  return rows;
}

template <typename Key>
std::vector<const Row*> top(const std::vector<Row>& rows, size_t n, Key key) {
  std::vector<const Row*> out;
  for (const Row& r : rows)
    if (key(r.s) != 0) out.push_back(&r);
  std::sort(out.begin(), out.end(), [&](const Row* a, const Row* b) {
    const uint64_t ka = key(a->s), kb = key(b->s);
    return ka != kb ? ka > kb : a->name < b->name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string iso_time(uint64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm)) return {};
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

uint64_t percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// One step of the heaviest call path: from `n`, its heaviest child by inclusive time.
struct PathStep {
  NodeId node;
  CallStat cs;
};

std::vector<PathStep> hot_path(const Profile& p, const std::vector<bool>& mask, size_t max_len) {
  const auto& nodes = p.nodes();
  // children by parent, only for nodes with call numbers
  std::vector<NodeId> best(nodes.size(), 0);
  NodeId root_best = 0;
  uint64_t root_best_ns = 0;
  for (NodeId n = 1; n < nodes.size(); ++n) {
    if (nodes[n].frame == kNoFrame || !mask[nodes[n].thread]) continue;
    const uint64_t ns = p.calls(n).total_ns;
    if (ns == 0 && p.calls(n).calls == 0) continue;
    const NodeId parent = nodes[n].parent;
    if (nodes[n].depth == 1) {
      if (!root_best || ns > root_best_ns) root_best = n, root_best_ns = ns;
    } else if (!best[parent] || ns > p.calls(best[parent]).total_ns) {
      best[parent] = n;
    }
  }
  std::vector<PathStep> out;
  for (NodeId n = root_best; n && out.size() < max_len; n = best[n]) out.push_back({n, p.calls(n)});
  return out;
}

struct Ranked {
  std::string name;
  uint64_t a = 0, b = 0;
};

// Leaf frames of a What's stacks merged by name: the "site" ranking.
std::vector<Ranked> sites(const Profile& p, const std::vector<bool>& mask, What count, What bytes, size_t n) {
  std::unordered_map<std::string_view, Ranked> m;
  const bool with_bytes = count != bytes;
  for (NodeId i = 1; i < p.nodes().size(); ++i) {
    const Node& nd = p.nodes()[i];
    if (nd.frame == kNoFrame || !mask[nd.thread]) continue;
    const uint64_t c = p.weight(count, i);
    if (!c) continue;
    // The site: the innermost frame that is not the runtime's (allocation and icall wrappers).
    NodeId s = i;
    while (p.frames()[p.nodes()[s].frame].kind == FrameKind::runtime && p.nodes()[s].depth > 1) s = p.nodes()[s].parent;
    if (p.frames()[p.nodes()[s].frame].kind == FrameKind::runtime) s = i;
    Ranked& r = m[p.frames()[p.nodes()[s].frame].name];
    r.a += c;
    if (with_bytes) r.b += p.weight(bytes, i);
  }
  std::vector<Ranked> out;
  for (auto& [k, v] : m) {
    v.name = std::string(k);
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [&](const Ranked& x, const Ranked& y) {
    const uint64_t kx = with_bytes ? x.b : x.a, ky = with_bytes ? y.b : y.a;
    return kx != ky ? kx > ky : x.name < y.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

uint64_t masked_total(const Profile& p, const std::vector<bool>& mask, What w) {
  uint64_t t = 0;
  for (NodeId i = 1; i < p.nodes().size(); ++i)
    if (mask[p.nodes()[i].thread]) t += p.weight(w, i);
  return t;
}

class Writer {
 public:
  explicit Writer(bool json) : json_(json) {}
  std::string out;
  bool json_;
};

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
  if (f.name.rfind("[mlpd] ", 0) == 0) return kOverhead;
  if (f.kind != FrameKind::native && f.kind != FrameKind::runtime) return kNoGroup;
  if (f.kind == FrameKind::runtime && f.name.rfind("?? (", 0) == 0) return kRuntimeUnnamed;
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
  std::string kept(full.rfind("[mlpd] ", 0) == 0 ? full.substr(7) : full);
  for (size_t at; (at = kept.find("(anonymous namespace)::")) != std::string::npos;) kept.erase(at, 23);
  std::string_view name = kept;
  if (const size_t paren = name.find('('); paren != std::string_view::npos && paren > 0 && name.rfind("??", 0) != 0)
    name = name.substr(0, paren);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  if (name.size() > 48) return std::string(name.substr(0, 45)) + "...";
  return std::string(name);
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

std::string counter_value(const CounterInfo& c) {
  if (c.is_string) return c.last_string;
  if (c.type == format::COUNTER_DOUBLE) return fmt("%g", c.last);
  return fmt("%.0f", c.last);
}

}  // namespace

bool write_report(const Profile& p, const ReportOptions& o, std::FILE* file, std::string& error) {
  // --thread: a name or an id.
  std::vector<bool> mask(p.threads().size(), !o.has_thread);
  std::string thread_note;
  if (o.has_thread) {
    uint64_t id = 0;
    bool is_id = false;
    const std::string& s = o.thread;
    if (s.size() > 2 && (s[0] == '0') && (s[1] == 'x' || s[1] == 'X')) {
      is_id = std::from_chars(s.data() + 2, s.data() + s.size(), id, 16).ec == std::errc();
    } else if (!s.empty()) {
      const auto r = std::from_chars(s.data(), s.data() + s.size(), id);
      is_id = r.ec == std::errc() && r.ptr == s.data() + s.size();
    }
    bool any = false;
    for (size_t t = 0; t < p.threads().size(); ++t) {
      if (p.threads()[t].name == s || (is_id && p.threads()[t].id == id)) {
        mask[t] = true;
        any = true;
        thread_note += (thread_note.empty() ? "" : ", ") + thread_label(p.threads()[t]);
      }
    }
    if (!any) {
      error = "no thread named or numbered '" + s + "' in the file (threads:";
      for (const ThreadInfo& t : p.threads()) error += " " + thread_label(t) + ";";
      error += ")";
      return false;
    }
  }
  const std::vector<MethodStat> stats = o.has_thread ? method_stats(p, &mask) : p.methods();
  const std::vector<Row> rows = rows_by_name(p, stats);
  const size_t n = o.top;
  const FileHeader& h = p.header();
  const uint64_t dur = p.last_time() > p.first_time() ? p.last_time() - p.first_time() : 0;
  const bool json = o.json;
  std::string out;
  auto line = [&](const std::string& s) { out += s, out += '\n'; };
  auto js = [](std::string_view s) { return json_string(s); };

  const uint64_t hits = o.has_thread ? masked_total(p, mask, What::cpu) : p.sample_hits();
  const uint64_t calls = o.has_thread ? 0 : p.call_count();
  uint64_t calls_masked = 0;
  for (const Row& r : rows) calls_masked += r.s.calls;
  const uint64_t call_total = o.has_thread ? calls_masked : calls;
  const uint64_t objects = o.has_thread ? masked_total(p, mask, What::alloc) : p.alloc_objects();
  const uint64_t bytes = o.has_thread ? masked_total(p, mask, What::alloc_bytes) : p.alloc_bytes();
  const uint64_t throws = o.has_thread ? masked_total(p, mask, What::exceptions) : p.throws();

  // Header.
  if (json) {
    out += "{\"header\":{\"file\":" + js(o.input_name) + ",\"program\":" + js(p.program()) +
           ",\"pid\":" + std::to_string(h.pid) + ",\"options\":" + js(h.args) + ",\"arch\":" + js(h.arch) +
           ",\"os\":" + js(h.os) + ",\"start\":" + js(iso_time(h.startup_ms)) + ",\"duration_ns\":" + u64(dur) +
           ",\"events\":" + u64(p.summary().events) + ",\"threads\":" + u64(p.threads().size()) +
           ",\"problems\":" + u64(p.problem_count());
    if (o.has_thread) out += ",\"thread\":" + js(thread_note);
    out += "}";
  } else {
    line("== " + (o.input_name.empty() ? std::string("profile") : o.input_name) + " ==");
    line("program:  " + (p.program().empty() ? std::string("(unknown)") : p.program()) + "   pid " +
         std::to_string(h.pid) + "   " + h.arch + "/" + h.os);
    line("started:  " + iso_time(h.startup_ms) + "   duration " + duration(dur) + "   " +
         u64(p.summary().events) + " events, " + u64(p.threads().size()) + " threads");
    line("options:  " + (h.args.empty() ? std::string("(none recorded)") : h.args));
    if (o.has_thread) line("thread:   " + thread_note);
    if (p.problem_count())
      line("problems: " + u64(p.problem_count()) + " (see standard error); the report shows what could be read");
  }

  // Pause/resume (issue 15): the stretches the agent recorded.
  if (p.pauses_recorded()) {
    const auto& iv = p.recorded_intervals();
    uint64_t rec = 0;
    for (const RecordedInterval& r : iv) rec += r.end - r.start;
    auto rel = [&](uint64_t t) { return static_cast<double>(t >= p.first_time() ? t - p.first_time() : 0) / 1e9; };
    if (json) {
      out += ",\"recorded\":{\"recorded_ns\":" + u64(rec) + ",\"intervals\":[";
      for (size_t i = 0; i < iv.size(); ++i)
        out += (i ? "," : "") + fmt("{\"start_s\":%.6f,\"end_s\":%.6f}", rel(iv[i].start), rel(iv[i].end));
      out += "]}";
    } else {
      line("");
      line("== Recorded (pause/resume): " + u64(iv.size()) + " interval" + (iv.size() == 1 ? "" : "s") + ", " +
           duration(rec) + " of " + duration(dur) + " ==");
      for (const RecordedInterval& r : iv)
        line(fmt("  %.3f s .. %.3f s  (", rel(r.start), rel(r.end)) + duration(r.end - r.start) + ")");
    }
  }

  // CPU samples.
  if (hits) {
    const auto by_self = top(rows, n, [](const MethodStat& s) { return s.samples_self; });
    const auto by_total = top(rows, n, [](const MethodStat& s) { return s.samples_total; });
    // The groups (cpu_group): self hits of their frames, and the hits whose stack holds one of them.
    bool wall_clock = false;
    std::string asked = asked_rate(h.args, wall_clock);
    for (const CounterInfo& c : p.counters())  // the agent's "Sample rate asked (Hz)" counter, when no sample=N
      if (asked.empty() && !c.is_string && c.name.find("rate asked") != std::string::npos && c.last > 0)
        asked = fmt("%.0f", c.last);
    struct GroupRow {
      CpuGroup g;
      uint64_t self = 0, total = 0;
      std::vector<const Row*> members;  // by self hits
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
      for (CpuGroup g : kCpuGroups) {
        groups.push_back(GroupRow{g, 0, totals[g], {}});
      }
    }
    std::unordered_map<std::string_view, uint8_t> group_by_name;
    for (FrameId f = 0; f < p.frames().size(); ++f)
      if (frame_group[f]) group_by_name[p.frames()[f].name] = frame_group[f];
    auto group_of_row = [&](const Row& r) -> uint8_t {
      auto it = group_by_name.find(r.name);
      return it == group_by_name.end() ? 0 : it->second;
    };
    for (GroupRow& gr : groups) {
      for (const Row& r : rows)
        if (group_of_row(r) == gr.g && r.s.samples_self) {
          gr.self += r.s.samples_self;
          gr.members.push_back(&r);
        }
      std::sort(gr.members.begin(), gr.members.end(), [](const Row* a, const Row* b) {
        return a->s.samples_self != b->s.samples_self ? a->s.samples_self > b->s.samples_self : a->name < b->name;
      });
    }
    // The text's rankings: the program's frames and the group lines, in one order.
    struct Line {
      std::string name;
      std::string kind;
      uint64_t self, total;
    };
    auto ranked = [&](bool by_self_hits) {
      std::vector<Line> v;
      for (const Row& r : rows)
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
      std::sort(v.begin(), v.end(), [&](const Line& a, const Line& b) {
        const uint64_t ka = by_self_hits ? a.self : a.total, kb = by_self_hits ? b.self : b.total;
        return ka != kb ? ka > kb : a.name < b.name;
      });
      if (v.size() > n) v.resize(n);
      return v;
    };
    // Hits per thread (Mono's sampler hits idle threads too: this tells them apart).
    std::vector<std::pair<uint64_t, ThreadIndex>> per_thread(p.threads().size());
    for (ThreadIndex t = 0; t < per_thread.size(); ++t) per_thread[t].second = t;
    for (NodeId i = 1; i < p.nodes().size(); ++i)
      if (mask[p.nodes()[i].thread]) per_thread[p.nodes()[i].thread].first += p.weight(What::cpu, i);
    std::stable_sort(per_thread.begin(), per_thread.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    while (!per_thread.empty() && (per_thread.back().first == 0 || per_thread.size() > n)) per_thread.pop_back();
    if (json) {
      out += ",\"samples\":{\"total\":" + u64(hits) + ",\"methods\":[";
      for (size_t i = 0; i < by_self.size(); ++i) {
        const Row& r = *by_self[i];
        out += (i ? "," : "") + std::string("{\"name\":") + js(r.name) + ",\"kind\":" + js(frame_kind_name(r.kind)) +
               ",\"self\":" + u64(r.s.samples_self) + ",\"total\":" + u64(r.s.samples_total) +
               fmt(",\"self_percent\":%.2f,\"total_percent\":%.2f}", pct(r.s.samples_self, hits),
                   pct(r.s.samples_total, hits));
      }
      out += "],\"inclusive\":[";
      for (size_t i = 0; i < by_total.size(); ++i) {
        const Row& r = *by_total[i];
        out += (i ? "," : "") + std::string("{\"name\":") + js(r.name) + ",\"kind\":" + js(frame_kind_name(r.kind)) +
               ",\"self\":" + u64(r.s.samples_self) + ",\"total\":" + u64(r.s.samples_total) + "}";
      }
      out += "],\"threads\":[";
      for (size_t i = 0; i < per_thread.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(thread_label(p.threads()[per_thread[i].second])) +
               ",\"hits\":" + u64(per_thread[i].first) + "}";
      out += "],\"groups\":[";
      bool first = true;
      for (const GroupRow& gr : groups) {
        if (!gr.total) continue;
        out += (first ? "" : ",") + std::string("{\"name\":") + js(cpu_group_name(gr.g, false)) + ",\"self\":" +
               u64(gr.self) + ",\"total\":" + u64(gr.total) + ",\"members\":[";
        for (size_t k = 0; k < gr.members.size(); ++k)
          out += (k ? "," : "") + std::string("{\"name\":") + js(gr.members[k]->name) + ",\"self\":" +
                 u64(gr.members[k]->s.samples_self) + "}";
        out += "]}";
        first = false;
      }
      out += "]";
      if (!asked.empty()) out += ",\"asked_hz\":" + asked;
      if (const double hz = delivered_rate(p); hz > 0) out += fmt(",\"delivered_hz\":%.1f", hz);
      out += ",\"wall_clock\":" + std::string(wall_clock ? "true" : "false") + "}";
    } else {
      line("");
      std::string rate;
      if (!asked.empty()) rate += ", " + std::string(wall_clock ? "sample-real=" : "sample=") + asked + " Hz asked";
      if (const double hz = delivered_rate(p); hz > 0) rate += fmt(", delivered rate %.0f Hz", hz);
      line("== CPU samples: " + u64(hits) + " hits" + rate + " ==");
      line("   self%     self  total%    total  kind     method (by self; waits, the runtime's unnamed code and");
      line("                                             the profiler's own frames each on one [group] line)");
      for (const Line& r : ranked(true))
        line(fmt("  %6.2f %8" PRIu64 "  %6.2f %8" PRIu64 "  %-7s  ", pct(r.self, hits), r.self, pct(r.total, hits),
                 r.total, r.kind.c_str()) +
             r.name);
      std::string threads;
      for (const auto& [hits_t, t] : per_thread)
        threads += (threads.empty() ? "" : ", ") + thread_label(p.threads()[t]) + " " + u64(hits_t);
      line("  by thread: " + threads);
      line("  by total (inclusive):");
      for (const Line& r : ranked(false)) line(fmt("  %6.2f %8" PRIu64 "  ", pct(r.total, hits), r.total) + r.name);
    }
  }

  // Calls.
  if (call_total || (!o.has_thread && p.has(What::calls))) {
    const auto by_total = top(rows, n, [](const MethodStat& s) { return s.total_ns; });
    const auto by_self = top(rows, n, [](const MethodStat& s) { return s.self_ns; });
    const auto by_calls = top(rows, n, [](const MethodStat& s) { return s.calls; });
    const auto path = hot_path(p, mask, std::max<size_t>(n, 12));
    auto list = [&](const char* key, const std::vector<const Row*>& v) {
      out += std::string(",\"") + key + "\":[";
      for (size_t i = 0; i < v.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(v[i]->name) + ",\"calls\":" + u64(v[i]->s.calls) +
               ",\"self_ns\":" + u64(v[i]->s.self_ns) + ",\"total_ns\":" + u64(v[i]->s.total_ns) + "}";
      out += "]";
    };
    if (json) {
      out += ",\"calls\":{\"total\":" + u64(call_total) + ",\"unmatched_leaves\":" + u64(p.unmatched_leaves()) +
             ",\"unclosed\":" + u64(p.unclosed_calls());
      list("inclusive", by_total);
      list("self", by_self);
      list("methods", by_calls);
      out += ",\"hot_path\":[";
      for (size_t i = 0; i < path.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(p.frames()[p.nodes()[path[i].node].frame].name) +
               ",\"calls\":" + u64(path[i].cs.calls) + ",\"self_ns\":" + u64(path[i].cs.self_ns) +
               ",\"total_ns\":" + u64(path[i].cs.total_ns) + "}";
      out += "]}";
    } else {
      line("");
      line("== Calls: " + u64(call_total) + " ==" +
           (p.unclosed_calls() ? "  (" + u64(p.unclosed_calls()) + " still open at the end, closed there)" : ""));
      line("  inclusive       self        calls  method (by inclusive time; recursion counted once)");
      for (const Row* r : by_total)
        line(fmt("  %10s %10s %12" PRIu64 "  ", duration(r->s.total_ns).c_str(), duration(r->s.self_ns).c_str(),
                 r->s.calls) + r->name);
      line("  by self time:");
      for (const Row* r : by_self)
        line(fmt("  %10s %10s %12" PRIu64 "  ", duration(r->s.total_ns).c_str(), duration(r->s.self_ns).c_str(),
                 r->s.calls) + r->name);
      line("  most called:");
      for (const Row* r : by_calls) line(fmt("  %12" PRIu64 "  ", r->s.calls) + r->name);
      if (!path.empty()) {
        line("  hot path (heaviest callee at each level):");
        for (size_t i = 0; i < path.size(); ++i)
          line(fmt("  %10s %10s  ", duration(path[i].cs.total_ns).c_str(), duration(path[i].cs.self_ns).c_str()) +
               std::string(std::min<size_t>(i, 30) * 2, ' ') + p.frames()[p.nodes()[path[i].node].frame].name);
      }
    }
  }

  // Allocations.
  if (objects) {
    const auto site = sites(p, mask, What::alloc, What::alloc_bytes, n);
    const auto& types = p.alloc_types();
    const size_t nt = std::min(n, types.size());
    if (json) {
      out += ",\"alloc\":{\"objects\":" + u64(objects) + ",\"bytes\":" + u64(bytes);
      if (p.alloc_sample_interval())
        out += ",\"estimated\":true,\"sample_interval\":" + u64(p.alloc_sample_interval()) + ",\"samples\":" +
               u64(p.alloc_samples());
      out += ",\"types\":[";
      if (!o.has_thread)
        for (size_t i = 0; i < nt; ++i)
          out += (i ? "," : "") + std::string("{\"name\":") + js(types[i].name) + ",\"objects\":" +
                 u64(types[i].count) + ",\"bytes\":" + u64(types[i].bytes) + "}";
      out += "],\"sites\":[";
      for (size_t i = 0; i < site.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(site[i].name) + ",\"objects\":" + u64(site[i].a) +
               ",\"bytes\":" + u64(site[i].b) + "}";
      out += "]}";
    } else {
      line("");
      line("== Allocations: " + u64(objects) + " objects, " + bytes_h(bytes) + " (" + u64(bytes) + " bytes)" +
           (p.alloc_sample_interval() ? ", estimated from " + u64(p.alloc_samples()) + " samples (alloc-sample=" +
                                            u64(p.alloc_sample_interval()) + " bytes)"
                                      : std::string()) +
           " ==");
      if (!o.has_thread) {
        line("       bytes    objects  type");
        for (size_t i = 0; i < nt; ++i)
          line(fmt("  %10s %10" PRIu64 "  ", bytes_h(types[i].bytes).c_str(), types[i].count) + types[i].name);
      }
      line("  by allocation site (innermost frame that is not the runtime's):");
      for (const Ranked& r : site) line(fmt("  %10s %10" PRIu64 "  ", bytes_h(r.b).c_str(), r.a) + r.name);
    }
  }

  // Exceptions.
  if (throws || (!o.has_thread && p.clauses())) {
    const auto site = sites(p, mask, What::exceptions, What::exceptions, n);
    const auto& types = p.exception_types();
    const size_t nt = std::min(n, types.size());
    if (json) {
      out += ",\"exceptions\":{\"throws\":" + u64(throws) + ",\"clauses\":" + u64(p.clauses()) + ",\"types\":[";
      if (!o.has_thread)
        for (size_t i = 0; i < nt; ++i)
          out += (i ? "," : "") + std::string("{\"name\":") + js(types[i].name) + ",\"throws\":" +
                 u64(types[i].count) + "}";
      out += "],\"sites\":[";
      for (size_t i = 0; i < site.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(site[i].name) + ",\"throws\":" + u64(site[i].a) + "}";
      out += "]}";
    } else {
      line("");
      line("== Exceptions: " + u64(throws) + " thrown, " + u64(p.clauses()) + " clauses run ==");
      if (!o.has_thread)
        for (size_t i = 0; i < nt; ++i) line(fmt("  %10" PRIu64 "  ", types[i].count) + types[i].name);
      line("  by throw site (innermost frame that is not the runtime's):");
      for (const Ranked& r : site) line(fmt("  %10" PRIu64 "  ", r.a) + r.name);
    }
  }

  // Monitors.
  if (!o.has_thread ? p.has(What::monitor) : masked_total(p, mask, What::monitor) != 0) {
    const auto site = sites(p, mask, What::monitor, What::monitor, n);
    if (json) {
      out += ",\"monitor\":{\"contentions\":" + u64(p.monitor_contentions()) + ",\"acquired\":" +
             u64(p.monitor_done()) + ",\"failed\":" + u64(p.monitor_fails()) + ",\"wait_ns\":" +
             u64(p.monitor_wait_ns()) + ",\"sites\":[";
      for (size_t i = 0; i < site.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(site[i].name) + ",\"contentions\":" + u64(site[i].a) +
               "}";
      out += "]}";
    } else {
      line("");
      line("== Monitor contention: " + u64(p.monitor_contentions()) + " contentions, " + u64(p.monitor_done()) +
           " acquired after waiting, " + u64(p.monitor_fails()) + " failed; waited " + duration(p.monitor_wait_ns()) +
           " ==");
      for (const Ranked& r : site) line(fmt("  %10" PRIu64 "  ", r.a) + r.name);
    }
  }

  // GC.
  const auto& col = p.gc_collections();
  uint64_t collections = 0;
  for (uint64_t c : col) collections += c;
  if (!o.has_thread && (collections || p.gc_resizes())) {
    std::vector<uint64_t> pauses;
    uint64_t total = 0;
    for (const GcPause& g : p.gc_pauses()) {
      pauses.push_back(g.end - g.start);
      total += g.end - g.start;
    }
    std::sort(pauses.begin(), pauses.end());
    const uint64_t p50 = percentile(pauses, 0.5), p99 = percentile(pauses, 0.99);
    const uint64_t mx = pauses.empty() ? 0 : pauses.back();
    if (json) {
      out += ",\"gc\":{\"collections\":" + u64(collections) + ",\"generations\":[";
      for (size_t g = 0; g < col.size(); ++g) out += (g ? "," : "") + u64(col[g]);
      out += "],\"resizes\":" + u64(p.gc_resizes()) + ",\"pauses\":{\"count\":" + u64(pauses.size()) +
             ",\"total_ns\":" + u64(total) + ",\"p50_ns\":" + u64(p50) + ",\"p99_ns\":" + u64(p99) +
             ",\"max_ns\":" + u64(mx) + "}}";
    } else {
      line("");
      std::string gens;
      for (size_t g = 0; g < col.size(); ++g)
        if (col[g]) gens += (gens.empty() ? "" : ", ") + u64(col[g]) + " gen" + u64(g);
      line("== GC: " + u64(collections) + " collections (" + gens + "), " + u64(p.gc_resizes()) + " heap resizes ==");
      line("  pauses: " + u64(pauses.size()) + ", total " + duration(total) + ", p50 " + duration(p50) + ", p99 " +
           duration(p99) + ", max " + duration(mx));
    }
  }

  // JIT.
  if (!o.has_thread && (p.jit_methods() || p.jit_helpers())) {
    if (json) {
      out += ",\"jit\":{\"methods\":" + u64(p.jit_methods()) + ",\"code_bytes\":" + u64(p.jit_code_bytes()) +
             ",\"helpers\":" + u64(p.jit_helpers()) + ",\"largest\":[";
      const auto big = top(rows, n, [](const MethodStat& s) { return s.jit_code_bytes; });
      for (size_t i = 0; i < big.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":") + js(big[i]->name) + ",\"code_bytes\":" +
               u64(big[i]->s.jit_code_bytes) + "}";
      out += "]}";
    } else {
      line("");
      line("== JIT: " + u64(p.jit_methods()) + " methods compiled, " + bytes_h(p.jit_code_bytes()) + " of code, " +
           u64(p.jit_helpers()) + " helpers/trampolines ==");
    }
  }

  // Counters.
  if (!o.has_thread && !p.counters().empty()) {
    std::vector<const CounterInfo*> cs;
    for (const CounterInfo& c : p.counters()) cs.push_back(&c);
    std::sort(cs.begin(), cs.end(), [](const CounterInfo* a, const CounterInfo* b) { return a->name < b->name; });
    if (json) {
      out += ",\"counters\":{\"count\":" + u64(cs.size()) + ",\"values\":[";
      for (size_t i = 0; i < cs.size(); ++i) {
        out += (i ? "," : "") + std::string("{\"name\":") + js(cs[i]->name) + ",\"value\":";
        if (cs[i]->is_string)
          out += js(cs[i]->last_string);
        else if (std::isfinite(cs[i]->last))
          out += fmt("%.17g", cs[i]->last);
        else
          out += "null";  // a NaN or infinite double: JSON has no spelling for it
        out += ",\"samples\":" + u64(cs[i]->samples) + "}";
      }
      out += "]}";
    } else {
      line("");
      line("== Counters (last values): " + u64(cs.size()) + " ==");
      size_t shown = 0;
      for (const CounterInfo* c : cs) {  // the ones that say something: not zero, not empty
        if (shown == n || (c->is_string ? c->last_string.empty() : c->last == 0)) continue;
        line("  " + c->name + " = " + counter_value(*c));
        ++shown;
      }
      if (shown < cs.size()) line("  ... " + u64(cs.size() - shown) + " more (zero, or beyond --top; --json lists all)");
    }
  }

  // CPU time by thread (issue 15): the agent's "Thread CPU time (user|system): NAME [TID]" counters.
  if (!o.has_thread) {
    struct CpuRow {
      std::string name;
      double user = 0, system = 0;
    };
    std::vector<CpuRow> rows_cpu;
    double proc_user = 0, proc_system = 0;
    bool any = false;
    for (const CounterInfo& c : p.counters()) {
      const std::string& nm = c.name;
      for (int sys = 0; sys < 2; ++sys) {
        const std::string key = sys ? "Thread CPU time (system): " : "Thread CPU time (user): ";
        const std::string proc = sys ? "CPU time (system)" : "CPU time (user)";
        const size_t at = nm.find(key);
        if (at != std::string::npos) {
          const std::string who = nm.substr(at + key.size());
          auto it = std::find_if(rows_cpu.begin(), rows_cpu.end(), [&](const CpuRow& r) { return r.name == who; });
          if (it == rows_cpu.end()) it = rows_cpu.insert(rows_cpu.end(), CpuRow{who});
          (sys ? it->system : it->user) = c.last / 1e7;  // 100 ns units
          any = true;
        } else if (nm.size() >= proc.size() && nm.compare(nm.size() - proc.size(), proc.size(), proc) == 0 &&
                   (nm.size() == proc.size() || nm[nm.size() - proc.size() - 1] == '/')) {
          (sys ? proc_system : proc_user) = c.last / 1e7;
        }
      }
    }
    if (any) {
      std::sort(rows_cpu.begin(), rows_cpu.end(),
                [](const CpuRow& a, const CpuRow& b) { return a.user + a.system > b.user + b.system; });
      const double proc_total = proc_user + proc_system;
      if (json) {
        out += fmt(",\"cpu_threads\":{\"process_user_s\":%.3f,\"process_system_s\":%.3f,\"threads\":[", proc_user,
                   proc_system);
        for (size_t i = 0; i < rows_cpu.size(); ++i)
          out += (i ? "," : "") + std::string("{\"name\":") + js(rows_cpu[i].name) +
                 fmt(",\"user_s\":%.3f,\"system_s\":%.3f}", rows_cpu[i].user, rows_cpu[i].system);
        out += "]}";
      } else {
        line("");
        line(fmt("== CPU time by thread (counters): process %.3f s (user %.3f s, system %.3f s) ==", proc_total,
                 proc_user, proc_system));
        line("     total      user    system  share  thread [OS id]");
        const size_t shown = std::min(n, rows_cpu.size());
        for (size_t i = 0; i < shown; ++i) {
          const double tot = rows_cpu[i].user + rows_cpu[i].system;
          line(fmt("  %7.3f s %7.3f s %7.3f s %5.1f%%  ", tot, rows_cpu[i].user, rows_cpu[i].system,
                   proc_total > 0 ? 100.0 * tot / proc_total : 0.0) +
               rows_cpu[i].name);
        }
        if (shown < rows_cpu.size()) line("  ... " + u64(rows_cpu.size() - shown) + " more threads (--top)");
      }
    }
  }

  // Heapshots.
  if (!o.has_thread && !p.heapshots().empty()) {
    const auto& hs = p.heapshots();
    if (json) {
      out += ",\"heapshots\":{\"count\":" + u64(hs.size()) + ",\"list\":[";
      for (size_t i = 0; i < hs.size(); ++i)
        out += (i ? "," : "") + std::string("{\"name\":\"heapshot ") + u64(i) + "\",\"time_ns\":" +
               u64(hs[i].start >= p.first_time() ? hs[i].start - p.first_time() : 0) + ",\"objects\":" +
               u64(hs[i].objects) + ",\"bytes\":" + u64(hs[i].bytes) + ",\"complete\":" +
               (hs[i].end ? "true" : "false") + "}";
      out += "]}";
    } else {
      line("");
      line("== Heapshots: " + u64(hs.size()) + " (mlpd heapshots lists them by class) ==");
      const size_t from = hs.size() > n ? hs.size() - n : 0;
      for (size_t i = from; i < hs.size(); ++i)
        line(fmt("  heapshot %zu at %.3f s: %" PRIu64 " objects, ", i,
                 static_cast<double>(hs[i].start >= p.first_time() ? hs[i].start - p.first_time() : 0) / 1e9,
                 hs[i].objects) +
             bytes_h(hs[i].bytes));
    }
  }
  if (json) out += "}";
  out += '\n';
  if (std::fwrite(out.data(), 1, out.size(), file) != out.size()) {
    error = "write error";
    return false;
  }
  return true;
}

}  // namespace mlpd::views
