// The report's text renderer: one screen that says where the time and the memory went, from the
// sections of mlpd/report.h.
#include <algorithm>
#include <string>

#include "mlpd/format.h"
#include "mlpd/report.h"
#include "report_util.h"

namespace mlpd::views::report {

using namespace mlpd::profile;

namespace {

class Text {
 public:
  explicit Text(size_t top) : n_(top) {}
  std::string out;

  void line(const std::string& s) { out += s, out += '\n'; }

  void header(const HeaderSection& h) {
    line("== " + (h.file.empty() ? std::string("profile") : h.file) + " ==");
    line("program:  " + (h.program.empty() ? std::string("(unknown)") : h.program) + "   pid " +
         std::to_string(h.pid) + "   " + h.arch + "/" + h.os);
    line("started:  " + iso_time(h.startup_ms) + "   duration " + duration(h.duration_ns) + "   " + u64(h.events) +
         " events, " + u64(h.threads) + " threads (" + u64(h.threads_writing) + " writing events)");
    line("options:  " + (h.options.empty() ? std::string("(none recorded)") : h.options));
    if (h.has_thread) line("thread:   " + h.thread_note);
    if (h.default_events)
      line("note:     'sample' without 'nodefaults' first also recorded Mono's default events: " + u64(h.default_events) +
           " exception throws and clauses beside " + u64(h.default_samples) +
           " samples; 'nodefaults,sample' records the samples alone");
    if (h.problems)
      line("problems: " + u64(h.problems) + " (see standard error); the report shows what could be read");
  }

  void recorded(const RecordedSection& r, uint64_t dur) {
    line("");
    line("== Recorded (pause/resume): " + u64(r.intervals.size()) + " interval" + (r.intervals.size() == 1 ? "" : "s") +
         ", " + duration(r.recorded_ns) + " of " + duration(dur) + " ==");
    for (const auto& iv : r.intervals) line(fmt("  %.3f s .. %.3f s  (", iv.start_s, iv.end_s) + duration(iv.ns) + ")");
  }

  void cpu(const CpuSection& c) {
    const uint64_t hits = c.hits;
    line("");
    std::string rate;
    if (!c.asked_hz.empty()) rate += ", " + std::string(c.wall_clock ? "sample-real=" : "sample=") + c.asked_hz + " Hz asked";
    if (c.delivered_hz > 0) rate += fmt(", delivered rate %.0f Hz", c.delivered_hz);
    if (c.rate_pending) rate += ", delivered rate: the file's start is still being read";
    line("== CPU samples: " + u64(hits) + " hits" + rate + " ==");
    line("   self%     self  total%    total  kind     method (by self; waits, the runtime's unnamed code and");
    line("                                             the profiler's own frames each on one [group] line)");
    for (const auto& r : c.ranked_self)
      line(fmt("  %6.2f %8" PRIu64 "  %6.2f %8" PRIu64 "  %-7s  ", pct(r.self, hits), r.self, pct(r.total, hits),
               r.total, r.kind.c_str()) +
           r.name);
    std::string threads;
    for (const auto& [name, hits_t] : c.threads) threads += (threads.empty() ? "" : ", ") + name + " " + u64(hits_t);
    line("  by thread: " + threads);
    // The runtime's own code without symbols (issue 33.5): what would name it, one line, for the
    // module with the most such hits (at least 0.5% of them).
    if (!c.missing_symbols.empty() && pct(c.missing_symbols[0].self, hits) >= 0.5) {
      const auto& m = c.missing_symbols[0];
      line(fmt("  [runtime, unnamed]: %.1f%% of the hits are in %s, which is stripped; its separate debug symbols name them",
               pct(m.self, hits), m.module.c_str()) +
           (m.package.empty() ? std::string(" (by build id or .gnu_debuglink, under /usr/lib/debug)")
                              : ": install " + m.package));
    }
    line("  by total (inclusive):");
    for (const auto& r : c.ranked_total) line(fmt("  %6.2f %8" PRIu64 "  ", pct(r.total, hits), r.total) + r.name);
    // Issue 33: every cut of a sample's stack, by its reason (the agent's counters).
    std::string cuts;
    auto cut = [&](uint64_t k, const char* why) {
      if (k) cuts += (cuts.empty() ? "" : "; ") + u64(k) + fmt(" (%.2f%%) ", pct(k, hits)) + why;
    };
    cut(c.truncated, "deeper than the 256 frames kept, rooted at [truncated]");
    cut(c.cut_unnamed, "at a managed frame the agent could not name, rooted at [stack cut]");
    cut(c.cut_copy, "whose native stack goes on beyond the 16 KiB copied, rooted at [stack cut]");
    if (!cuts.empty()) line("  stacks cut short: " + cuts);
  }

