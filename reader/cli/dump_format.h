// The output formats of `mlpd dump`. The event walk (Walk<F>, dump_walk.h) is shared; a format F
// spells lines and fields: TextFormat (dump_text.cpp) one line per record, JsonFormat (dump_json.cpp)
// JSON Lines. Field kinds:
//   num   an integer                      text: key=N            json: "key":N
//   word  an enum value's name            text: key=word         json: "key":"word"
//   str   free text from the file         text: key="text"       json: "key":"text"
//   ref   a pointer/object/method/id,     text: key=0x1f NAME    json: "key":"0x1f","NAME_KEY":"NAME"
//         with its name when known
//   extra a pointer only JSON carries (e.g. the class behind a vtable)
// The formats are plain classes (no virtual call per field): the walk is a template over them, and
// what the command driver (cmd_dump.cpp) sees is a BufferFormatter, one virtual call per buffer.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mlpd/buffer_pipeline.h"
#include "mlpd/decoder.h"
#include "mlpd/enum_names.h"
#include "mlpd/format.h"
#include "mlpd/names.h"
#include "out_buffer.h"

namespace mlpd::cli {

// Kinds whose formatting reads or changes state beyond the names known before the buffer: the
// descriptions Names::observe records, counter samples (running totals) and sample hits (an ip
// lookup that is not safe to share between threads). A worker formatting a buffer ahead of the
// reader stops before the first of these; the driver formats the rest in file order.
inline bool needs_file_order(EventKind k) {
  // What names things (Names::observes), and the events named by what came before them.
  return Names::observes(k) || k == EventKind::counter_samples || k == EventKind::sample_hit;
}

// How one buffer's events are to be formatted (BufferFormatter::events).
struct RunOptions {
  uint64_t skip = 0;  // decode the first `skip` events without writing them (done by a worker)
  // In file order (the driver): names are observed (the formatter's Names is mutable), and the memory
  // budget is checked every 4096 events of the buffer (as decode() does) through `driver`.
  BufferPipeline* driver = nullptr;
  // Ahead of the reader (a worker; driver == nullptr): stop before the first event that needs_file_order,
  // or when the output passes its limit (OutBuffer overflowed: that event is not written).
  uint64_t names_version = 0;  // changes whenever the names have changed since an earlier run
};

struct RunResult {
  enum Stop { kEnd, kFileOrder, kFull, kBudget };
  Stop stop = kEnd;
  uint64_t events = 0;          // events decoded (and written past `skip`) before the stop
  std::string message;          // kEnd: the problem that ended the buffer's events, if any
  uint64_t problem_offset = 0;  // and its offset
  bool observed = false;        // in file order: the names changed
};

// Text of up to 64 bytes kept in a block of 64 (OutBuffer::put64 copies it with no call); longer in `big`.
struct ShortText {
  char data[64] = {};
  size_t len = 0;
  std::string big;
  void assign(std::string_view s) {
    len = s.size();
    if (len <= sizeof data) {
      if (len) std::memcpy(data, s.data(), len);  // an empty view's data() may be null
      big.clear();
    } else {
      big.assign(s);
    }
  }
  void put_to(OutBuffer& o) const {
    if (len <= sizeof data) {
      o.put64(data, len);
    } else {
      o.put(big);
    }
  }
};

// One formatter per thread: the driver's writes the output stream, each worker's a memory block.
class BufferFormatter {
 public:
  virtual ~BufferFormatter() = default;
  virtual void header(const FileHeader& h) = 0;
  virtual void buffer(const BufferInfo& b, int64_t rel_ns) = 0;
  virtual void problem(const Problem& p) = 0;
  virtual void events(const BufferInfo& b, const uint8_t* data, uint64_t start_ns, const RunOptions& o,
                      RunResult& r) = 0;
};

// Dumps `in` to `out` (text or JSON Lines) and returns the number of problems: on this thread when
// `threads` < 2, else with `threads` workers formatting buffers ahead of the reader, each writing at
// most `job_text` bytes per buffer (dump_drivers.cpp). The output is the same bytes either way.
inline constexpr size_t kDumpJobText = 4u << 20;
uint64_t dump_file(Input& in, OutBuffer& out, bool json, const DecodeOptions& opt, unsigned threads,
                   size_t job_text = kDumpJobText);

// `names` is observed (changed) only by a formatter used in file order.
std::unique_ptr<BufferFormatter> make_text_formatter(OutBuffer& out, Names& names);
std::unique_ptr<BufferFormatter> make_json_formatter(OutBuffer& out, Names& names);

// What the formats share: the output, the names, the counters' running totals and small caches of
// the text a format writes for a method or a thread (valid until the names change: names_changed()).
class FormatBase {
 public:
  FormatBase(OutBuffer& out, const Names& names) : out_(out), names_(names) {}

