// mlpd dump [--json] FILE
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "commands.h"
#include "mlpd/budget.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/names.h"
#include "args.h"
#include "out_buffer.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd dump [--json] FILE\n"
    "\n"
    "Prints everything in FILE (plain or gzip; - reads standard input): the file header, one line per\n"
    "buffer header and one line per event, in file order. Pointers, objects and methods are printed\n"
    "in hex, followed by their name once an earlier event of the file has described them (method_jit,\n"
    "class_load, vtable_load, image_load, assembly_load, domain_name, thread_name); Mono files contain\n"
    "forward references, which stay bare pointers. Event lines start with the absolute time in ns,\n"
    "the time in seconds relative to the first buffer's time_base (what mprof-report calls startup),\n"
    "and the buffer's thread id (with its name once a thread_name event has named it):\n"
    "  TIME +SECONDS THREAD [\"THREAD NAME\"] KIND FIELD=VALUE...\n"
    "Backtraces are listed outermost frame first, sample frames innermost first (file order).\n"
    "Problems are printed where they occur, as in 'mlpd verify':\n"
    "  offset N (buffer K): what is wrong\n"
    "Exit status: 0 when the file is valid, 1 when a problem was found or FILE cannot be read,\n"
    "2 for bad usage.\n"
    "\n"
    "  --json  JSON Lines instead: {\"header\":{...}}, then {\"buffer\":{...}} per buffer,\n"
    "          {\"time\",\"seconds\",\"thread\",\"kind\",FIELDS...,\"buffer\",\"offset\"} per event and\n"
    "          {\"error\":{\"offset\",\"buffer\",\"message\"}} per problem. Pointers are strings \"0x...\"\n"
    "          (exact in JavaScript); names go in *_name fields when known.\n";

// ---- enum names ------------------------------------------------------------------------------

std::string_view gc_event_name(uint8_t e) {
  switch (e) {
    case format::GC_EVENT_START: return "start";
    case format::GC_EVENT_END: return "end";
    case format::GC_EVENT_PRE_STOP_WORLD: return "pre_stop_world";
    case format::GC_EVENT_POST_STOP_WORLD: return "post_stop_world";
    case format::GC_EVENT_PRE_START_WORLD: return "pre_start_world";
    case format::GC_EVENT_POST_START_WORLD: return "post_start_world";
    case format::GC_EVENT_PRE_STOP_WORLD_LOCKED: return "pre_stop_world_locked";
    case format::GC_EVENT_POST_START_WORLD_UNLOCKED: return "post_start_world_unlocked";
    default: return {};
  }
}

