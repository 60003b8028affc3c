// `mlpd dump --json`: JSON Lines, one object per header, buffer, event and problem (see dump_format.h).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dump_walk.h"
#include "mlpd/enum_names.h"

namespace mlpd::cli {

namespace {

class JsonFormat final : public FormatBase {
 public:
  using FormatBase::FormatBase;

  void header(const FileHeader& h) {
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

  void buffer(const BufferInfo& b, int64_t rel_ns) {
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

  void problem(const Problem& p) {
    out_.put("{\"error\":{\"offset\":").dec(p.offset).put(",\"buffer\":");
    if (p.buffer < 0) {
      out_.put("null");
    } else {
      out_.sdec(p.buffer);
    }
    out_.put(",\"message\":").json(p.message).put("}}\n");
  }

  void begin(const Event& e, const EventInfo& info, int64_t rel_ns) {
    out_.put("{\"time\":");
    put_time(e.time);
    out_.put(",\"seconds\":").seconds(rel_ns, false);
    thread_text(info.buffer->header.thread_id).put_to(out_);
    kind_text(e.kind).put_to(out_);
    out_.put('"');
  }
  // A whole method_enter/leave/exc_leave line with one check for room; false (nothing written)
  // when a part is longer than 64 bytes, then the walk writes it field by field.
  bool method_line(const Event& e, const EventInfo& info, int64_t rel_ns) {
    const ShortText& thread = thread_text(info.buffer->header.thread_id);
    const MethodTexts& m = method_texts<JsonFormat>(e.method);
    if (thread.len > 64 || m.ref.len > 64) [[unlikely]]
      return false;
    char* const p = out_.room_for(512);
    char* q = p;
    std::memcpy(q, "{\"time\":", 8);
    q += 8;
    q += write_time(q, e.time);
    std::memcpy(q, ",\"seconds\":", 11);
    q += 11;
    q += OutBuffer::write_seconds(q, rel_ns, false);
    q = append(q, thread);
    q = append(q, kind_text(e.kind));
    *q++ = '"';
    q = append(q, m.ref);
    std::memcpy(q, ",\"buffer\":", 10);
    q += 10;
    q += OutBuffer::write_dec(q, info.buffer->index);
    std::memcpy(q, ",\"offset\":", 10);
    q += 10;
    q += OutBuffer::write_dec(q, info.offset);
    q[0] = '}';
    q[1] = '\n';
    out_.advance(static_cast<size_t>(q + 2 - p));
    return true;
  }
  const ShortText& thread_text(uint64_t tid) {
    if (!thread_cached(tid)) [[unlikely]]
      fill_thread_text(tid);
    return thread_text_;
  }
  [[gnu::noinline]] void fill_thread_text(uint64_t tid) {
    OutBuffer t(SIZE_MAX);
    t.put(",\"thread\":\"").hex(tid).put('"');
    if (const std::string* n = thread_name(tid)) t.put(",\"thread_name\":").json(*n);
    t.put(",\"kind\":\"");
    thread_text_.assign(t.view());
    set_thread_cached(tid);
  }

  // A method's name: a JSON string (an empty name too).
  static bool writes_name(const std::string&) { return true; }
  static void spell_name(OutBuffer& o, std::string_view n) { o.json(n); }
  static void spell_method_ref(OutBuffer& o, uint64_t m, const std::string* n) {
    o.put(",\"method\":\"").hex(m).put('"');
    if (n) o.put(",\"method_name\":").json(*n);
  }

  // "method":"0x1f","method_name":"NAME" (every caller's keys are these).
  void method_ref(std::string_view, uint64_t m, std::string_view) { method_texts<JsonFormat>(m).ref.put_to(out_); }
  void vtable(uint64_t v) {
    uint64_t klass = 0;
    const bool known = names_.vtable_class(v, klass);
    ref("vtable", v, known ? names_.class_name(klass) : nullptr, "class_name");
    if (known) extra("class", klass);
  }
  void enum_field(std::string_view key, std::string_view name, uint64_t v) {
    if (name.empty()) {
      num(key, v);
    } else {
      word(key, name);
    }
  }

  void end(const EventInfo& info) {
    out_.put(",\"buffer\":").dec(info.buffer->index).put(",\"offset\":").dec(info.offset).put("}\n");
  }

  void num(std::string_view key, uint64_t v) { key_(key).dec(v); }
  void word(std::string_view key, std::string_view v) { key_(key).put('"').put(v).put('"'); }
  void str(std::string_view key, std::string_view v) { key_(key).json(v); }
  void ref(std::string_view key, uint64_t v, const std::string* name, std::string_view name_key) {
    key_(key).put('"').hex(v).put('"');
    if (name) key_(name_key).json(*name);
  }
  void extra(std::string_view key, uint64_t v) { key_(key).put('"').hex(v).put('"'); }

  // "key":[{"method":"0x1f","name":"..."},...]
  void methods(std::string_view key, const std::vector<uint64_t>& ms) {
    key_(key).put('[');
    for (size_t i = 0; i < ms.size(); ++i) {
      out_.put(i ? ",{\"method\":\"" : "{\"method\":\"").hex(ms[i]).put('"');
      if (const MethodTexts& t = method_texts<JsonFormat>(ms[i]); t.known) t.name.put_to(out_.put(",\"name\":"));
      out_.put('}');
    }
    out_.put(']');
  }
  // "ips":[{"ip":"0x..","method":"0x..","name":"..."} | {"ip":"0x..","symbol":"..."}]
  void ips(const std::vector<uint64_t>& v) {
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
  void moves(const std::vector<uint64_t>& objs) {
    out_.put(",\"moves\":[");
    for (size_t i = 0; i + 1 < objs.size(); i += 2) {
      out_.put(i ? ",[\"" : "[\"").hex(objs[i]).put("\",\"").hex(objs[i + 1]).put("\"]");
    }
    out_.put(']');
  }
  void heap_refs(const std::vector<HeapRef>& refs) {
    out_.put(",\"refs\":[");
    for (size_t i = 0; i < refs.size(); ++i) {
      out_.put(i ? ",{\"offset\":" : "{\"offset\":").dec(refs[i].offset).put(",\"obj\":\"").hex(refs[i].obj);
      out_.put("\"}");
    }
    out_.put(']');
  }
  void roots(const std::vector<RootRef>& rs) {
    out_.put(",\"roots\":[");
    for (size_t i = 0; i < rs.size(); ++i) {
      out_.put(i ? ",{\"address\":\"" : "{\"address\":\"").hex(rs[i].address).put("\",\"obj\":\"");
      out_.hex(rs[i].obj).put("\"}");
    }
    out_.put(']');
  }
  // Enum-like descriptor fields are names, or "0x..." strings for values without a name.
  void counter_descs(const std::vector<CounterDesc>& ds) {
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
  void counter_values(const std::vector<CounterValue>& vs) {
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

}  // namespace

std::unique_ptr<BufferFormatter> make_json_formatter(OutBuffer& out, Names& names) {
  return std::make_unique<Walk<JsonFormat>>(out, names);
}

}  // namespace mlpd::cli
