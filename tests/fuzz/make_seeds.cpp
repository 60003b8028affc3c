// Writes the seed corpus of decoder_fuzz: a few small, valid mlpd files built with writer/'s
// BufferEncoder that together use every v17 event kind (and the backtrace variants, every counter
// value type, negative time deltas, NULL first objects/methods), plain and gzip-compressed (also a
// two-member gzip file). Usage: make_seeds OUTDIR
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/event.h"
#include "mlpd/format.h"

namespace {

using namespace mlpd;
using namespace mlpd::format;

Event ev(EventKind k, uint64_t time) {
  Event e;
  e.reset(k);
  e.time = time;
  return e;
}

FileHeader header() {
  FileHeader h;
  h.startup_ms = 1700000000000ull;
  h.startup_ns = 5000000;
  h.timer_overhead = 42;
  h.pid = 1234;
  h.port = 40000;
  h.args = "log:calls,alloc,exception,output=x.mlpd";
  h.arch = "x86-64";
  h.os = "linux";
  return h;
}

constexpr uint64_t kImage = 0x7f0000001000, kClass = 0x7f0000002000, kVtable = 0x7f0000003000;
constexpr uint64_t kMethod = 0x7f0000004000, kMethod2 = 0x7f0000004100, kDomain = 0x55000010;
constexpr uint64_t kObj = 0x7f1000000010, kThread = 0x7f2000000700;

// Metadata a reader needs before anything references it (keeps ReferenceChecker quiet).
void metadata(BufferEncoder& b, uint64_t& t) {
  Event e = ev(EventKind::domain_load, t += 10);
  e.ptr = kDomain;
  b.add(e);
  e = ev(EventKind::domain_name, t += 10);
  e.ptr = kDomain;
  e.name = "seed.exe";
  b.add(e);
  e = ev(EventKind::context_load, t += 10);
  e.ptr = 1;
  e.ptr2 = kDomain;
  b.add(e);
  e = ev(EventKind::thread_start, t += 10);
  e.ptr = kThread;
  b.add(e);
  e = ev(EventKind::thread_name, t += 10);
  e.ptr = kThread;
  e.name = "Main";
  b.add(e);
  e = ev(EventKind::image_load, t += 10);
  e.ptr = kImage;
  e.name = "/tmp/seed.exe";
  e.mvid = "3F2504E0-4F89-11D3-9A0C-0305E82C3301";
  b.add(e);
  e = ev(EventKind::assembly_load, t += 10);
  e.ptr = 0x7f0000000800;
  e.ptr2 = kImage;
  e.name = "seed, Version=0.0.0.0, Culture=neutral, PublicKeyToken=null";
  b.add(e);
  e = ev(EventKind::class_load, t += 10);
  e.ptr = kClass;
  e.ptr2 = kImage;
  e.name = "Node";
  b.add(e);
  e = ev(EventKind::vtable_load, t += 10);
  e.ptr = kVtable;
  e.ptr2 = kDomain;
  e.ptr3 = kClass;
  b.add(e);
  for (uint64_t m : {kMethod, kMethod2}) {
    e = ev(EventKind::method_jit, t += 10);
    e.method = m;
    e.ptr = 0x40001000 + (m & 0xfff);
    e.size = 96;
    e.name = m == kMethod ? "Program:Main (string[])" : "Program:Fib (int)";
    b.add(e);
  }
}

void calls_and_allocs(BufferEncoder& b, uint64_t& t) {
  Event e;
  for (int i = 0; i < 3; ++i) {
    e = ev(EventKind::method_enter, t += 7);
    e.method = i % 2 ? kMethod2 : kMethod;
    b.add(e);
    e = ev(EventKind::alloc, t += 3);
    e.ptr = kVtable;
    e.obj = kObj + 32 * static_cast<uint64_t>(i);
    e.size = 32;
    e.has_backtrace = i == 1;
    if (e.has_backtrace) e.backtrace = {kMethod, kMethod2};
    b.add(e);
    e = ev(i == 2 ? EventKind::method_exc_leave : EventKind::method_leave, t += 5);
    e.method = i % 2 ? kMethod2 : kMethod;
    b.add(e);
  }
  e = ev(EventKind::exception_throw, t += 4);
  e.obj = kObj + 0x100;
  b.add(e);
  e = ev(EventKind::exception_throw, t += 4);
  e.obj = kObj + 0x108;
  e.has_backtrace = true;
  e.backtrace = {kMethod, kMethod2, kMethod2};
  b.add(e);
  for (uint8_t clause : {CLAUSE_CATCH, CLAUSE_FILTER, CLAUSE_FINALLY, CLAUSE_FAULT}) {
    e = ev(EventKind::exception_clause, t += 2);
    e.code = clause;
    e.index = clause;
    e.method = kMethod2;
    e.obj = clause >= CLAUSE_FINALLY ? 0 : kObj + 0x100;
    b.add(e);
  }
  for (uint8_t m : {MONITOR_CONTENTION, MONITOR_DONE, MONITOR_FAIL}) {
    e = ev(EventKind::monitor, t += 2);
    e.code = m;
    e.obj = kObj + 0x200;
    e.has_backtrace = m == MONITOR_FAIL;
    if (e.has_backtrace) e.backtrace = {kMethod};
    b.add(e);
  }
}

void gc(BufferEncoder& b, uint64_t& t) {
  Event e;
  for (uint8_t code : {GC_EVENT_PRE_STOP_WORLD, GC_EVENT_POST_STOP_WORLD, GC_EVENT_START, GC_EVENT_END,
                       GC_EVENT_PRE_START_WORLD, GC_EVENT_POST_START_WORLD}) {
    e = ev(EventKind::gc_event, t += 1);
    e.code = code;
    e.generation = 1;
    b.add(e);
  }
  e = ev(EventKind::gc_resize, t += 1);
  e.size = 16u << 20;
  b.add(e);
  e = ev(EventKind::gc_move, t += 1);
  e.objects = {kObj, kObj + 0x1000, kObj + 0x20, kObj + 0x1020};
  b.add(e);
  for (uint64_t type = 0; type <= kMaxGcHandleType; ++type) {
    e = ev(EventKind::gc_handle_created, t += 1);
    e.handle_type = type;
    e.handle = 0x100 + type;
    e.obj = kObj;
    e.has_backtrace = type == 3;
    if (e.has_backtrace) e.backtrace = {kMethod};
    b.add(e);
    e = ev(EventKind::gc_handle_destroyed, t += 1);
    e.handle_type = type;
    e.handle = 0x100 + type;
    e.has_backtrace = type == 2;
    if (e.has_backtrace) e.backtrace = {kMethod2};
    b.add(e);
  }
  b.add(ev(EventKind::gc_finalize_start, t += 1));
  e = ev(EventKind::gc_finalize_object_start, t += 1);
  e.obj = kObj + 0x40;
  b.add(e);
  e = ev(EventKind::gc_finalize_object_end, t += 1);
  e.obj = kObj + 0x40;
  b.add(e);
  b.add(ev(EventKind::gc_finalize_end, t += 1));
  e = ev(EventKind::sync_point, t += 1);
  e.code = SYNC_POINT_WORLD_STOP;
  b.add(e);
}

void heapshot(BufferEncoder& b, uint64_t& t) {
  Event e;
  e = ev(EventKind::heap_root_register, t += 1);
  e.ptr = 0x7f3000000000;
  e.size = 64;
  e.code = 3;
  e.ptr2 = 0;
  e.name = "static fields";
  b.add(e);
  b.add(ev(EventKind::heap_start, t += 1));
  e = ev(EventKind::heap_object, t += 1);
  e.obj = kObj;
  e.ptr = kVtable;
  e.size = 32;
  e.generation = 1;
  e.refs = {{16, kObj + 0x20}, {24, kObj + 0x40}};
  b.add(e);
  e = ev(EventKind::heap_object, t += 1);
  e.obj = kObj + 0x20;
  e.ptr = kVtable;
  e.size = 24;
  b.add(e);
  e = ev(EventKind::heap_root, t += 1);
  e.roots = {{0x7f3000000008, kObj}, {0x7f3000000010, kObj + 0x20}};
  b.add(e);
  b.add(ev(EventKind::heap_end, t += 1));
  e = ev(EventKind::heap_root_unregister, t += 1);
  e.ptr = 0x7f3000000000;
  b.add(e);
}

void sampling_and_counters(BufferEncoder& b, uint64_t& t) {
  Event e;
  e = ev(EventKind::sample_usym, t += 1);
  e.ptr = 0x401000;
  e.size = 0;
  e.name = "__libc_start_main";
  b.add(e);
  e = ev(EventKind::sample_hit, t - 500);  // sample hits carry the signal time: a negative delta
  e.ptr = kThread;
  e.ips = {0x40001010};
  e.frames = {kMethod2, kMethod};
  b.add(e);
  e = ev(EventKind::counter_descriptors, t += 1);
  CounterDesc d;
  d.section = COUNTER_SECTION_PROFILER;
  d.name = "Methods JITted";
  d.type = COUNTER_LONG;
  d.unit = COUNTER_UNIT_COUNT;
  d.variance = COUNTER_VARIANCE_MONOTONIC;
  d.index = 1;
  e.counter_descs.push_back(d);
  d.section = COUNTER_SECTION_PERFCOUNTERS;
  d.section_name = "Process";
  d.name = "Private Bytes";
  d.type = COUNTER_DOUBLE;
  d.unit = COUNTER_UNIT_BYTES;
  d.variance = 0;
  d.index = 2;
  e.counter_descs.push_back(d);
  b.add(e);
  e = ev(EventKind::counter_samples, t += 1);
  const uint64_t types[] = {COUNTER_INT,    COUNTER_UINT,   COUNTER_WORD,   COUNTER_LONG,
                            COUNTER_ULONG,  COUNTER_DOUBLE, COUNTER_STRING, COUNTER_TIME_INTERVAL};
  uint64_t index = 1;
  for (uint64_t type : types) {
    CounterValue v;
    v.index = index++;
    v.type = type;
    v.bits = type == COUNTER_DOUBLE ? 0x4059000000000000ull : type == COUNTER_INT ? ~uint64_t{4} : 300;
    if (type == COUNTER_STRING) {
      v.bits = 0;
      v.str = "value";
    }
    e.counter_values.push_back(v);
  }
  CounterValue null_string;
  null_string.index = index;
  null_string.type = COUNTER_STRING;
  null_string.is_null = true;
  e.counter_values.push_back(null_string);
  b.add(e);
  for (uint8_t code = 0; code <= kMaxCodeBufferType; code += 5) {  // 0, 5 (named)
    e = ev(EventKind::jit_helper, t += 1);
    e.code = code;
    e.ptr = 0x40100000 + code;
    e.size = 48;
    if (code == CODE_BUFFER_SPECIFIC_TRAMPOLINE) e.name = "generic_trampoline_jit";
    b.add(e);
  }
  e = ev(EventKind::aot_id, t += 1);
  e.name = "c6e3a3c1-0b62-4b54-a2b0-3f1d2b1c9a44";
  b.add(e);
}

void teardown(BufferEncoder& b, uint64_t& t) {
  Event e = ev(EventKind::thread_end, t += 1);
  e.ptr = kThread;
  b.add(e);
  e = ev(EventKind::context_unload, t += 1);
  e.ptr = 1;
  e.ptr2 = kDomain;
  b.add(e);
  e = ev(EventKind::assembly_unload, t += 1);
  e.ptr = 0x7f0000000800;
  e.ptr2 = kImage;
  e.name = "seed";
  b.add(e);
  e = ev(EventKind::image_unload, t += 1);
  e.ptr = kImage;
  e.name = "/tmp/seed.exe";
  b.add(e);
  e = ev(EventKind::domain_unload, t += 1);
  e.ptr = kDomain;
  b.add(e);
}

using Fill = void (*)(BufferEncoder&, uint64_t&);

// A file: the header, then one buffer per step (each on its own thread id).
std::vector<uint8_t> file(std::initializer_list<Fill> steps) {
  std::vector<uint8_t> out;
  encode_file_header(header(), out);
  uint64_t t = 1000000;
  uint64_t thread = kThread;
  for (Fill step : steps) {
    BufferEncoder b(thread++, t);
    step(b, t);
    if (!b.empty()) b.finish_into(out);
  }
  return out;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::vector<uint8_t> out(deflateBound(&zs, in.size()) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::vector<uint8_t>{};
}

bool write(const std::string& dir, const char* name, const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) {
    std::fprintf(stderr, "make_seeds: nothing to write for %s\n", name);
    return false;
  }
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    return false;
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return (std::fclose(f) == 0) && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const auto all = file({metadata, calls_and_allocs, gc, heapshot, sampling_and_counters, teardown});
  const auto calls = file({metadata, calls_and_allocs});
  const auto heap = file({metadata, gc, heapshot});
  const auto counters = file({sampling_and_counters});
  const auto header_only = file({});
  std::vector<uint8_t> two_members = gzip(calls);
  // A second gzip member holding a second file's bytes: a header in the middle is invalid, so take
  // only its buffer (after the header) to keep the whole stream valid.
  {
    const auto t = file({teardown});
    std::vector<uint8_t> header_bytes;
    encode_file_header(header(), header_bytes);
    const auto member = gzip(std::vector<uint8_t>(t.begin() + static_cast<long>(header_bytes.size()), t.end()));
    two_members.insert(two_members.end(), member.begin(), member.end());
  }
  bool ok = true;
  ok &= write(dir, "all_kinds.mlpd", all);
  ok &= write(dir, "all_kinds.mlpd.gz", gzip(all));
  ok &= write(dir, "calls.mlpd", calls);
  ok &= write(dir, "heap.mlpd", heap);
  ok &= write(dir, "heap.mlpd.gz", gzip(heap));
  ok &= write(dir, "counters.mlpd", counters);
  ok &= write(dir, "header_only.mlpd", header_only);
  ok &= write(dir, "two_members.mlpd.gz", two_members);
  return ok ? 0 : 1;
}