  void calls(const CallsSection& c) {
    line("");
    line("== Calls: " + u64(c.total) + " ==" +
         (c.unclosed ? "  (" + u64(c.unclosed) + " still open at the end, closed there)" : ""));
    if (!c.aot_images.empty()) {
      std::string names;
      for (size_t i = 0; i < c.aot_images.size() && i < 4; ++i) names += (i ? ", " : "") + c.aot_images[i];
      if (c.aot_images.size() > 4) names += ", " + u64(c.aot_images.size() - 4) + " more";
      line("  not seen: methods of AOT-compiled images (" + names +
           ") run without enter/leave events; run mono with -O=-aot to count them");
    }
    line("  inclusive       self        calls  method (by inclusive time; recursion counted once)");
    auto timed = [&](const MethodLine& r) {
      line(fmt("  %10s %10s %12" PRIu64 "  ", duration(r.s.total_ns).c_str(), duration(r.s.self_ns).c_str(), r.s.calls) +
           r.name);
    };
    for (const MethodLine& r : c.by_total) timed(r);
    line("  by self time:");
    for (const MethodLine& r : c.by_self) timed(r);
    line("  most called:");
    for (const MethodLine& r : c.by_calls) line(fmt("  %12" PRIu64 "  ", r.s.calls) + r.name);
    if (!c.hot_path.empty()) {
      line("  hot path (busiest callee at each level; busy: inclusive less waits such as Thread.Sleep):");
      for (size_t i = 0; i < c.hot_path.size(); ++i)
        line(fmt("  %10s %10s  ", duration(c.hot_path[i].cs.total_ns).c_str(), duration(c.hot_path[i].cs.self_ns).c_str()) +
             std::string(std::min<size_t>(i, 30) * 2, ' ') + c.hot_path[i].name);
    }
  }

  void alloc(const AllocSection& a) {
    line("");
    line("== Allocations: " + u64(a.objects) + " objects, " + bytes_h(a.bytes) + " (" + u64(a.bytes) + " bytes)" +
         (a.sample_interval ? ", estimated from " + u64(a.samples) + " samples (alloc-sample=" + u64(a.sample_interval) +
                                  " bytes)"
                            : std::string()) +
         " ==");
    if (a.show_types) {
      line("       bytes    objects  type");
      for (const TypeStat& t : a.types) line(fmt("  %10s %10" PRIu64 "  ", bytes_h(t.bytes).c_str(), t.count) + t.name);
    }
    line("  by allocation site (innermost frame that is not the runtime's):");
    for (const Site& s : a.sites) line(fmt("  %10s %10" PRIu64 "  ", bytes_h(s.bytes).c_str(), s.count) + s.name);
  }

  void exceptions(const ExceptionSection& e) {
    line("");
    line("== Exceptions: " + u64(e.throws) + " thrown, " + u64(e.clauses) + " clauses run ==");
    if (e.show_types)
      for (const TypeStat& t : e.types) line(fmt("  %10" PRIu64 "  ", t.count) + t.name);
    line("  by throw site (innermost frame that is not the runtime's):");
    for (const Site& s : e.sites) line(fmt("  %10" PRIu64 "  ", s.count) + s.name);
  }

  void monitor(const MonitorSection& m) {
    line("");
    line("== Monitor contention: " + u64(m.contentions) + " contentions, " + u64(m.acquired) +
         " acquired after waiting, " + u64(m.failed) + " failed; waited " + duration(m.wait_ns) + " ==");
    for (const Site& s : m.sites) line(fmt("  %10" PRIu64 "  ", s.count) + s.name);
  }

  void gc(const GcSection& g) {
    line("");
    std::string gens;
    for (size_t i = 0; i < g.generations.size(); ++i)
      if (g.generations[i]) gens += (gens.empty() ? "" : ", ") + u64(g.generations[i]) + " gen" + u64(i);
    line("== GC: " + u64(g.collections) + " collections (" + gens + "), " + u64(g.resizes) + " heap resizes ==");
    line("  pauses: " + u64(g.pauses) + ", total " + duration(g.total_ns) + ", p50 " + duration(g.p50_ns) + ", p99 " +
         duration(g.p99_ns) + ", max " + duration(g.max_ns));
  }

  void jit(const JitSection& j) {
    line("");
    line("== JIT: " + u64(j.methods) + " methods compiled, " + bytes_h(j.code_bytes) + " of code, " + u64(j.helpers) +
         " helpers/trampolines ==");
  }

