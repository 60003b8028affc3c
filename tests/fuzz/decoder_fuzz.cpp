// libFuzzer target for the reader: the input is a whole (plain or gzip) mlpd file. It is decoded with
// Input::from_memory + decode(); the visitor reads every field of every header, buffer and event (so
// a field left uninitialised or a string pointing at freed memory shows up under ASan/UBSan) and
// runs ReferenceChecker (`verify --strict`) on each event. It also checks the reader's promises on
// untrusted input: every problem has a one-line, non-empty message and an offset inside the
// (uncompressed) stream that was actually read, and decoding consumes no more than was read.
// And each decoded event must survive a round trip through writer/'s BufferEncoder and a fresh
// BufferDecoder unchanged: this catches fields left over from an earlier event (the decoder reuses
// one Event) and any value the decoder accepts but the format cannot express.
// And decode_counting() (verify's parallel decoding) reports exactly what decode() does, and `mlpd
// dump` on three threads writes exactly what it writes on one (text and JSON).
// Any violation aborts, which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dump_format.h"
#include "mlpd/checks.h"
#include "mlpd/decode_loop.h"
#include "mlpd/decoder.h"
#include "mlpd/encoder.h"
#include "mlpd/input.h"

namespace {

[[noreturn]] void violated(const char* what, const mlpd::Problem* p = nullptr) {
  if (p) {
    std::fprintf(stderr, "decoder_fuzz: %s (problem at offset %llu, buffer %lld: %s)\n", what,
                 static_cast<unsigned long long>(p->offset), static_cast<long long>(p->buffer),
                 p->message.c_str());
  } else {
    std::fprintf(stderr, "decoder_fuzz: %s\n", what);
  }
  std::abort();
}

// Folds a value into the sink so the compiler cannot drop the reads.
struct Sink {
  uint64_t h = 0;
  void add(uint64_t v) { h = (h ^ v) * 0x100000001b3ull; }
  void add(const std::string& s) {
    add(s.size());
    for (unsigned char c : s) add(c);
  }
  template <class T>
  void add_all(const std::vector<T>& v) {
    add(v.size());
    for (const T& x : v) add(x);
  }
};

class TouchingVisitor final : public mlpd::Visitor {
 public:
  explicit TouchingVisitor(const mlpd::Input& in) : in_(in) {}

  void on_header(const mlpd::FileHeader& h) override {
    if (header_seen_) violated("on_header called twice");
    header_seen_ = true;
    sink.add(h.major);
    sink.add(h.minor);
    sink.add(h.data_version);
    sink.add(h.ptr_size);
    sink.add(h.startup_ms);
    sink.add(h.startup_ns);
    sink.add(static_cast<uint64_t>(h.timer_overhead));
    sink.add(static_cast<uint64_t>(h.flags));
    sink.add(static_cast<uint64_t>(h.pid));
    sink.add(h.port);
    sink.add(h.args);
    sink.add(h.arch);
    sink.add(h.os);
  }

  void on_buffer(const mlpd::BufferInfo& b) override {
    if (!header_seen_) violated("buffer before the header");
    if (b.index != buffers_) violated("buffer index out of sequence");
    ++buffers_;
    in_buffer_ = true;
    if (b.offset + 48 + b.header.length > in_.offset()) violated("buffer reaches past what was read");
    sink.add(b.offset);
    sink.add(b.header.length);
    sink.add(b.header.time_base);
    sink.add(static_cast<uint64_t>(b.header.ptr_base));
    sink.add(static_cast<uint64_t>(b.header.obj_base));
    sink.add(b.header.thread_id);
    sink.add(static_cast<uint64_t>(b.header.method_base));
  }