  void names_changed() {
    if (++gen_ == 0) {  // wrapped: forget everything
      for (Cached& c : methods_) c.gen = 0;
      thread_gen_ = 0;
      gen_ = 1;
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

  // What format F writes for a method (F::spell_name: its name, escaped text or a JSON string;
  // F::spell_method_ref: the whole `method` field of an enter/leave, pointer and name), cached by
  // method (`known`: the method has a name F writes). Names longer than kMaxCached bytes are spelled
  // into scratch_ every time (a hostile file's long names do not stay in the cache).
  struct MethodTexts {
    ShortText name;
    ShortText ref;
    bool known = false;
  };
  struct Cached {
    uint64_t key = 0;
    uint32_t gen = 0;  // 0: empty
    MethodTexts texts;
  };

  template <class F>
  const MethodTexts& method_texts(uint64_t m) {
    Cached& c = methods_[((m >> 3) ^ (m >> 17)) & (kMethodSlots - 1)];
    if (c.key == m && c.gen == gen_) [[likely]]
      return c.texts;
    return fill_method_texts<F>(c, m);
  }
  template <class F>
  [[gnu::noinline]] const MethodTexts& fill_method_texts(Cached& c, uint64_t m) {
    const std::string* n = names_.method_name(m);
    MethodTexts& t = n && n->size() > kMaxCached ? scratch_ : c.texts;
    if (&t == &c.texts) {
      c.key = m;
      c.gen = gen_;
    }
    t.known = n && F::writes_name(*n);
    scratch_out_.clear();
    if (t.known) F::spell_name(scratch_out_, *n);
    t.name.assign(scratch_out_.view());
    scratch_out_.clear();
    F::spell_method_ref(scratch_out_, m, t.known ? n : nullptr);
    t.ref.assign(scratch_out_.view());
    return t;
  }
  // Event times: the digits above the last eight change rarely, and are kept.
  void put_time(uint64_t t) { out_.advance(write_time(out_.room_for(64), t)); }
  // The same at p (64 bytes of room); returns how many bytes.
  size_t write_time(char* p, uint64_t t) {
    if (t < 100000000u) return OutBuffer::write_dec(p, t);
    const uint64_t hi = t / 100000000u;
    if (hi != time_hi_ || time_hi_text_.len == 0) {
      time_hi_ = hi;
      time_hi_text_.len = OutBuffer::write_dec(time_hi_text_.data, hi);
    }
    std::memcpy(p, time_hi_text_.data, 16);  // at most 12 digits
    OutBuffer::write_8digits(p + time_hi_text_.len, static_cast<uint32_t>(t % 100000000u));
    return time_hi_text_.len + 8;
  }
  // Appends a ShortText of at most 64 bytes at p (64 bytes of room); returns the end.
  static char* append(char* p, const ShortText& t) {
    std::memcpy(p, t.data, 64);
    return p + t.len;
  }
  // An event kind's name, padded for put64.
  static const ShortText& kind_text(EventKind k) {
    static const std::array<ShortText, kEventKindCount> names = [] {
      std::array<ShortText, kEventKindCount> a;
      for (size_t i = 0; i < kEventKindCount; ++i) a[i].assign(event_kind_name(static_cast<EventKind>(i)));
      return a;
    }();
    return names[static_cast<size_t>(k)];
  }
  // True when `tid` is the thread whose text thread_text_ holds (set it with thread_cached()).
  bool thread_cached(uint64_t tid) const { return thread_tid_ == tid && thread_gen_ == gen_; }
  void set_thread_cached(uint64_t tid) {
    thread_tid_ = tid;
    thread_gen_ = gen_;
  }

  static constexpr size_t kMethodSlots = 4096;
  static constexpr size_t kMaxCached = 512;

  OutBuffer& out_;
  const Names& names_;
  std::unordered_map<uint64_t, uint64_t> counter_totals_;
  ShortText thread_text_;  // what the format writes for thread thread_tid_

 private:
  std::vector<Cached> methods_ = std::vector<Cached>(kMethodSlots);
  uint32_t gen_ = 1;
  uint64_t thread_tid_ = 0;
  uint32_t thread_gen_ = 0;
  OutBuffer scratch_out_{SIZE_MAX};
  MethodTexts scratch_;
  uint64_t time_hi_ = 0;
  ShortText time_hi_text_;
};

}  // namespace mlpd::cli
