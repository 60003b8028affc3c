// `mlpd dump` as text: one line per header, buffer, event and problem (see dump_format.h).
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

class TextFormat final : public FormatBase {
 public:
  using FormatBase::FormatBase;

  void header(const FileHeader& h) {
    out_.put("header version=").dec(h.major).put('.').dec(h.minor).put(" data_version=").dec(h.data_version);
    out_.put(" ptr_size=").dec(h.ptr_size).put(" startup_ms=").dec(h.startup_ms);
    const std::string iso = iso8601_utc(h.startup_ms);
    if (!iso.empty()) out_.put(" (").put(iso).put(')');
    out_.put(" startup_ns=").dec(h.startup_ns).put(" timer_overhead=").sdec(h.timer_overhead);
    out_.put(" flags=").sdec(h.flags).put(" pid=").sdec(h.pid).put(" port=").dec(h.port);
    out_.put(" args=").text(h.args, true).put(" arch=").text(h.arch, true).put(" os=").text(h.os, true);
    out_.put('\n');
  }

  void buffer(const BufferInfo& b, int64_t rel_ns) {
    const BufferHeader& h = b.header;
    out_.put("buffer ").dec(b.index).put(" offset=").dec(b.offset).put(" thread=").hex(h.thread_id);
    if (const std::string* n = thread_name(h.thread_id)) out_.put(' ').text(*n, true);
    out_.put(" time_base=").dec(h.time_base).put(" (").seconds(rel_ns, true).put(')');
    out_.put(" ptr_base=").hex(static_cast<uint64_t>(h.ptr_base));
    out_.put(" obj_base=").hex(static_cast<uint64_t>(h.obj_base));
    out_.put(" method_base=").hex(static_cast<uint64_t>(h.method_base));
    out_.put(" length=").dec(h.length).put('\n');
  }

  void problem(const Problem& p) {
    out_.put("offset ").dec(p.offset);
    if (p.buffer < 0) {
      out_.put(" (header): ");
    } else {
      out_.put(" (buffer ").sdec(p.buffer).put("): ");
    }
    out_.text(p.message, false).put('\n');
  }

  // TIME +SECONDS THREAD ["NAME"] KIND: the thread part is cached (it changes with the names only).
  void begin(const Event& e, const EventInfo& info, int64_t rel_ns) {
    put_time(e.time);
    out_.put(' ').seconds(rel_ns, true);
    thread_text(info.buffer->header.thread_id).put_to(out_);
    kind_text(e.kind).put_to(out_);
  }
  // A whole method_enter/leave/exc_leave line with one check for room; false (nothing written)
  // when a part is longer than 64 bytes, then the walk writes it field by field.
  bool method_line(const Event& e, const EventInfo& info, int64_t rel_ns) {
    const ShortText& thread = thread_text(info.buffer->header.thread_id);
    const MethodTexts& m = method_texts<TextFormat>(e.method);
    if (thread.len > 64 || m.ref.len > 64) [[unlikely]]
      return false;
    char* const p = out_.room_for(256);  // 20 + 1 + 32 + 3 * 64 + 1
    char* q = p + write_time(p, e.time);
    *q++ = ' ';
    q += OutBuffer::write_seconds(q, rel_ns, true);
    q = append(q, thread);
    q = append(q, kind_text(e.kind));
    q = append(q, m.ref);
    *q++ = '\n';
    out_.advance(static_cast<size_t>(q - p));
    return true;
  }
  const ShortText& thread_text(uint64_t tid) {
    if (!thread_cached(tid)) [[unlikely]]
      fill_thread_text(tid);
    return thread_text_;
  }
  [[gnu::noinline]] void fill_thread_text(uint64_t tid) {
    OutBuffer t(SIZE_MAX);
    t.put(' ').hex(tid);
    if (const std::string* n = thread_name(tid)) t.put(' ').text(*n, true);
    t.put(' ');
    thread_text_.assign(t.view());
    set_thread_cached(tid);
  }
  void end(const EventInfo&) { out_.put('\n'); }

  // The name a method reference or a backtrace frame shows: escaped, unquoted; empty names are not shown.
  static bool writes_name(const std::string& n) { return !n.empty(); }
  static void spell_name(OutBuffer& o, std::string_view n) { o.text(n, false); }
  static void spell_method_ref(OutBuffer& o, uint64_t m, const std::string* n) {
    o.put(" method=").hex(m);
    if (n) o.put(' ').text(*n, false);
  }

  // method=0x1f NAME (every caller's key is "method").
  void method_ref(std::string_view, uint64_t m, std::string_view) { method_texts<TextFormat>(m).ref.put_to(out_); }
  void vtable(uint64_t v) {
    uint64_t klass = 0;
    const bool known = names_.vtable_class(v, klass);
    ref("vtable", v, known ? names_.class_name(klass) : nullptr, {});
  }
  void enum_field(std::string_view key, std::string_view name, uint64_t v) {
    if (name.empty()) {
      num(key, v);
    } else {
      word(key, name);
    }
  }

  void num(std::string_view key, uint64_t v) { out_.put(' ').put(key).put('=').dec(v); }
  void word(std::string_view key, std::string_view v) { out_.put(' ').put(key).put('=').put(v); }
  void str(std::string_view key, std::string_view v) { out_.put(' ').put(key).put('=').text(v, true); }
  void ref(std::string_view key, uint64_t v, const std::string* name, std::string_view) {
    out_.put(' ').put(key).put('=').hex(v);
    if (name && !name->empty()) out_.put(' ').text(*name, false);
  }
  void extra(std::string_view, uint64_t) {}

  // key=[NAME | 0x1f | ...]: the method's name when known, else its pointer.
  void methods(std::string_view key, const std::vector<uint64_t>& ms) {
    out_.put(' ').put(key).put("=[");
    for (size_t i = 0; i < ms.size(); ++i) {
      if (i) out_.put(" | ");
      method_or_hex(ms[i]);
    }
    out_.put(']');
  }
  // ips=[0x7f12 NAME | ...]: the JIT-compiled method or the unmanaged symbol containing the IP.
  void ips(const std::vector<uint64_t>& v) {
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
  void moves(const std::vector<uint64_t>& objs) {
    out_.put(" moves=").dec(objs.size() / 2);
    for (size_t i = 0; i + 1 < objs.size(); i += 2) out_.put(' ').hex(objs[i]).put("->").hex(objs[i + 1]);
  }
  void heap_refs(const std::vector<HeapRef>& refs) {
    out_.put(" refs=").dec(refs.size());
    for (const HeapRef& r : refs) out_.put(" +").dec(r.offset).put('=').hex(r.obj);
  }
  void roots(const std::vector<RootRef>& rs) {
    out_.put(" roots=").dec(rs.size());
    for (const RootRef& r : rs) out_.put(' ').hex(r.address).put("->").hex(r.obj);
  }
  void counter_descs(const std::vector<CounterDesc>& ds) {
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
  void counter_values(const std::vector<CounterValue>& vs) {
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
    if (const MethodTexts& t = method_texts<TextFormat>(m); t.known) {
      t.name.put_to(out_);
    } else {
      out_.hex(m);
    }
  }
};

}  // namespace

std::unique_ptr<BufferFormatter> make_text_formatter(OutBuffer& out, Names& names) {
  return std::make_unique<Walk<TextFormat>>(out, names);
}

}  // namespace mlpd::cli
