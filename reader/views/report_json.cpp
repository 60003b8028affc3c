// The report's JSON renderer (`mlpd report --json`, docs/reports.md): one object, a member per
// section of mlpd/report.h.
#include <cmath>
#include <string>
#include <string_view>

#include "mlpd/json.h"
#include "mlpd/report.h"
#include "report_util.h"

namespace mlpd::views::report {

using namespace mlpd::profile;

namespace {

std::string js(std::string_view s) { return json_string(s); }

// `,"key":[` then fn(item) for each item, comma-separated, then `]`.
template <typename List, typename Fn>
void list(std::string& out, const char* key, const List& items, Fn fn) {
  out += std::string(",\"") + key + "\":[";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ',';
    first = false;
    fn(item);
  }
  out += "]";
}

void header(std::string& out, const HeaderSection& h) {
  out += "{\"header\":{\"file\":" + js(h.file) + ",\"program\":" + js(h.program) + ",\"pid\":" + std::to_string(h.pid) +
         ",\"options\":" + js(h.options) + ",\"arch\":" + js(h.arch) + ",\"os\":" + js(h.os) +
         ",\"start\":" + js(iso_time(h.startup_ms)) + ",\"duration_ns\":" + u64(h.duration_ns) +
         ",\"events\":" + u64(h.events) + ",\"threads\":" + u64(h.threads) +
         ",\"threads_writing\":" + u64(h.threads_writing) + ",\"problems\":" + u64(h.problems);
  if (h.has_thread) out += ",\"thread\":" + js(h.thread_note);
  if (h.default_events) out += ",\"default_events\":" + u64(h.default_events);
  out += "}";
}

void recorded(std::string& out, const RecordedSection& r) {
  out += ",\"recorded\":{\"recorded_ns\":" + u64(r.recorded_ns);
  list(out, "intervals", r.intervals,
       [&](const auto& iv) { out += fmt("{\"start_s\":%.6f,\"end_s\":%.6f}", iv.start_s, iv.end_s); });
  out += "}";
}

void cpu(std::string& out, const CpuSection& c) {
  out += ",\"samples\":{\"total\":" + u64(c.hits);
  list(out, "methods", c.by_self, [&](const MethodLine& r) {
    out += "{\"name\":" + js(r.name) + ",\"kind\":" + js(frame_kind_name(r.kind)) + ",\"self\":" +
           u64(r.s.samples_self) + ",\"total\":" + u64(r.s.samples_total) +
           fmt(",\"self_percent\":%.2f,\"total_percent\":%.2f}", pct(r.s.samples_self, c.hits),
               pct(r.s.samples_total, c.hits));
  });
  list(out, "inclusive", c.by_total, [&](const MethodLine& r) {
    out += "{\"name\":" + js(r.name) + ",\"kind\":" + js(frame_kind_name(r.kind)) + ",\"self\":" +
           u64(r.s.samples_self) + ",\"total\":" + u64(r.s.samples_total) + "}";
  });
  list(out, "threads", c.threads,
       [&](const auto& t) { out += "{\"name\":" + js(t.first) + ",\"hits\":" + u64(t.second) + "}"; });
  list(out, "groups", c.groups, [&](const CpuSection::Group& g) {
    out += "{\"name\":" + js(g.name) + ",\"self\":" + u64(g.self) + ",\"total\":" + u64(g.total);
    list(out, "members", g.members,
         [&](const auto& m) { out += "{\"name\":" + js(m.first) + ",\"self\":" + u64(m.second) + "}"; });
    out += "}";
  });
  list(out, "missing_symbols", c.missing_symbols, [&](const CpuSection::MissingSymbols& m) {
    out += "{\"module\":" + js(m.module) + ",\"package\":" + js(m.package) + ",\"self\":" + u64(m.self) + "}";
  });
  if (!c.asked_hz.empty()) out += ",\"asked_hz\":" + c.asked_hz;
  if (c.delivered_hz > 0) out += fmt(",\"delivered_hz\":%.1f", c.delivered_hz);
  out += ",\"cut\":{\"truncated\":" + u64(c.truncated) + ",\"frame_not_named\":" + u64(c.cut_unnamed) +
         ",\"beyond_stack_copy\":" + u64(c.cut_copy) + "}";
  out += ",\"wall_clock\":" + std::string(c.wall_clock ? "true" : "false") + "}";
}

void calls(std::string& out, const CallsSection& c) {
  out += ",\"calls\":{\"total\":" + u64(c.total) + ",\"unmatched_leaves\":" + u64(c.unmatched_leaves) +
         ",\"unclosed\":" + u64(c.unclosed);
  auto method = [&](const MethodLine& r) {
    out += "{\"name\":" + js(r.name) + ",\"calls\":" + u64(r.s.calls) + ",\"self_ns\":" + u64(r.s.self_ns) +
           ",\"total_ns\":" + u64(r.s.total_ns) + "}";
  };
  list(out, "inclusive", c.by_total, method);
  list(out, "self", c.by_self, method);
  list(out, "methods", c.by_calls, method);
  list(out, "hot_path", c.hot_path, [&](const CallsSection::Step& s) {
    out += "{\"name\":" + js(s.name) + ",\"calls\":" + u64(s.cs.calls) + ",\"self_ns\":" + u64(s.cs.self_ns) +
           ",\"total_ns\":" + u64(s.cs.total_ns) + ",\"busy_ns\":" + u64(s.busy_ns) + "}";
  });
  list(out, "aot_images_not_seen", c.aot_images, [&](const std::string& n) { out += js(n); });
  out += "}";
}

void alloc(std::string& out, const AllocSection& a) {
  out += ",\"alloc\":{\"objects\":" + u64(a.objects) + ",\"bytes\":" + u64(a.bytes);
  if (a.sample_interval)
    out += ",\"estimated\":true,\"sample_interval\":" + u64(a.sample_interval) + ",\"samples\":" + u64(a.samples);
  list(out, "types", a.types, [&](const TypeStat& t) {
    out += "{\"name\":" + js(t.name) + ",\"objects\":" + u64(t.count) + ",\"bytes\":" + u64(t.bytes) + "}";
  });
  list(out, "sites", a.sites, [&](const Site& s) {
    out += "{\"name\":" + js(s.name) + ",\"objects\":" + u64(s.count) + ",\"bytes\":" + u64(s.bytes) + "}";
  });
  out += "}";
}

void exceptions(std::string& out, const ExceptionSection& e) {
  out += ",\"exceptions\":{\"throws\":" + u64(e.throws) + ",\"clauses\":" + u64(e.clauses);
  list(out, "types", e.types,
       [&](const TypeStat& t) { out += "{\"name\":" + js(t.name) + ",\"throws\":" + u64(t.count) + "}"; });
  list(out, "sites", e.sites,
       [&](const Site& s) { out += "{\"name\":" + js(s.name) + ",\"throws\":" + u64(s.count) + "}"; });
  out += "}";
}

void monitor(std::string& out, const MonitorSection& m) {
  out += ",\"monitor\":{\"contentions\":" + u64(m.contentions) + ",\"acquired\":" + u64(m.acquired) +
         ",\"failed\":" + u64(m.failed) + ",\"wait_ns\":" + u64(m.wait_ns);
  list(out, "sites", m.sites,
       [&](const Site& s) { out += "{\"name\":" + js(s.name) + ",\"contentions\":" + u64(s.count) + "}"; });
  out += "}";
}

void gc(std::string& out, const GcSection& g) {
  out += ",\"gc\":{\"collections\":" + u64(g.collections);
  list(out, "generations", g.generations, [&](uint64_t c) { out += u64(c); });
  out += ",\"resizes\":" + u64(g.resizes) + ",\"pauses\":{\"count\":" + u64(g.pauses) + ",\"total_ns\":" +
         u64(g.total_ns) + ",\"p50_ns\":" + u64(g.p50_ns) + ",\"p99_ns\":" + u64(g.p99_ns) + ",\"max_ns\":" +
         u64(g.max_ns) + "}}";
}

void jit(std::string& out, const JitSection& j) {
  out += ",\"jit\":{\"methods\":" + u64(j.methods) + ",\"code_bytes\":" + u64(j.code_bytes) + ",\"helpers\":" +
         u64(j.helpers);
  list(out, "largest", j.largest, [&](const MethodLine& r) {
    out += "{\"name\":" + js(r.name) + ",\"code_bytes\":" + u64(r.s.jit_code_bytes) + "}";
  });
  out += "}";
}

void counters(std::string& out, const CountersSection& c) {
  out += ",\"counters\":{\"count\":" + u64(c.values.size());
  list(out, "values", c.values, [&](const CounterInfo& v) {
    out += "{\"name\":" + js(v.name) + ",\"value\":";
    if (v.is_string)
      out += js(v.last_string);
    else if (std::isfinite(v.last))
      out += fmt("%.17g", v.last);
    else
      out += "null";  // a NaN or infinite double: JSON has no spelling for it
    out += ",\"samples\":" + u64(v.samples) + "}";
  });
  out += "}";
}

void cpu_threads(std::string& out, const CpuThreadsSection& c) {
  out += fmt(",\"cpu_threads\":{\"process_user_s\":%.3f,\"process_system_s\":%.3f", c.process_user_s,
             c.process_system_s);
  list(out, "threads", c.threads, [&](const CpuThreadsSection::Thread& t) {
    out += "{\"name\":" + js(t.name) + fmt(",\"user_s\":%.3f,\"system_s\":%.3f}", t.user_s, t.system_s);
  });
  out += "}";
}

void heapshots(std::string& out, const HeapshotsSection& h) {
  out += ",\"heapshots\":{\"count\":" + u64(h.list.size());
  size_t i = 0;
  list(out, "list", h.list, [&](const HeapshotsSection::Shot& s) {
    out += "{\"name\":\"heapshot " + u64(i++) + "\",\"time_ns\":" + u64(s.time_ns) + ",\"objects\":" +
           u64(s.objects) + ",\"bytes\":" + u64(s.bytes) + ",\"complete\":" + (s.complete ? "true" : "false") + "}";
  });
  out += "}";
}

// The text's "Held by" rows, with what `mlpd heapshots --retained --json` says of each class.
void held_by(std::string& out, const HeldBySection& h) {
  out += ",\"held_by\":{\"index\":" + u64(h.index);
  if (!h.error.empty()) {
    out += ",\"error\":" + js(h.error) + "}";
    return;
  }
  out += ",\"objects\":" + u64(h.objects) + ",\"bytes\":" + u64(h.bytes) + ",\"unreached\":{\"objects\":" +
         u64(h.unreached_objects) + ",\"bytes\":" + u64(h.unreached_bytes) + "}";
  list(out, "classes", h.classes, [&](const HeldBySection::Class& c) {
    out += "{\"name\":" + js(c.name) + ",\"objects\":" + u64(c.objects) + ",\"shallow\":" + u64(c.shallow) +
           ",\"retained\":" + u64(c.retained) + ",\"root\":";
    out += c.has_root ? "{\"kind\":" + js(c.root_kind) + ",\"name\":" + js(c.root_name) + "}" : std::string("null");
    out += "}";
  });
  out += "}";
}

}  // namespace

std::string render_json(const Report& r) {
  std::string out;
  header(out, r.header);
  if (r.recorded) recorded(out, *r.recorded);
  if (r.cpu) cpu(out, *r.cpu);
  if (r.calls) calls(out, *r.calls);
  if (r.alloc) alloc(out, *r.alloc);
  if (r.exceptions) exceptions(out, *r.exceptions);
  if (r.monitor) monitor(out, *r.monitor);
  if (r.gc) gc(out, *r.gc);
  if (r.jit) jit(out, *r.jit);
  if (r.counters) counters(out, *r.counters);
  if (r.cpu_threads) cpu_threads(out, *r.cpu_threads);
  if (r.heapshots) heapshots(out, *r.heapshots);
  if (r.held_by) held_by(out, *r.held_by);
  out += "}\n";
  return out;
}

}  // namespace mlpd::views::report