  void on_event(const mlpd::Event& e, const mlpd::EventInfo& info) override {
    if (!in_buffer_ || !info.buffer) violated("event outside a buffer");
    const uint64_t data_start = info.buffer->offset + 48;
    if (info.offset < data_start || info.offset >= data_start + info.buffer->header.length)
      violated("event offset outside its buffer");
    sink.add(static_cast<uint64_t>(e.kind));
    sink.add(mlpd::event_kind_name(e.kind).size());
    sink.add(e.time);
    sink.add(e.has_backtrace);
    sink.add(e.ptr);
    sink.add(e.ptr2);
    sink.add(e.ptr3);
    sink.add(e.obj);
    sink.add(e.method);
    sink.add(e.size);
    sink.add(e.handle_type);
    sink.add(e.handle);
    sink.add(e.index);
    sink.add(e.code);
    sink.add(e.generation);
    sink.add(e.name);
    sink.add(e.mvid);
    sink.add_all(e.backtrace);
    sink.add_all(e.objects);
    sink.add(e.refs.size());
    for (const mlpd::HeapRef& r : e.refs) {
      sink.add(r.offset);
      sink.add(r.obj);
    }
    sink.add(e.roots.size());
    for (const mlpd::RootRef& r : e.roots) {
      sink.add(r.address);
      sink.add(r.obj);
    }
    sink.add_all(e.ips);
    sink.add_all(e.frames);
    sink.add(e.counter_descs.size());
    for (const mlpd::CounterDesc& d : e.counter_descs) {
      sink.add(d.section);
      sink.add(d.section_name);
      sink.add(d.name);
      sink.add(d.type);
      sink.add(d.unit);
      sink.add(d.variance);
      sink.add(d.index);
    }
    sink.add(e.counter_values.size());
    for (const mlpd::CounterValue& v : e.counter_values) {
      sink.add(v.index);
      sink.add(v.type);
      sink.add(v.bits);
      sink.add(v.is_null);
      sink.add(v.str);
    }
    sink.add(checker_.check(e));
    roundtrip(e, info.buffer->header.thread_id);
    ++events_;
  }

  void on_buffer_end(const mlpd::BufferInfo& b) override {
    if (!in_buffer_ || b.index + 1 != buffers_) violated("unbalanced on_buffer_end");
    in_buffer_ = false;
  }

  void on_problem(const mlpd::Problem& p) override {
    ++problems_;
    if (p.message.empty()) violated("problem without a message", &p);
    if (p.message.find('\n') != std::string::npos) violated("problem message spans several lines", &p);
    if (p.buffer < -1) violated("problem with an invalid buffer index", &p);
    // An offset names a byte of the uncompressed stream that the reader has reached (or the end of it).
    if (p.offset > in_.offset()) violated("problem offset beyond the bytes read", &p);
    sink.add(p.offset);
    sink.add(p.message);
  }

  Sink sink;
  uint64_t buffers_ = 0;
  uint64_t events_ = 0;
  uint64_t problems_ = 0;

 private:
  void roundtrip(const mlpd::Event& e, uint64_t thread_id) {
    encoder_.reset(thread_id, e.time);
    encoder_.add(e);
    const mlpd::BufferHeader h = encoder_.header();
    encoded_.clear();
    encoder_.finish_into(encoded_);
    if (encoded_.size() != 48 + h.length) violated("encoder wrote an unexpected buffer size");
    mlpd::BufferDecoder dec(h, encoded_.data() + 48, 0);
    mlpd::Event back;
    std::string problem;
    uint64_t at = 0;
    if (!dec.next(back, problem, at)) {
      std::fprintf(stderr, "decoder_fuzz: %s: %s\n", std::string(mlpd::event_kind_name(e.kind)).c_str(),
                   problem.c_str());
      violated("a decoded event, encoded again, does not decode");
    }
    if (!(back == e)) {
      std::fprintf(stderr, "decoder_fuzz: %s event differs after a round trip\n",
                   std::string(mlpd::event_kind_name(e.kind)).c_str());
      violated("decoded event carries fields its encoding does not (stale or impossible values)");
    }
    if (dec.next(back, problem, at) || !problem.empty()) violated("round trip produced a second event");
  }

