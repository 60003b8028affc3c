// The output formats of `mlpd dump`. The event walk (Dumper, cmd_dump.cpp) is shared; a Format
// spells lines and fields: dump_text.cpp one line per record, dump_json.cpp JSON Lines. Field kinds:
//   num   an integer                      text: key=N            json: "key":N
//   word  an enum value's name            text: key=word         json: "key":"word"
//   str   free text from the file         text: key="text"       json: "key":"text"
//   ref   a pointer/object/method/id,     text: key=0x1f NAME    json: "key":"0x1f","NAME_KEY":"NAME"
//         with its name when known
//   extra a pointer only JSON carries (e.g. the class behind a vtable)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/names.h"
#include "out_buffer.h"

namespace mlpd::cli {

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

std::unique_ptr<Format> make_text_format(OutBuffer& out, const Names& names);
std::unique_ptr<Format> make_json_format(OutBuffer& out, const Names& names);

}  // namespace mlpd::cli
