// The report's sections as data (mlpd/report.h), built from the profile model; the CPU section is
// report_cpu.cpp's. The renderers (report_text.cpp, report_json.cpp) only format what is here.
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "mlpd/conventions.h"
#include "mlpd/option_syntax.h"
#include "mlpd/report.h"
#include "report_util.h"

namespace mlpd::views::report {

using namespace mlpd::profile;

namespace {

uint64_t percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

// A managed method that waits: its inclusive time is time the thread spent blocked, not on the CPU
// (issue 33.5: a server's hot path was Main -> Thread.Sleep). "Namespace.Class:Method (args)".
bool waiting_method(std::string_view name) {
  if (name.rfind("(wrapper ", 0) == 0) {  // "(wrapper managed-to-native) System.Threading.Thread:SleepInternal (int)"
    const size_t close = name.find(") ");
    if (close == std::string_view::npos) return false;
    name = name.substr(close + 2);
  }
  const size_t paren = name.find('(');
  std::string_view head = name.substr(0, paren);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  const size_t colon = head.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view cls = head.substr(0, colon);
  const std::string_view method = head.substr(colon + 1);
  if (const size_t tick = cls.find('`'); tick != std::string_view::npos) cls = cls.substr(0, tick);
  struct Wait {
    std::string_view cls, methods[8];
  };
  static constexpr Wait kWaits[] = {
      {"System.Threading.Thread", {"Sleep", "SleepInternal", "Join", "JoinInternal", "Join_internal"}},
      {"System.Threading.Monitor", {"Wait", "ObjWait", "Monitor_wait"}},
      {"System.Threading.WaitHandle",
       {"WaitOne", "WaitAll", "WaitAny", "WaitOneNative", "WaitMultiple", "Wait_internal", "WaitOne_internal",
        "WaitOneCore"}},
      {"System.Threading.ManualResetEventSlim", {"Wait"}},
      {"System.Threading.SemaphoreSlim", {"Wait", "WaitUntilCountOrTimeout"}},
      {"System.Threading.CountdownEvent", {"Wait"}},
      {"System.Threading.Barrier", {"SignalAndWait"}},
      {"System.Threading.Tasks.Task", {"Wait", "WaitAll", "WaitAny", "InternalWait", "SpinThenBlockingWait"}},
      {"System.Net.Sockets.Socket", {"Accept", "Accept_internal", "Receive", "Receive_internal", "Poll",
                                     "Poll_internal", "Select", "Select_internal"}},
      {"System.Net.HttpListener", {"GetContext", "EndGetContext"}},
      {"System.Console", {"ReadLine", "ReadKey", "Read"}},
  };
  for (const Wait& w : kWaits)
    if (w.cls == cls)
      for (std::string_view m : w.methods)
        if (!m.empty() && m == method) return true;
  return false;
}

namespace {

// A sampling run that records Mono's default events too (issue 33.3): the options ask for samples
// without `nodefaults` first and without naming `exception`, and the exception throws and clauses
// (the defaults' events) outnumber the samples. Each such event is smaller than a sample, but a
// server that catches what it throws runs clauses by the million: 7 GB an hour, 50-65x a
// `nodefaults,sample` file.
bool defaults_dominate(const Profile& p) {
  std::string_view text = p.header().args;
  if (!option_syntax::agent_args(text, text) && text.substr(0, 4) == "log:") text = text.substr(4);  // Mono's
  bool first_nodefaults = false, sampling = false, exception = false;
  (void)option_syntax::split_items(text, [&](const option_syntax::Item& it, bool first) {
    if (first && it.name == "nodefaults") first_nodefaults = true;
    if (it.name == "sample" || it.name == "sample-real" || it.name == "sampling" || it.name == "sampling-real")
      sampling = true;
    if (it.name == "exception") exception = true;
    return true;
  });
  const uint64_t defaults = p.throws() + p.clauses();
  return sampling && !first_nodefaults && !exception && defaults > p.sample_hits();
}

// The hot path (issue 33.5): from the outermost call with the most busy time, the callee with the
// most busy time at each level, where a call's busy time is its inclusive time less the inclusive
// time of the waiting methods (waiting_method) it called. A path ends where no callee is busy. A
// file whose calls are all waits (no busy time at all) is ranked by inclusive time.
std::vector<CallsSection::Step> hot_path(const Profile& p, const std::vector<bool>& mask, size_t max_len) {
  const auto& nodes = p.nodes();
  std::vector<uint8_t> frame_waits(p.frames().size(), 2);  // 2: not looked at yet
  std::vector<uint64_t> waited(nodes.size(), 0);
  for (NodeId n = nodes.size() > 0 ? static_cast<NodeId>(nodes.size() - 1) : 0; n >= 1; --n) {
    const Node& nd = nodes[n];
    if (nd.frame == kNoFrame || nd.frame >= frame_waits.size()) continue;
    if (frame_waits[nd.frame] == 2) frame_waits[nd.frame] = waiting_method(p.frames()[nd.frame].name);
    if (frame_waits[nd.frame]) waited[n] = p.calls(n).total_ns;
    if (nd.parent < n) waited[nd.parent] += waited[n];
  }
  auto busy = [&](NodeId n) { return p.calls(n).total_ns - std::min(p.calls(n).total_ns, waited[n]); };
  bool by_busy = false;
  for (NodeId n = 1; n < nodes.size() && !by_busy; ++n)
    by_busy = nodes[n].depth == 1 && nodes[n].frame != kNoFrame && mask[nodes[n].thread] && busy(n) > 0;
  auto key = [&](NodeId n) { return by_busy ? busy(n) : p.calls(n).total_ns; };
  std::vector<NodeId> best(nodes.size(), 0);
  NodeId root_best = 0;
  for (NodeId n = 1; n < nodes.size(); ++n) {
    if (nodes[n].frame == kNoFrame || !mask[nodes[n].thread]) continue;
    const uint64_t k = key(n);
    if (k == 0 && (by_busy || p.calls(n).calls == 0)) continue;
    const NodeId parent = nodes[n].parent;
    if (nodes[n].depth == 1) {
      if (!root_best || k > key(root_best)) root_best = n;
    } else if (!best[parent] || k > key(best[parent])) {
      best[parent] = n;
    }
  }
  std::vector<CallsSection::Step> out;
  for (NodeId n = root_best; n && out.size() < max_len; n = best[n])
    out.push_back({p.frames()[nodes[n].frame].name, p.calls(n), busy(n)});
  return out;
}

// Leaf frames of a What's stacks merged by name: the "site" ranking.
std::vector<Site> sites(const Profile& p, const std::vector<bool>& mask, What count, What bytes, size_t n) {
  std::unordered_map<std::string_view, Site> m;
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
    Site& r = m[p.frames()[p.nodes()[s].frame].name];
    r.count += c;
    if (with_bytes) r.bytes += p.weight(bytes, i);
  }
  std::vector<Site> out;
  for (auto& [k, v] : m) {
    v.name = std::string(k);
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [&](const Site& x, const Site& y) {
    const uint64_t kx = with_bytes ? x.bytes : x.count, ky = with_bytes ? y.bytes : y.count;
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

// --thread: a name or an id. False with `error` when it matches no thread.
bool thread_mask(const Profile& p, const ReportOptions& o, std::vector<bool>& mask, std::string& note,
                 std::string& error) {
  mask.assign(p.threads().size(), !o.has_thread);
  if (!o.has_thread) return true;
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
      note += (note.empty() ? "" : ", ") + thread_label(p.threads()[t]);
    }
  }
  if (!any) {
    error = "no thread named or numbered '" + s + "' in the file (threads:";
    for (const ThreadInfo& t : p.threads()) error += " " + thread_label(t) + ";";
    error += ")";
    return false;
  }
  return true;
}

std::optional<RecordedSection> recorded_section(const Profile& p) {
  if (!p.pauses_recorded()) return std::nullopt;
  RecordedSection out;
  auto rel = [&](uint64_t t) { return static_cast<double>(t >= p.first_time() ? t - p.first_time() : 0) / 1e9; };
  for (const RecordedInterval& r : p.recorded_intervals()) {
    out.recorded_ns += r.end - r.start;
    out.intervals.push_back({rel(r.start), rel(r.end), r.end - r.start});
  }
  return out;
}

std::optional<GcSection> gc_section(const Profile& p) {
  GcSection out;
  out.generations = p.gc_collections();
  for (uint64_t c : out.generations) out.collections += c;
  out.resizes = p.gc_resizes();
  if (!out.collections && !out.resizes) return std::nullopt;
  std::vector<uint64_t> pauses;
  for (const GcPause& g : p.gc_pauses()) {
    pauses.push_back(g.end - g.start);
    out.total_ns += g.end - g.start;
  }
  std::sort(pauses.begin(), pauses.end());
  out.pauses = pauses.size();
  out.p50_ns = percentile(pauses, 0.5);
  out.p99_ns = percentile(pauses, 0.99);
  out.max_ns = pauses.empty() ? 0 : pauses.back();
  return out;
}

std::optional<CpuThreadsSection> cpu_threads_section(const Profile& p) {
  CpuThreadsSection out;
  bool any = false;
  for (const CounterInfo& c : p.counters()) {
    const std::string& nm = c.name;
    for (int sys = 0; sys < 2; ++sys) {
      const std::string key(sys ? conventions::kThreadCpuSystemPrefix : conventions::kThreadCpuUserPrefix);
      const std::string proc(sys ? conventions::kProcessCpuSystem : conventions::kProcessCpuUser);
      const size_t at = nm.find(key);
      if (at != std::string::npos) {
        const std::string who = nm.substr(at + key.size());
        auto it = std::find_if(out.threads.begin(), out.threads.end(),
                               [&](const CpuThreadsSection::Thread& r) { return r.name == who; });
        if (it == out.threads.end()) it = out.threads.insert(out.threads.end(), CpuThreadsSection::Thread{who});
        (sys ? it->system_s : it->user_s) = c.last / 1e7;  // 100 ns units
        any = true;
      } else if (nm.size() >= proc.size() && nm.compare(nm.size() - proc.size(), proc.size(), proc) == 0 &&
                 (nm.size() == proc.size() || nm[nm.size() - proc.size() - 1] == '/')) {
        (sys ? out.process_system_s : out.process_user_s) = c.last / 1e7;
      }
    }
  }
  if (!any) return std::nullopt;
  std::sort(out.threads.begin(), out.threads.end(), [](const auto& a, const auto& b) {
    return a.user_s + a.system_s > b.user_s + b.system_s;
  });
  return out;
}

}  // namespace

std::vector<MethodLine> rows_by_name(const Profile& p, const std::vector<MethodStat>& stats) {
  std::unordered_map<std::string_view, size_t> index;
  std::vector<MethodLine> rows;
  for (FrameId f = 0; f < stats.size(); ++f) {
    const Frame& fr = p.frames()[f];
    auto [it, inserted] = index.try_emplace(fr.name, rows.size());
    if (inserted) rows.push_back(MethodLine{fr.name, fr.kind, {}});
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

bool build_report(const Profile& p, const ReportOptions& o, Report& r, std::string& error) {
  r = Report();
  std::vector<bool> mask;
  std::string thread_note;
  if (!thread_mask(p, o, mask, thread_note, error)) return false;
  const std::vector<MethodStat> stats = o.has_thread ? method_stats(p, &mask) : p.methods();
  const std::vector<MethodLine> rows = rows_by_name(p, stats);
  const size_t n = o.top;
  const bool all = !o.has_thread;
  r.top = n;
  const FileHeader& h = p.header();
  const uint64_t dur = p.last_time() > p.first_time() ? p.last_time() - p.first_time() : 0;
  r.header = HeaderSection{o.input_name, p.program(), h.pid, h.args, h.arch, h.os, h.startup_ms, dur,
                           p.summary().events, p.threads().size(), p.problem_count()};
  r.header.has_thread = o.has_thread;
  r.header.thread_note = thread_note;
  {  // distinct ids, as verify counts them (an id the system gave again to a new thread is one)
    std::unordered_set<uint64_t> writing;
    for (const ThreadInfo& ti : p.threads())
      if (ti.wrote) writing.insert(ti.id);
    r.header.threads_writing = writing.size();
  }
  if (defaults_dominate(p)) {
    r.header.default_events = p.throws() + p.clauses();
    r.header.default_samples = p.sample_hits();
  }
  r.recorded = recorded_section(p);

  const uint64_t hits = all ? p.sample_hits() : masked_total(p, mask, What::cpu);
  r.cpu = cpu_section(p, mask, rows, hits, n);
  if (r.cpu && o.counters_partial) {
    r.cpu->rate_pending = r.cpu->delivered_hz > 0;
    r.cpu->delivered_hz = 0;
  }

  uint64_t calls_masked = 0;
  for (const MethodLine& m : rows) calls_masked += m.s.calls;
  const uint64_t call_total = all ? p.call_count() : calls_masked;
  if (call_total || (all && p.has(What::calls))) {
    CallsSection c;
    c.total = call_total;
    c.unmatched_leaves = p.unmatched_leaves();
    c.unclosed = p.unclosed_calls();
    c.by_total = top(rows, n, [](const MethodStat& s) { return s.total_ns; });
    c.by_self = top(rows, n, [](const MethodStat& s) { return s.self_ns; });
    c.by_calls = top(rows, n, [](const MethodStat& s) { return s.calls; });
    c.hot_path = hot_path(p, mask, std::max<size_t>(n, 12));
    constexpr std::string_view kAot = conventions::kAotImageCounterPrefix;  // the Mono runtime's counters
    for (const CounterInfo& ci : p.counters())
      if (const size_t at = ci.name.find(kAot); at != std::string::npos && !ci.is_string)
        c.aot_images.push_back(ci.name.substr(at + kAot.size()));
    r.calls = std::move(c);
  }

  const uint64_t objects = all ? p.alloc_objects() : masked_total(p, mask, What::alloc);
  if (objects) {
    AllocSection a;
    a.objects = objects;
    a.bytes = all ? p.alloc_bytes() : masked_total(p, mask, What::alloc_bytes);
    a.sample_interval = p.alloc_sample_interval();
    a.samples = p.alloc_samples();
    a.show_types = all;
    if (all) a.types.assign(p.alloc_types().begin(), p.alloc_types().begin() + std::min(n, p.alloc_types().size()));
    a.sites = sites(p, mask, What::alloc, What::alloc_bytes, n);
    r.alloc = std::move(a);
  }

  const uint64_t throws = all ? p.throws() : masked_total(p, mask, What::exceptions);
  if (throws || (all && p.clauses())) {
    ExceptionSection e;
    e.throws = throws;
    e.clauses = p.clauses();
    e.show_types = all;
    const auto& types = p.exception_types();
    if (all) e.types.assign(types.begin(), types.begin() + std::min(n, types.size()));
    e.sites = sites(p, mask, What::exceptions, What::exceptions, n);
    r.exceptions = std::move(e);
  }

  if (all ? p.has(What::monitor) : masked_total(p, mask, What::monitor) != 0) {
    r.monitor = MonitorSection{p.monitor_contentions(), p.monitor_done(), p.monitor_fails(), p.monitor_wait_ns(),
                               sites(p, mask, What::monitor, What::monitor, n)};
  }

  if (!all) return true;  // the rest is the whole process's, not a thread's
  r.gc = gc_section(p);
  if (p.jit_methods() || p.jit_helpers())
    r.jit = JitSection{p.jit_methods(), p.jit_code_bytes(), p.jit_helpers(),
                       top(rows, n, [](const MethodStat& s) { return s.jit_code_bytes; })};
  if (!p.counters().empty()) {
    CountersSection c{p.counters()};
    std::sort(c.values.begin(), c.values.end(),
              [](const CounterInfo& a, const CounterInfo& b) { return a.name < b.name; });
    r.counters = std::move(c);
  }
  r.cpu_threads = cpu_threads_section(p);
  if (o.counters_partial) r.counters.reset(), r.cpu_threads.reset();
  if (!p.heapshots().empty()) {
    HeapshotsSection hs;
    for (const HeapshotInfo& s : p.heapshots())
      hs.list.push_back({s.start >= p.first_time() ? s.start - p.first_time() : 0, s.objects, s.bytes, s.end != 0});
    r.heapshots = std::move(hs);
  }
  return true;
}

}  // namespace mlpd::views::report