std::string_view handle_type_name(uint64_t t) {
  static constexpr std::string_view k[] = {"weak", "weak_track", "normal", "pinned"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view clause_name(uint8_t c) {
  switch (c) {
    case format::CLAUSE_CATCH: return "catch";
    case format::CLAUSE_FILTER: return "filter";
    case format::CLAUSE_FINALLY: return "finally";
    case format::CLAUSE_FAULT: return "fault";
    default: return {};
  }
}

std::string_view monitor_event_name(uint8_t e) {
  switch (e) {
    case format::MONITOR_CONTENTION: return "contention";
    case format::MONITOR_DONE: return "done";
    case format::MONITOR_FAIL: return "fail";
    default: return {};
  }
}

std::string_view root_source_name(uint8_t s) {
  static constexpr std::string_view k[] = {
      "external", "stack",    "finalizer_queue", "static",  "thread_static", "context_static",
      "gc_handle", "jit",     "threading",       "domain",  "reflection",    "marshal",
      "thread_pool", "debugger", "handle",       "ephemeron", "toggleref"};
  return s < std::size(k) ? k[s] : std::string_view{};
}

std::string_view code_buffer_name(uint8_t t) {
  static constexpr std::string_view k[] = {
      "method",      "method_trampoline", "unbox_trampoline", "imt_trampoline",  "generics_trampoline",
      "specific_trampoline", "helper",    "monitor",          "delegate_invoke", "exception_handling"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view sync_point_name(uint8_t t) {
  static constexpr std::string_view k[] = {"periodic", "world_stop", "world_start"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view counter_type_name(uint64_t t) {
  static constexpr std::string_view k[] = {"int",  "uint",   "word",   "long",
                                           "ulong", "double", "string", "time_interval"};
  return t < std::size(k) ? k[t] : std::string_view{};
}

std::string_view counter_section_name(uint64_t s) {
  static constexpr std::string_view k[] = {"jit",     "gc",     "metadata",     "generics", "security",
                                           "runtime", "system", "perfcounters", "profiler", "interp"};
  for (unsigned i = 0; i < std::size(k); ++i)
    if (s == (uint64_t{1} << (8 + i))) return k[i];
  return {};
}

std::string_view counter_unit_name(uint64_t u) {
  static constexpr std::string_view k[] = {"raw", "bytes", "time", "count", "percentage"};
  for (unsigned i = 0; i < std::size(k); ++i)
    if (u == (uint64_t{i} << 24)) return k[i];
  return {};
}

std::string_view counter_variance_name(uint64_t v) {
  if (v == 0) return "none";
  if (v == format::COUNTER_VARIANCE_MONOTONIC) return "monotonic";
  if (v == format::COUNTER_VARIANCE_CONSTANT) return "constant";
  if (v == format::COUNTER_VARIANCE_VARIABLE) return "variable";
  return {};
}

bool counter_type_signed(uint64_t t) {
  return t == format::COUNTER_INT || t == format::COUNTER_WORD || t == format::COUNTER_LONG ||
         t == format::COUNTER_TIME_INTERVAL;
}

// "YYYY-MM-DDTHH:MM:SS.mmmZ" for milliseconds since the Unix epoch; empty when out of range.
std::string iso8601_utc(uint64_t ms) {
  constexpr uint64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z
  const uint64_t secs = ms / 1000;
  if (secs > kMaxSeconds) return {};
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return {};
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(ms % 1000));
  return buf;
}

// ---- output formats --------------------------------------------------------------------------
//
// The event walk (Dumper below) is shared; a Format spells lines and fields. Field kinds:
//   num   an integer                      text: key=N            json: "key":N
//   word  an enum value's name            text: key=word         json: "key":"word"
//   str   free text from the file         text: key="text"       json: "key":"text"
//   ref   a pointer/object/method/id,     text: key=0x1f NAME    json: "key":"0x1f","NAME_KEY":"NAME"
//         with its name when known
//   extra a pointer only JSON carries (e.g. the class behind a vtable)

class Format {
 public:
  Format(OutBuffer& out, const Names& names) : out_(out), names_(names) {}
  virtual ~Format() = default;

  virtual void header(const FileHeader& h) = 0;
  virtual void buffer(const BufferInfo& b, int64_t rel_ns) = 0;
  virtual void problem(const Problem& p) = 0;
  virtual void begin(const Event& e, const EventInfo& info, int64_t rel_ns) = 0;
  virtual void end(const EventInfo& info) = 0;

  virtual void num(std::string_view key, uint64_t v) = 0;
  virtual void word(std::string_view key, std::string_view v) = 0;
  virtual void str(std::string_view key, std::string_view v) = 0;
  virtual void ref(std::string_view key, uint64_t v, const std::string* name, std::string_view name_key) = 0;
  virtual void extra(std::string_view key, uint64_t v) = 0;

  virtual void methods(std::string_view key, const std::vector<uint64_t>& ms) = 0;
  virtual void ips(const std::vector<uint64_t>& ips) = 0;
  virtual void moves(const std::vector<uint64_t>& objs) = 0;
  virtual void heap_refs(const std::vector<HeapRef>& refs) = 0;
  virtual void roots(const std::vector<RootRef>& roots) = 0;
  virtual void counter_descs(const std::vector<CounterDesc>& ds) = 0;
  virtual void counter_values(const std::vector<CounterValue>& vs) = 0;

  // An enum field: its name, or the number when the value has no name.
  void enum_field(std::string_view key, std::string_view name, uint64_t v) {
    if (name.empty()) {
      num(key, v);
    } else {
      word(key, name);
    }
  }

 protected:
  const std::string* thread_name(uint64_t tid) const { return names_.thread_name(tid); }

  // The running value of an integer counter whose samples are deltas (every described counter but
  // doubles, strings and custom perf counters, which are absolute), as mprof-report adds them up:
  // int and uint in 32 bits. False when the value is not a delta or the counter is not described.
  bool counter_total(const CounterValue& v, uint64_t& total) {
    const CounterDesc* d = names_.counter(v.index);
    if (!d || d->section == format::COUNTER_SECTION_PERFCOUNTERS || v.type == format::COUNTER_DOUBLE ||
        v.type == format::COUNTER_STRING) {
      return false;
    }
    uint64_t& t = counter_totals_[v.index];
    t += v.bits;
    if (v.type == format::COUNTER_INT || v.type == format::COUNTER_UINT) t &= 0xFFFFFFFFu;
    total = t;
    return true;
  }

  OutBuffer& out_;
  const Names& names_;
  std::unordered_map<uint64_t, uint64_t> counter_totals_;
};

class TextFormat final : public Format {
 public:
  using Format::Format;

  void header(const FileHeader& h) override {
    out_.put("header version=").dec(h.major).put('.').dec(h.minor).put(" data_version=").dec(h.data_version);
    out_.put(" ptr_size=").dec(h.ptr_size).put(" startup_ms=").dec(h.startup_ms);
    const std::string iso = iso8601_utc(h.startup_ms);
    if (!iso.empty()) out_.put(" (").put(iso).put(')');
    out_.put(" startup_ns=").dec(h.startup_ns).put(" timer_overhead=").sdec(h.timer_overhead);
    out_.put(" flags=").sdec(h.flags).put(" pid=").sdec(h.pid).put(" port=").dec(h.port);
    out_.put(" args=").text(h.args, true).put(" arch=").text(h.arch, true).put(" os=").text(h.os, true);
    out_.put('\n');
  }

  void buffer(const BufferInfo& b, int64_t rel_ns) override {
    const BufferHeader& h = b.header;
    out_.put("buffer ").dec(b.index).put(" offset=").dec(b.offset).put(" thread=").hex(h.thread_id);
    if (const std::string* n = thread_name(h.thread_id)) out_.put(' ').text(*n, true);
    out_.put(" time_base=").dec(h.time_base).put(" (").seconds(rel_ns, true).put(')');
    out_.put(" ptr_base=").hex(static_cast<uint64_t>(h.ptr_base));
    out_.put(" obj_base=").hex(static_cast<uint64_t>(h.obj_base));
    out_.put(" method_base=").hex(static_cast<uint64_t>(h.method_base));
    out_.put(" length=").dec(h.length).put('\n');
  }

  void problem(const Problem& p) override {
    out_.put("offset ").dec(p.offset);
    if (p.buffer < 0) {
      out_.put(" (header): ");
    } else {
      out_.put(" (buffer ").sdec(p.buffer).put("): ");
    }
    out_.text(p.message, false).put('\n');
  }

  void begin(const Event& e, const EventInfo& info, int64_t rel_ns) override {
    const uint64_t tid = info.buffer->header.thread_id;
    out_.dec(e.time).put(' ').seconds(rel_ns, true).put(' ').hex(tid);
    if (const std::string* n = thread_name(tid)) out_.put(' ').text(*n, true);
    out_.put(' ').put(event_kind_name(e.kind));
  }
  void end(const EventInfo&) override { out_.put('\n'); }

  void num(std::string_view key, uint64_t v) override { out_.put(' ').put(key).put('=').dec(v); }
  void word(std::string_view key, std::string_view v) override { out_.put(' ').put(key).put('=').put(v); }
  void str(std::string_view key, std::string_view v) override { out_.put(' ').put(key).put('=').text(v, true); }
  void ref(std::string_view key, uint64_t v, const std::string* name, std::string_view) override {
    out_.put(' ').put(key).put('=').hex(v);
    if (name && !name->empty()) out_.put(' ').text(*name, false);
  }
  void extra(std::string_view, uint64_t) override {}

  // key=[NAME | 0x1f | ...]: the method's name when known, else its pointer.
  void methods(std::string_view key, const std::vector<uint64_t>& ms) override {
    out_.put(' ').put(key).put("=[");
    for (size_t i = 0; i < ms.size(); ++i) {
      if (i) out_.put(" | ");
      method_or_hex(ms[i]);
    }
    out_.put(']');
  }
  // ips=[0x7f12 NAME | ...]: the JIT-compiled method or the unmanaged symbol containing the IP.
  void ips(const std::vector<uint64_t>& v) override {
    out_.put(" ips=[");
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_.put(" | ");
      out_.hex(v[i]);
      if (const uint64_t m = names_.method_at(v[i])) {
        if (const std::string* n = names_.method_name(m)) out_.put(' ').text(*n, false);
      } else if (const std::string* s = names_.symbol_at(v[i])) {
        out_.put(' ').text(*s, false);
      }
    }
    out_.put(']');
  }
  void moves(const std::vector<uint64_t>& objs) override {
    out_.put(" moves=").dec(objs.size() / 2);
    for (size_t i = 0; i + 1 < objs.size(); i += 2) out_.put(' ').hex(objs[i]).put("->").hex(objs[i + 1]);
  }
  void heap_refs(const std::vector<HeapRef>& refs) override {
    out_.put(" refs=").dec(refs.size());
    for (const HeapRef& r : refs) out_.put(" +").dec(r.offset).put('=').hex(r.obj);
  }
  void roots(const std::vector<RootRef>& rs) override {
    out_.put(" roots=").dec(rs.size());
    for (const RootRef& r : rs) out_.put(' ').hex(r.address).put("->").hex(r.obj);
  }
  void counter_descs(const std::vector<CounterDesc>& ds) override {
    out_.put(" counters=").dec(ds.size());
    for (const CounterDesc& d : ds) {
      out_.put(" [index=").dec(d.index);
      flag_field("section", counter_section_name(d.section), d.section);
      if (d.section == format::COUNTER_SECTION_PERFCOUNTERS) str("category", d.section_name);
      str("name", d.name);
      enum_field("type", counter_type_name(d.type), d.type);
      flag_field("unit", counter_unit_name(d.unit), d.unit);
      flag_field("variance", counter_variance_name(d.variance), d.variance);
      out_.put(']');
    }
  }
  // values=N: INDEX (NAME) = VALUE [(total T)]; ...   (the value as the file has it: a delta for
  // integer counters, followed by the running total; absolute for double and string ones)
  void counter_values(const std::vector<CounterValue>& vs) override {
    out_.put(" values=").dec(vs.size());
    for (size_t i = 0; i < vs.size(); ++i) {
      const CounterValue& v = vs[i];
      out_.put(i ? "; " : ": ").dec(v.index);
      if (const CounterDesc* d = names_.counter(v.index)) out_.put(" (").text(d->name, false).put(')');
      out_.put(" = ");
      if (v.type == format::COUNTER_DOUBLE) {
        double d;
        std::memcpy(&d, &v.bits, sizeof d);
        out_.dbl(d);
      } else if (v.type == format::COUNTER_STRING) {
        if (v.is_null) {
          out_.put("null");
        } else {
          out_.text(v.str, true);
        }
      } else if (counter_type_signed(v.type)) {
        out_.sdec(static_cast<int64_t>(v.bits));
      } else {
        out_.dec(v.bits);
      }
      if (uint64_t total; counter_total(v, total)) {
        out_.put(" (total ");
        if (counter_type_signed(v.type)) {
          const bool narrow = v.type == format::COUNTER_INT;  // int: the low 32 bits, signed
          out_.sdec(narrow ? static_cast<int64_t>(static_cast<int32_t>(total)) : static_cast<int64_t>(total));
        } else {
          out_.dec(total);
        }
        out_.put(')');
      }
    }
  }

 private:
  // A flag-valued field: its name, or the raw flag value in hex.
  void flag_field(std::string_view key, std::string_view name, uint64_t v) {
    if (name.empty()) {
      out_.put(' ').put(key).put('=').hex(v);
    } else {
      word(key, name);
    }
  }
  void method_or_hex(uint64_t m) {
    const std::string* n = names_.method_name(m);
    if (n && !n->empty()) {
      out_.text(*n, false);
    } else {
      out_.hex(m);
    }
  }
};

class JsonFormat final : public Format {
 public:
  using Format::Format;

  void header(const FileHeader& h) override {
    out_.put("{\"header\":{\"major\":").dec(h.major).put(",\"minor\":").dec(h.minor);
    out_.put(",\"data_version\":").dec(h.data_version).put(",\"ptr_size\":").dec(h.ptr_size);
    out_.put(",\"startup_ms\":").dec(h.startup_ms).put(",\"startup\":");
    const std::string iso = iso8601_utc(h.startup_ms);
    if (iso.empty()) {
      out_.put("null");
    } else {
      out_.json(iso);
    }
    out_.put(",\"startup_ns\":").dec(h.startup_ns).put(",\"timer_overhead\":").sdec(h.timer_overhead);
    out_.put(",\"flags\":").sdec(h.flags).put(",\"pid\":").sdec(h.pid).put(",\"port\":").dec(h.port);
    out_.put(",\"args\":").json(h.args).put(",\"arch\":").json(h.arch).put(",\"os\":").json(h.os);
    out_.put("}}\n");
  }

  void buffer(const BufferInfo& b, int64_t rel_ns) override {
    const BufferHeader& h = b.header;
    out_.put("{\"buffer\":{\"index\":").dec(b.index).put(",\"offset\":").dec(b.offset);
    out_.put(",\"thread\":\"").hex(h.thread_id).put('"');
    if (const std::string* n = thread_name(h.thread_id)) out_.put(",\"thread_name\":").json(*n);
    out_.put(",\"time_base\":").dec(h.time_base).put(",\"seconds\":").seconds(rel_ns, false);
    out_.put(",\"ptr_base\":\"").hex(static_cast<uint64_t>(h.ptr_base));
    out_.put("\",\"obj_base\":\"").hex(static_cast<uint64_t>(h.obj_base));
    out_.put("\",\"method_base\":\"").hex(static_cast<uint64_t>(h.method_base));
    out_.put("\",\"length\":").dec(h.length).put("}}\n");
  }

  void problem(const Problem& p) override {
    out_.put("{\"error\":{\"offset\":").dec(p.offset).put(",\"buffer\":");
    if (p.buffer < 0) {
      out_.put("null");
    } else {
      out_.sdec(p.buffer);
    }
    out_.put(",\"message\":").json(p.message).put("}}\n");
  }

  void begin(const Event& e, const EventInfo& info, int64_t rel_ns) override {
    const uint64_t tid = info.buffer->header.thread_id;
    out_.put("{\"time\":").dec(e.time).put(",\"seconds\":").seconds(rel_ns, false);
    out_.put(",\"thread\":\"").hex(tid).put('"');
    if (const std::string* n = thread_name(tid)) out_.put(",\"thread_name\":").json(*n);
    out_.put(",\"kind\":\"").put(event_kind_name(e.kind)).put('"');
  }
  void end(const EventInfo& info) override {
    out_.put(",\"buffer\":").dec(info.buffer->index).put(",\"offset\":").dec(info.offset).put("}\n");
  }

  void num(std::string_view key, uint64_t v) override { key_(key).dec(v); }
  void word(std::string_view key, std::string_view v) override { key_(key).put('"').put(v).put('"'); }
  void str(std::string_view key, std::string_view v) override { key_(key).json(v); }
  void ref(std::string_view key, uint64_t v, const std::string* name, std::string_view name_key) override {
    key_(key).put('"').hex(v).put('"');
    if (name) key_(name_key).json(*name);
  }
  void extra(std::string_view key, uint64_t v) override { key_(key).put('"').hex(v).put('"'); }

  // "key":[{"method":"0x1f","name":"..."},...]
  void methods(std::string_view key, const std::vector<uint64_t>& ms) override {
    key_(key).put('[');
    for (size_t i = 0; i < ms.size(); ++i) {
      out_.put(i ? ",{\"method\":\"" : "{\"method\":\"").hex(ms[i]).put('"');
      if (const std::string* n = names_.method_name(ms[i])) out_.put(",\"name\":").json(*n);
      out_.put('}');
    }
    out_.put(']');
  }
  // "ips":[{"ip":"0x..","method":"0x..","name":"..."} | {"ip":"0x..","symbol":"..."}]
  void ips(const std::vector<uint64_t>& v) override {
    out_.put(",\"ips\":[");
    for (size_t i = 0; i < v.size(); ++i) {
      out_.put(i ? ",{\"ip\":\"" : "{\"ip\":\"").hex(v[i]).put('"');
      if (const uint64_t m = names_.method_at(v[i])) {
        out_.put(",\"method\":\"").hex(m).put('"');
        if (const std::string* n = names_.method_name(m)) out_.put(",\"name\":").json(*n);
      } else if (const std::string* s = names_.symbol_at(v[i])) {
        out_.put(",\"symbol\":").json(*s);
      }
      out_.put('}');
    }
    out_.put(']');
  }
  // "moves":[["0xold","0xnew"],...]
  void moves(const std::vector<uint64_t>& objs) override {
    out_.put(",\"moves\":[");
    for (size_t i = 0; i + 1 < objs.size(); i += 2) {
      out_.put(i ? ",[\"" : "[\"").hex(objs[i]).put("\",\"").hex(objs[i + 1]).put("\"]");
    }
    out_.put(']');
  }
  void heap_refs(const std::vector<HeapRef>& refs) override {
    out_.put(",\"refs\":[");
    for (size_t i = 0; i < refs.size(); ++i) {
      out_.put(i ? ",{\"offset\":" : "{\"offset\":").dec(refs[i].offset).put(",\"obj\":\"").hex(refs[i].obj);
      out_.put("\"}");
    }
    out_.put(']');
  }
  void roots(const std::vector<RootRef>& rs) override {
    out_.put(",\"roots\":[");
    for (size_t i = 0; i < rs.size(); ++i) {
      out_.put(i ? ",{\"address\":\"" : "{\"address\":\"").hex(rs[i].address).put("\",\"obj\":\"");
      out_.hex(rs[i].obj).put("\"}");
    }
    out_.put(']');
  }
  // Enum-like descriptor fields are names, or "0x..." strings for values without a name.
  void counter_descs(const std::vector<CounterDesc>& ds) override {
    out_.put(",\"counters\":[");
    for (size_t i = 0; i < ds.size(); ++i) {
      const CounterDesc& d = ds[i];
      out_.put(i ? ",{\"index\":" : "{\"index\":").dec(d.index);
      flag_field("section", counter_section_name(d.section), d.section);
      if (d.section == format::COUNTER_SECTION_PERFCOUNTERS) str("category", d.section_name);
      str("name", d.name);
      flag_field("type", counter_type_name(d.type), d.type);
      flag_field("unit", counter_unit_name(d.unit), d.unit);
      flag_field("variance", counter_variance_name(d.variance), d.variance);
      out_.put('}');
    }
    out_.put(']');
  }
  // "values":[{"index":1,"name":"...","type":"uint","value":N}]: integers as numbers, doubles as
  // numbers (null when not finite), strings as strings or null.
  void counter_values(const std::vector<CounterValue>& vs) override {
    out_.put(",\"values\":[");
    for (size_t i = 0; i < vs.size(); ++i) {
      const CounterValue& v = vs[i];
      out_.put(i ? ",{\"index\":" : "{\"index\":").dec(v.index);
      if (const CounterDesc* d = names_.counter(v.index)) str("name", d->name);
      flag_field("type", counter_type_name(v.type), v.type);
      out_.put(",\"value\":");
      if (v.type == format::COUNTER_DOUBLE) {
        double d;
        std::memcpy(&d, &v.bits, sizeof d);
        if (std::isfinite(d)) {
          out_.dbl(d);
        } else {
          out_.put("null");
        }
      } else if (v.type == format::COUNTER_STRING) {
        if (v.is_null) {
          out_.put("null");
        } else {
          out_.json(v.str);
        }
      } else if (counter_type_signed(v.type)) {
        out_.sdec(static_cast<int64_t>(v.bits));
      } else {
        out_.dec(v.bits);
      }
      if (uint64_t total; counter_total(v, total)) {
        out_.put(",\"total\":");
        if (counter_type_signed(v.type)) {
          const bool narrow = v.type == format::COUNTER_INT;
          out_.sdec(narrow ? static_cast<int64_t>(static_cast<int32_t>(total)) : static_cast<int64_t>(total));
        } else {
          out_.dec(total);
        }
      }
      out_.put('}');
    }
    out_.put(']');
  }

 private:
  OutBuffer& key_(std::string_view key) { return out_.put(",\"").put(key).put("\":"); }
  void flag_field(std::string_view key, std::string_view name, uint64_t v) {
    if (name.empty()) {
      key_(key).put('"').hex(v).put('"');
    } else {
      word(key, name);
    }
  }
};

// ---- the event walk --------------------------------------------------------------------------

class Dumper final : public Visitor {
 public:
  Dumper(OutBuffer& out, bool json) {
    if (json) {
      format_ = std::make_unique<JsonFormat>(out, names_);
    } else {
      format_ = std::make_unique<TextFormat>(out, names_);
    }
  }

  uint64_t problems = 0;

  void on_header(const FileHeader& h) override {
    format_->header(h);
  }

  void on_buffer(const BufferInfo& b) override {
    if (!have_start_) {
      have_start_ = true;
      start_ = b.header.time_base;
    }
    format_->buffer(b, rel(b.header.time_base));
  }

  void on_problem(const Problem& p) override {
    ++problems;
    format_->problem(p);
  }

  void on_event(const Event& e, const EventInfo& info) override {
    names_.observe(e);  // first, so that an event's own description names it on its line
    Format& f = *format_;
    f.begin(e, info, rel(e.time));
    switch (e.kind) {
      case EventKind::alloc:
        vtable(e.ptr);
        f.ref("obj", e.obj, nullptr, {});
        f.num("size", e.size);
        backtrace(e);
        break;
      case EventKind::gc_event:
        f.enum_field("event", gc_event_name(e.code), e.code);
        f.num("generation", e.generation);
        break;
      case EventKind::gc_resize:
        f.num("size", e.size);
        break;
      case EventKind::gc_move:
        f.moves(e.objects);
        break;
      case EventKind::gc_handle_created:
      case EventKind::gc_handle_destroyed:
        f.enum_field("handle_type", handle_type_name(e.handle_type), e.handle_type);
        f.num("handle", e.handle);
        if (e.kind == EventKind::gc_handle_created) f.ref("obj", e.obj, nullptr, {});
        backtrace(e);
        break;
      case EventKind::gc_finalize_start:
      case EventKind::gc_finalize_end:
      case EventKind::heap_start:
      case EventKind::heap_end:
        break;
      case EventKind::gc_finalize_object_start:
      case EventKind::gc_finalize_object_end:
        f.ref("obj", e.obj, nullptr, {});
        break;
      case EventKind::class_load:
        f.ref("class", e.ptr, &e.name, "name");
        f.ref("image", e.ptr2, names_.image_name(e.ptr2), "image_name");
        break;
      case EventKind::image_load:
        f.ref("image", e.ptr, &e.name, "name");
        f.str("mvid", e.mvid);
        break;
      case EventKind::image_unload:
        f.ref("image", e.ptr, &e.name, "name");
        break;
      case EventKind::assembly_load:
      case EventKind::assembly_unload:
        f.ref("image", e.ptr2, names_.image_name(e.ptr2), "image_name");
        f.ref("assembly", e.ptr, &e.name, "name");
        break;
      case EventKind::domain_load:
      case EventKind::domain_unload:
        f.ref("domain", e.ptr, names_.domain_name(e.ptr), "domain_name");
        break;
      case EventKind::domain_name:
        f.ref("domain", e.ptr, &e.name, "name");
        break;
      case EventKind::context_load:
      case EventKind::context_unload:
        f.ref("context", e.ptr, nullptr, {});
        f.ref("domain", e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        break;
      case EventKind::thread_start:
      case EventKind::thread_end:
        f.ref("tid", e.ptr, names_.thread_name(e.ptr), "tid_name");
        break;
      case EventKind::thread_name:
        f.ref("tid", e.ptr, &e.name, "name");
        break;
      case EventKind::vtable_load:
        f.ref("domain", e.ptr2, names_.domain_name(e.ptr2), "domain_name");
        f.ref("vtable", e.ptr, nullptr, {});
        f.ref("class", e.ptr3, names_.class_name(e.ptr3), "class_name");
        break;
      case EventKind::method_enter:
      case EventKind::method_leave:
      case EventKind::method_exc_leave:
        f.ref("method", e.method, names_.method_name(e.method), "method_name");
        break;
      case EventKind::method_jit:
        f.ref("code", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.ref("method", e.method, &e.name, "name");
        break;
      case EventKind::exception_throw:
        f.ref("obj", e.obj, nullptr, {});
        backtrace(e);
        break;
      case EventKind::exception_clause:
        f.enum_field("clause", clause_name(e.code), e.code);
        f.num("index", e.index);
        f.ref("obj", e.obj, nullptr, {});
        f.ref("method", e.method, names_.method_name(e.method), "method_name");
        break;
      case EventKind::monitor:
        f.enum_field("event", monitor_event_name(e.code), e.code);
        f.ref("obj", e.obj, nullptr, {});
        backtrace(e);
        break;
      case EventKind::heap_object:
        f.ref("obj", e.obj, nullptr, {});
        vtable(e.ptr);
        f.num("size", e.size);
        f.num("generation", e.generation);
        f.heap_refs(e.refs);
        break;
      case EventKind::heap_root:
        f.roots(e.roots);
        break;
      case EventKind::heap_root_register:
        f.ref("start", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.enum_field("source", root_source_name(e.code), e.code);
        f.ref("key", e.ptr2, nullptr, {});
        f.str("name", e.name);
        break;
      case EventKind::heap_root_unregister:
        f.ref("start", e.ptr, nullptr, {});
        break;
      case EventKind::sample_hit:
        f.ref("tid", e.ptr, names_.thread_name(e.ptr), "tid_name");
        f.ips(e.ips);
        f.methods("frames", e.frames);
        break;
      case EventKind::sample_usym:
        f.ref("address", e.ptr, nullptr, {});
        f.num("size", e.size);
        f.str("name", e.name);
        break;
      case EventKind::counter_descriptors:
        f.counter_descs(e.counter_descs);
        break;
      case EventKind::counter_samples:
        f.counter_values(e.counter_values);
        break;
      case EventKind::jit_helper:
        f.enum_field("type", code_buffer_name(e.code), e.code);
        f.ref("address", e.ptr, nullptr, {});
        f.num("size", e.size);
        if (e.code == format::CODE_BUFFER_SPECIFIC_TRAMPOLINE) f.str("name", e.name);
        break;
      case EventKind::sync_point:
        f.enum_field("type", sync_point_name(e.code), e.code);
        break;
      case EventKind::aot_id:
        f.str("id", e.name);
        break;
    }
    f.end(info);
  }

 private:
  int64_t rel(uint64_t t) const { return static_cast<int64_t>(t - start_); }

  // A vtable with the name of its class; JSON also gets the class pointer once it is known.
  void vtable(uint64_t v) {
    uint64_t klass = 0;
    const bool known = names_.vtable_class(v, klass);
    format_->ref("vtable", v, known ? names_.class_name(klass) : nullptr, "class_name");
    if (known) format_->extra("class", klass);
  }

  void backtrace(const Event& e) {
    if (e.has_backtrace) format_->methods("backtrace", e.backtrace);
  }

  Names names_;
  std::unique_ptr<Format> format_;
  bool have_start_ = false;
  uint64_t start_ = 0;
};

}  // namespace

int cmd_dump(int argc, char** argv) {
  bool json = false;
  std::vector<std::string> files;
  if (const int rc = parse_args(argc, argv, "dump", kHelp, {{"--json", &json}}, files); rc >= 0) return rc;
  if (files.size() > 1) {
    std::fprintf(stderr, "mlpd dump: only one FILE can be dumped at a time (try 'mlpd dump --help')\n");
    return 2;
  }
  std::string open_error;
  struct stat st {};
  if (files[0] != "-" && ::stat(files[0].c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), std::strerror(EISDIR));
    return 1;
  }
  std::unique_ptr<Input> input = Input::open(files[0], open_error);
  if (!input) {
    std::fprintf(stderr, "mlpd dump: cannot open '%s': %s\n", files[0].c_str(), open_error.c_str());
    return 1;
  }
  OutBuffer out(stdout);
  Dumper dumper(out, json);
  decode(*input, dumper, read_options());
  out.flush();
  if (std::fflush(stdout) != 0 || out.failed()) {
    std::fprintf(stderr, "mlpd dump: cannot write the output: %s\n", std::strerror(errno));
    return 1;
  }
  return dumper.problems ? 1 : 0;
}

}  // namespace mlpd::cli