  static std::string counter_value(const CounterInfo& c) {
    if (c.is_string) return c.last_string;
    if (c.type == format::COUNTER_DOUBLE) return fmt("%g", c.last);
    return fmt("%.0f", c.last);
  }

  void counters(const CountersSection& c) {
    line("");
    line("== Counters (last values): " + u64(c.values.size()) + " ==");
    size_t shown = 0;
    for (const CounterInfo& v : c.values) {  // the ones that say something: not zero, not empty
      if (shown == n_ || (v.is_string ? v.last_string.empty() : v.last == 0)) continue;
      line("  " + v.name + " = " + counter_value(v));
      ++shown;
    }
    if (shown < c.values.size())
      line("  ... " + u64(c.values.size() - shown) + " more (zero, or beyond --top; --json lists all)");
  }

  void cpu_threads(const CpuThreadsSection& c) {
    const double proc_total = c.process_user_s + c.process_system_s;
    line("");
    line(fmt("== CPU time by thread (counters): process %.3f s (user %.3f s, system %.3f s) ==", proc_total,
             c.process_user_s, c.process_system_s));
    line("     total      user    system  share  thread [OS id]");
    const size_t shown = std::min(n_, c.threads.size());
    for (size_t i = 0; i < shown; ++i) {
      const auto& t = c.threads[i];
      const double tot = t.user_s + t.system_s;
      line(fmt("  %7.3f s %7.3f s %7.3f s %5.1f%%  ", tot, t.user_s, t.system_s,
               proc_total > 0 ? 100.0 * tot / proc_total : 0.0) +
           t.name);
    }
    if (shown < c.threads.size()) line("  ... " + u64(c.threads.size() - shown) + " more threads (--top)");
  }

  void heapshots(const HeapshotsSection& h) {
    const auto& hs = h.list;
    line("");
    line("== Heapshots: " + u64(hs.size()) + " (mlpd heapshots lists them by class) ==");
    const size_t from = hs.size() > n_ ? hs.size() - n_ : 0;
    for (size_t i = from; i < hs.size(); ++i)
      line(fmt("  heapshot %zu at %.3f s: %" PRIu64 " objects, ", i, static_cast<double>(hs[i].time_ns) / 1e9,
               hs[i].objects) +
           bytes_h(hs[i].bytes));
  }

  // After the report's closing blank line, as `mlpd report` has always ended with it.
  void held_by(const HeldBySection& h) {
    line("== Held by: heapshot " + u64(h.index) + ", the last (mlpd heapshots --retained, --paths CLASS) ==");
    if (!h.error.empty()) {
      line("  " + h.error);
      return;
    }
    line("      retained    objects  class  <- held by (the root of its largest instance)");
    for (const HeldBySection::Class& c : h.classes) {
      std::string s = fmt("  %12" PRIu64 " %10" PRIu64 "  ", c.retained, c.objects) + escaped(c.name);
      if (c.has_root) {
        s += "  <- " + c.root_kind;
        if (!c.root_name.empty()) s += " \"" + escaped(c.root_name) + '"';
      }
      line(s);
    }
    if (h.unreached_objects)
      line("  (unreached: " + u64(h.unreached_objects) + " objects, " + u64(h.unreached_bytes) + " bytes)");
  }

 private:
  // Control bytes as the CLI's text views write them (\n, \t, \r, \xHH): a class or root name from
  // the file cannot break the line.
  static std::string escaped(const std::string& s) {
    std::string out;
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != 0x7f) {
        out += ch;
        continue;
      }
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default: out += fmt("\\x%02x", c);
      }
    }
    return out;
  }
  size_t n_;
};

}  // namespace

std::string render_text(const Report& r) {
  Text t(r.top);
  t.header(r.header);
  if (r.recorded) t.recorded(*r.recorded, r.header.duration_ns);
  if (r.cpu) t.cpu(*r.cpu);
  if (r.calls) t.calls(*r.calls);
  if (r.alloc) t.alloc(*r.alloc);
  if (r.exceptions) t.exceptions(*r.exceptions);
  if (r.monitor) t.monitor(*r.monitor);
  if (r.gc) t.gc(*r.gc);
  if (r.jit) t.jit(*r.jit);
  if (r.counters) t.counters(*r.counters);
  if (r.cpu_threads) t.cpu_threads(*r.cpu_threads);
  if (r.heapshots) t.heapshots(*r.heapshots);
  t.out += '\n';
  if (r.held_by) t.held_by(*r.held_by);
  return std::move(t.out);
}

}  // namespace mlpd::views::report
