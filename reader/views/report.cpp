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

#include "json.h"
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
  auto js = [](std::string_view s) { return cli::json_string(s); };

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

  // CPU samples.
  if (hits) {
    const auto by_self = top(rows, n, [](const MethodStat& s) { return s.samples_self; });
    const auto by_total = top(rows, n, [](const MethodStat& s) { return s.samples_total; });
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
      out += "]}";
    } else {
      line("");
      line("== CPU samples: " + u64(hits) + " hits ==");
      line("   self%     self  total%    total  kind     method (by self)");
      for (const Row* r : by_self)
        line(fmt("  %6.2f %8" PRIu64 "  %6.2f %8" PRIu64 "  %-7s  ", pct(r->s.samples_self, hits), r->s.samples_self,
                 pct(r->s.samples_total, hits), r->s.samples_total, std::string(frame_kind_name(r->kind)).c_str()) +
             r->name);
      std::string threads;
      for (const auto& [hits_t, t] : per_thread)
        threads += (threads.empty() ? "" : ", ") + thread_label(p.threads()[t]) + " " + u64(hits_t);
      line("  by thread: " + threads);
      line("  by total (inclusive):");
      for (const Row* r : by_total)
        line(fmt("  %6.2f %8" PRIu64 "  ", pct(r->s.samples_total, hits), r->s.samples_total) + r->name);
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
      out += ",\"alloc\":{\"objects\":" + u64(objects) + ",\"bytes\":" + u64(bytes) + ",\"types\":[";
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
      line("== Allocations: " + u64(objects) + " objects, " + bytes_h(bytes) + " (" + u64(bytes) + " bytes) ==");
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