  const mlpd::Input& in_;
  bool header_seen_ = false;
  bool in_buffer_ = false;
  mlpd::ReferenceChecker checker_;
  mlpd::BufferEncoder encoder_{0, 0};
  std::vector<uint8_t> encoded_;
};

volatile uint64_t g_sink;

}  // namespace

// decode_counting() (verify's parallel path) must report what decode() reports, in the same order.
class CallLog final : public mlpd::Visitor {
 public:
  std::string log;
  mlpd::EventCounts counts{};
  void on_buffer(const mlpd::BufferInfo& b) override { log += "b" + std::to_string(b.offset) + ";"; }
  void on_event(const mlpd::Event& e, const mlpd::EventInfo&) override { ++counts[static_cast<size_t>(e.kind)]; }
  void on_buffer_end(const mlpd::BufferInfo& b) override { log += "e" + std::to_string(b.index) + ";"; }
  void on_problem(const mlpd::Problem& p) override { log += "p" + std::to_string(p.offset) + p.message + ";"; }
  void on_warning(const mlpd::Problem& p) override { log += "w" + std::to_string(p.offset) + p.message + ";"; }
};

void check_counting(const uint8_t* data, size_t size) {
  CallLog seq, par;
  mlpd::EventCounts counts{};
  std::unique_ptr<mlpd::Input> a = mlpd::Input::from_memory(data, size);
  const mlpd::DecodeSummary s1 = mlpd::decode(*a, seq);
  std::unique_ptr<mlpd::Input> b = mlpd::Input::from_memory(data, size);
  const mlpd::DecodeSummary s2 = mlpd::decode_counting(*b, par, {}, counts, 2);
  if (seq.log != par.log) violated("decode_counting reported other calls than decode");
  if (counts != seq.counts) violated("decode_counting counted other events than decode");
  if (s1.buffers != s2.buffers || s1.events != s2.events || s1.bytes != s2.bytes || s1.problems != s2.problems)
    violated("decode_counting's summary differs from decode's");
}

// `mlpd dump` (text and JSON): its workers, which format buffers ahead of the reader and stop where
// file order is needed or their block is full (here 200 bytes, so that most buffers are finished in
// file order), write exactly what one thread writes, with the same number of problems.
void check_dump(const uint8_t* data, size_t size) {
  for (const bool json : {false, true}) {
    mlpd::cli::OutBuffer one(SIZE_MAX), three(SIZE_MAX);
    std::unique_ptr<mlpd::Input> a = mlpd::Input::from_memory(data, size);
    const uint64_t p1 = mlpd::cli::dump_file(*a, one, json, {}, 1);
    std::unique_ptr<mlpd::Input> b = mlpd::Input::from_memory(data, size);
    const uint64_t p3 = mlpd::cli::dump_file(*b, three, json, {}, 3, 200);
    if (one.overflowed() || three.overflowed()) violated("dump output overflowed its memory block");
    if (one.view() != three.view()) violated(json ? "dump --json on 3 threads differs from 1 thread" : "dump on 3 threads differs from 1 thread");
    if (p1 != p3) violated("dump on 3 threads counts other problems than on 1 thread");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_counting(data, size);
  check_dump(data, size);
  std::unique_ptr<mlpd::Input> in = mlpd::Input::from_memory(data, size);
  TouchingVisitor visitor(*in);
  const mlpd::DecodeSummary s = mlpd::decode(*in, visitor);
  if (s.buffers != visitor.buffers_ || s.events != visitor.events_ || s.problems != visitor.problems_)
    violated("summary disagrees with the visitor");
  if (s.bytes != in->offset()) violated("summary byte count disagrees with the input offset");
  if (!in->compressed() && s.bytes > size) violated("consumed more bytes than the input has");
  if (!s.header_ok && s.problems == 0) violated("bad header without a problem");
  g_sink = visitor.sink.h;
  return 0;
}
