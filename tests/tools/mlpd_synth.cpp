// mlpd_synth: writes a synthetic but *consistent* mlpd file (format 3.0, data version 17) that
// contains every v17 event kind, and prints what Mono 6.8's readers must find in it.
//
//   mlpd_synth [--seed N] [--gzip] [--threads T] [--scale K] [--no-workarounds] OUT
//
// --threads: application threads (main + workers; the writer, helper, dumper and finalizer threads
// come on top); --scale: more steps, methods, heapshots; --gzip: gzip the whole file like `zip`;
// --no-workarounds: disable the Mono-reader workarounds below (only to demonstrate the quirks).
//
// stdout: one `NAME COUNT` line per event kind written (names of event.h, kinds with count > 0, in
// event.h order), then `total.KEY VALUE` lines with the totals mprof-report prints (see
// tests/programs/README.md) computed by replaying the file in file order the way mprof-report 6.8
// does (per-thread call stacks, heapshots per buffer thread, GC handle live counts in file order,
// sample IP resolution against JIT code ranges and USYM symbols at the end, counter accumulation).
// Keys shared with `LogCount.exe --detail` use the same names (detail.K <-> total.K).
//
// How the file is built (mirrors what Mono's log profiler does, FORMAT-NOTES sections 2-6):
//  * One global clock; every event gets a strictly later time, so times never go backwards within
//    a thread and every time delta is >= 1 (never a 0x00 byte, see the image-unload note below).
//  * Every thread has its own open BufferEncoder; buffers are written ("flushed") when they exceed a
//    random size limit, at periodic sync points (helper thread) and at GC world stops, so every
//    thread has several buffers and the threads' buffers interleave in the file.
//  * "Metadata before use", in file order:
//      - method_jit events are written into the writer thread's buffer, and the writer buffer is
//        flushed before any other buffer (exactly Mono's writer behaviour), so a JIT event always
//        precedes the buffers that reference the method;
//      - images/assemblies are defined by the main thread in its first buffer (flushed first);
//      - class_load/vtable_load are written by the thread that first needs them, right before the
//        first use; when a thread uses a class/vtable defined in another thread's still open
//        buffer, that buffer is flushed first.
//  * GC cycles follow FORMAT-NOTES 2.5 on one thread; heapshots (HEAP_START .. HEAP_END with all
//    HEAP_OBJECTs) are always written by the finalizer thread, so they are in ONE thread's buffers
//    as mprof-report needs, and heap references only point at objects of the same heapshot
//    (mprof-report --traces dereferences every reference target).
//
// Mono reader quirks this generator works around (each verified by experiment with Mono 6.8.0.105):
//  * mprof-report 6.8 reads an mvid string after *every* TYPE_IMAGE event (data version >= 16) but
//    image unload events carry none (FORMAT-NOTES 7.3): whatever follows an image_unload up to the
//    next NUL byte is swallowed. The image_unload is therefore immediately followed, in the same
//    buffer, by the aot_id event, and that buffer ends there: the aot_id event (event byte 0x1A, a
//    time delta >= 1, the GUID characters, NUL) contains no NUL before its terminating one, so
//    mprof-report swallows exactly that event -- which it ignores anyway -- and stays in sync,
//    while Mono.Profiler.Log and mlpd, which read image unloads correctly, see both events.
//  * mprof-report prints a non-null STRING counter value with `%s` applied to a char and crashes
//    in --verbose mode; Mono itself only ever writes null string counter values, so do we.
//  * mprof-report's heapshot report (--traces) crashes on references to objects that are not part
//    of the same heapshot; continuation chunks (size 0) must follow their object's first chunk.
// Also verified: both Mono readers accept a perfcounter-section (0x8000) counter descriptor and
// every counter type 0..7 in samples, jit_helper types 0..9, and NULL exception objects in clauses.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/event.h"
#include "mlpd/format.h"
#include "mlpd/leb128.h"

using namespace mlpd;
namespace fmt = mlpd::format;

namespace {

// ---------------------------------------------------------------------------------------------
// Small deterministic RNG (splitmix64), independent of the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x1234567) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(unsigned percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

 private:
  uint64_t s_;
};

uint64_t round8(uint64_t v) { return (v + 7) & ~uint64_t{7}; }

std::string guid_string(Rng& rng) {
  char buf[40];
  const uint64_t a = rng.next(), b = rng.next();
  std::snprintf(buf, sizeof buf, "%08" PRIX64 "-%04" PRIX64 "-%04" PRIX64 "-%04" PRIX64 "-%012" PRIX64,
                a >> 32, (a >> 16) & 0xFFFF, ((a & 0x0FFF) | 0x4000), ((b >> 48) & 0x3FFF) | 0x8000,
                b & uint64_t{0xFFFFFFFFFFFF});
  return buf;
}

Event make(EventKind k) {
  Event e;
  e.reset(k);
  return e;
}

// ---------------------------------------------------------------------------------------------
// Replays buffers in file order the way mprof-report 6.8 (and LogCount --detail) account for them.
struct Model {
  struct Th {
    std::vector<uint64_t> stack;
    int heapshot = -1;
    uint64_t roots = 0;  // root entries since the thread's last HEAP_END (mprof-report --traces)
  };
  struct HeapShot {
    uint64_t time = 0, objects = 0, bytes = 0, roots = 0;
    std::set<uint64_t> classes;
  };
  struct Handles {
    uint64_t created = 0, destroyed = 0, live = 0, max = 0;
  };
  struct Counter {
    CounterDesc desc;
    bool has = false;
    int32_t i32 = 0;
    uint32_t u32 = 0;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    double dbl = 0;
  };

  std::unordered_map<uint64_t, Th> threads;
  uint64_t calls = 0, unmatched = 0;
  uint64_t alloc_objects = 0, alloc_bytes = 0, throws = 0;
  std::array<uint64_t, 5> clauses{};
  std::vector<HeapShot> heapshots;
  uint64_t heap_root_entries = 0;
  std::array<Handles, 4> handles{};
  std::array<uint64_t, 4> monitor{};
  std::array<uint64_t, 3> gc_starts{};
  uint64_t gc_resizes = 0, gc_max_heap = 0, gc_move_objects = 0;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> jit;  // method -> (code, size)
  uint64_t jit_helpers = 0, jit_helpers_size = 0;
  std::unordered_map<uint64_t, uint64_t> vtable_class;
  std::vector<uint64_t> sample_ips;
  std::vector<uint64_t> usyms;
  uint64_t images = 0, assemblies = 0;
  std::map<uint64_t, Counter> counters;

  void pop(Th& th, uint64_t method) {
    if (!th.stack.empty() && th.stack.back() == method) {
      th.stack.pop_back();
      ++calls;
    } else {
      ++unmatched;
    }
  }

  void consume(uint64_t tid, const std::vector<Event>& events) {
    Th& th = threads[tid];
    for (const Event& e : events) {
      switch (e.kind) {
        case EventKind::method_enter:
          th.stack.push_back(e.method);
          break;
        case EventKind::method_leave:
        case EventKind::method_exc_leave:
          pop(th, e.method);
          break;
        case EventKind::method_jit:
          jit[e.method] = {e.ptr, e.size};
          break;
        case EventKind::alloc:
          ++alloc_objects;
          alloc_bytes += e.size;
          break;
        case EventKind::exception_throw:
          ++throws;
          break;
        case EventKind::exception_clause:
          if (e.code < clauses.size()) ++clauses[e.code];
          break;
        case EventKind::monitor:
          if (e.code < monitor.size()) ++monitor[e.code];
          break;
        case EventKind::gc_event:
          if (e.code == fmt::GC_EVENT_START && e.generation < 3) ++gc_starts[e.generation];
          break;
        case EventKind::gc_resize:
          ++gc_resizes;
          gc_max_heap = std::max(gc_max_heap, e.size);
          break;
        case EventKind::gc_move:
          gc_move_objects += e.objects.size() / 2;
          break;
        case EventKind::gc_handle_created: {
          Handles& h = handles[e.handle_type & 3];
          ++h.created;
          ++h.live;
          h.max = std::max(h.max, h.live);
          break;
        }
        case EventKind::gc_handle_destroyed: {
          Handles& h = handles[e.handle_type & 3];
          ++h.destroyed;
          --h.live;
          break;
        }
        case EventKind::vtable_load:
          vtable_class[e.ptr] = e.ptr3;
          break;
        case EventKind::image_load:
          ++images;
          break;
        case EventKind::assembly_load:
          ++assemblies;
          break;
        case EventKind::heap_start:
          th.heapshot = static_cast<int>(heapshots.size());
          heapshots.push_back({});
          heapshots.back().time = e.time;
          break;
        case EventKind::heap_object:
          if (th.heapshot >= 0 && e.size > 0) {
            HeapShot& hs = heapshots[th.heapshot];
            ++hs.objects;
            hs.bytes += e.size;
            hs.classes.insert(vtable_class[e.ptr]);
          }
          break;
        case EventKind::heap_root:
          th.roots += e.roots.size();
          heap_root_entries += e.roots.size();
          break;
        case EventKind::heap_end:
          if (th.heapshot >= 0) heapshots[th.heapshot].roots = th.roots;
          th.roots = 0;
          th.heapshot = -1;
          break;
        case EventKind::sample_hit:
          sample_ips.insert(sample_ips.end(), e.ips.begin(), e.ips.end());
          break;
        case EventKind::sample_usym:
          usyms.push_back(e.ptr);
          break;
        case EventKind::jit_helper:
          ++jit_helpers;
          jit_helpers_size += e.size;
          break;
        case EventKind::counter_descriptors:
          for (const CounterDesc& d : e.counter_descs) counters[d.index].desc = d;
          break;
        case EventKind::counter_samples:
          for (const CounterValue& v : e.counter_values) {
            auto it = counters.find(v.index);
            if (it == counters.end()) continue;
            Counter& c = it->second;
            c.has = true;
            switch (v.type) {
              case fmt::COUNTER_INT:
                c.i32 = static_cast<int32_t>(static_cast<uint32_t>(c.i32) + static_cast<uint32_t>(v.bits));
                break;
              case fmt::COUNTER_UINT:
                c.u32 = static_cast<uint32_t>(c.u32 + v.bits);
                break;
              case fmt::COUNTER_WORD:
              case fmt::COUNTER_LONG:
              case fmt::COUNTER_TIME_INTERVAL:
                c.i64 = static_cast<int64_t>(static_cast<uint64_t>(c.i64) + v.bits);
                break;
              case fmt::COUNTER_ULONG:
                c.u64 += v.bits;
                break;
              case fmt::COUNTER_DOUBLE: {
                double d;
                std::memcpy(&d, &v.bits, sizeof d);
                c.dbl = d;
                break;
              }
              default:
                break;
            }
          }
          break;
        default:
          break;
      }
    }
  }

  // At EOF mprof-report pops every frame left on a stack (flush_context), counting it as a call.
  void finish() {
    for (auto& [tid, th] : threads) {
      calls += th.stack.size();
      th.stack.clear();
    }
  }

  // mprof-report's sample attribution: JIT code range first, then the nearest USYM at or below the
  // IP within 4096 bytes, else unresolved (counted among the unmanaged hits).
  void sample_summary(uint64_t& managed, uint64_t& unmanaged, uint64_t& unresolved) const {
    std::vector<uint64_t> syms = usyms;
    std::sort(syms.begin(), syms.end());
    managed = unmanaged = unresolved = 0;
    for (uint64_t ip : sample_ips) {
      bool in_method = false;
      for (const auto& [m, cs] : jit) {
        if (cs.first && ip >= cs.first && ip < cs.first + cs.second) {
          in_method = true;
          break;
        }
      }
      if (in_method) {
        ++managed;
        continue;
      }
      ++unmanaged;
      auto it = std::upper_bound(syms.begin(), syms.end(), ip);
      if (it == syms.begin() || ip - *(it - 1) >= 4096) ++unresolved;
    }
  }

  // The value mprof-report prints for a counter (dump_counters_value), or "" when not printable.
  static std::string printed(const Counter& c) {
    char buf[64];
    switch (c.desc.type) {
      case fmt::COUNTER_INT:
        std::snprintf(buf, sizeof buf, "%d", c.i32);
        break;
      case fmt::COUNTER_UINT:
        std::snprintf(buf, sizeof buf, "%u", c.u32);
        break;
      case fmt::COUNTER_WORD:
      case fmt::COUNTER_LONG:
      case fmt::COUNTER_TIME_INTERVAL:
        if (c.desc.type == fmt::COUNTER_LONG && c.desc.unit == fmt::COUNTER_UNIT_TIME)
          std::snprintf(buf, sizeof buf, "%0.3fms", static_cast<double>(c.i64) / 10000.0);
        else if (c.desc.type == fmt::COUNTER_TIME_INTERVAL)
          std::snprintf(buf, sizeof buf, "%0.3fms", static_cast<double>(c.i64) / 1000.0);
        else
          std::snprintf(buf, sizeof buf, "%u", static_cast<unsigned>(c.i64));
        break;
      case fmt::COUNTER_ULONG:
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(c.u64));
        break;
      case fmt::COUNTER_DOUBLE:
        std::snprintf(buf, sizeof buf, "%f", c.dbl);
        break;
      default:
        return "";
    }
    return buf;
  }
};

// The 14 counter names mprof-report prints without --verbose (dump_counters).
const std::set<std::string> kReportedCounterNames = {
    "Methods from AOT", "Methods JITted using mono JIT", "Methods JITted using LLVM",
    "Total time spent JITting (sec)", "User Time", "System Time", "Total Time", "Working Set",
    "Private Bytes", "Virtual Bytes", "Page Faults", "CPU Load Average - 1min",
    "CPU Load Average - 5min", "CPU Load Average - 15min"};

// ---------------------------------------------------------------------------------------------
// Static material: images, classes, methods, symbols, counters.

struct ImageInfo {
  const char* file;
  const char* assembly;
  uint64_t domain;
};
const ImageInfo kImages[] = {
    {"/usr/lib/mono/4.5/mscorlib.dll",
     "mscorlib, Version=4.0.0.0, Culture=neutral, PublicKeyToken=b77a5c561934e089", 0},
    {"/tmp/synth/synth.exe", "synth, Version=1.0.0.0, Culture=neutral, PublicKeyToken=null", 0},
    {"/usr/lib/mono/gac/System/4.0.0.0__b77a5c561934e089/System.dll",
     "System, Version=4.0.0.0, Culture=neutral, PublicKeyToken=b77a5c561934e089", 0},
    {"/tmp/synth/Plugin.dll", "Plugin, Version=1.2.0.0, Culture=neutral, PublicKeyToken=null", 1},
};
constexpr size_t kPluginImage = 3;

struct ClassInfo {
  const char* name;
  size_t image;
  uint64_t size;   // instance size; arrays: header size
  uint64_t elem;   // element size for arrays, 0 otherwise
  bool finalizable;
};
const ClassInfo kClasses[] = {
    {"System.Object", 0, 16, 0, false},
    {"System.String", 0, 24, 2, false},
    {"System.Int32[]", 0, 32, 4, false},
    {"System.Byte[]", 0, 32, 1, false},
    {"System.Collections.Generic.List<System.Int32>", 0, 32, 0, false},
    {"System.Collections.Generic.Dictionary<System.String,System.Int32>", 0, 80, 0, false},
    {"System.InvalidOperationException", 0, 136, 0, false},
    {"System.WeakReference", 0, 24, 0, true},
    {"Synth.Node", 1, 32, 0, true},
    {"Synth.Pair", 1, 32, 0, false},
    {"Synth.Leaf", 1, 32, 0, false},
    {"Synth.Twig", 1, 24, 0, false},
    {"Synth.Node[]", 1, 32, 8, false},
    {"Synth.Cache/Entry", 1, 48, 0, true},
    {"System.Uri", 2, 72, 0, false},
    {"Plugin.Widget", kPluginImage, 40, 0, true},
    {"Plugin.Widget[]", kPluginImage, 32, 8, false},
};
constexpr size_t kClassCount = sizeof kClasses / sizeof kClasses[0];
constexpr size_t kObjectClass = 0;
constexpr size_t kExceptionClass = 6;
constexpr size_t kNodeArrayClass = 12;

const char* const kMethodNames[] = {
    "Synth.Program:Main (string[])",
    "Synth.Worker:Run ()",
    "Synth.Worker:Step (int)",
    "Synth.Tree:Insert (Synth.Node,int)",
    "Synth.Tree:Find (int)",
    "Synth.Node:.ctor (int)",
    "Synth.Pair:.ctor (object,object)",
    "Synth.Parser:ParseExpr (string,int&)",
    "Synth.Parser:ParseTerm (string,int&)",
    "Synth.Cache/Entry:Touch ()",
    "System.Collections.Generic.List`1<int>:Add (int)",
    "System.Collections.Generic.Dictionary`2<string, int>:TryGetValue (string,int&)",
    "System.String:Concat (string,string)",
    "System.Threading.Monitor:Enter (object,bool&)",
    "System.Linq.Enumerable:Sum (System.Collections.Generic.IEnumerable`1<int>)",
    "(wrapper managed-to-native) System.Object:__icall_wrapper_mono_gc_alloc_obj (intptr,intptr)",
    "Plugin.Widget:Render (int)",
    "Synth.Ex:Outer (int)",
    "Synth.Ex:Middle (int)",
    "Synth.Ex:Inner (int)",
    "Synth.Node:Finalize ()",
};
constexpr size_t kMainMethod = 0, kRunMethod = 1, kOuterMethod = 17, kMiddleMethod = 18,
                 kInnerMethod = 19, kFinalizeMethod = 20, kFirstCallable = 2,
                 kLastCallable = 16;  // ordinary methods entered by the call simulation

const char* const kSymbols[] = {"mono_gc_alloc_obj", "sgen_gc_collect", "mono_monitor_enter_v4",
                                "__memcpy_avx_unaligned", "pthread_cond_wait", "mono_jit_compile_method",
                                "g_hash_table_lookup", "sgen_scan_object"};

const char* const kTrampolineNames[] = {"generic_trampoline_jit", "rgctx_fetch_trampoline_mrgctx_3",
                                        "specific_trampoline_delegate", "generic_class_init_trampoline"};

struct CounterSpec {
  uint64_t section;
  const char* name;
  uint8_t type;
  uint64_t unit;
  uint64_t variance;
};
const CounterSpec kCounters[] = {
    {0x100, "Methods from AOT", fmt::COUNTER_INT, fmt::COUNTER_UNIT_COUNT, fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x100, "Methods JITted using mono JIT", fmt::COUNTER_INT, fmt::COUNTER_UNIT_COUNT,
     fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x100, "Total time spent JITting (sec)", fmt::COUNTER_DOUBLE, fmt::COUNTER_UNIT_TIME,
     fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x4000, "User Time", fmt::COUNTER_LONG, fmt::COUNTER_UNIT_TIME, fmt::COUNTER_VARIANCE_VARIABLE},
    {0x4000, "Working Set", fmt::COUNTER_LONG, fmt::COUNTER_UNIT_BYTES, fmt::COUNTER_VARIANCE_VARIABLE},
    {0x4000, "Page Faults", fmt::COUNTER_ULONG, fmt::COUNTER_UNIT_COUNT, fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x4000, "CPU Load Average - 1min", fmt::COUNTER_DOUBLE, fmt::COUNTER_UNIT_PERCENTAGE,
     fmt::COUNTER_VARIANCE_VARIABLE},
    {0x200, "Major GC time", fmt::COUNTER_TIME_INTERVAL, fmt::COUNTER_UNIT_TIME,
     fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x2000, "Thread pool work items", fmt::COUNTER_WORD, fmt::COUNTER_UNIT_COUNT,
     fmt::COUNTER_VARIANCE_VARIABLE},
    {0x400, "Last loaded assembly", fmt::COUNTER_STRING, fmt::COUNTER_UNIT_RAW,
     fmt::COUNTER_VARIANCE_CONSTANT},
    {0x800, "Inflated methods", fmt::COUNTER_INT, fmt::COUNTER_UNIT_COUNT, fmt::COUNTER_VARIANCE_MONOTONIC},
    {0x1000, "Security checks", fmt::COUNTER_UINT, fmt::COUNTER_UNIT_COUNT, fmt::COUNTER_VARIANCE_MONOTONIC},
    {fmt::COUNTER_SECTION_PROFILER, "Event: Sample hits", fmt::COUNTER_UINT, fmt::COUNTER_UNIT_COUNT,
     fmt::COUNTER_VARIANCE_MONOTONIC},
    {fmt::COUNTER_SECTION_PROFILER, "Log buffers allocated", fmt::COUNTER_UINT, fmt::COUNTER_UNIT_COUNT,
     fmt::COUNTER_VARIANCE_MONOTONIC},
};
constexpr size_t kCounterCount = sizeof kCounters / sizeof kCounters[0];

// ---------------------------------------------------------------------------------------------

enum class Role { app, writer, helper, dumper, finalizer };

struct Def {
  bool defined = false;
  size_t thread = 0;
  uint64_t gen = 0;
};

struct Thread {
  uint64_t tid = 0;
  std::string name;
  Role role = Role::app;
  std::optional<BufferEncoder> enc;
  std::vector<Event> pending;  // the open buffer's events, for the model
  uint64_t gen = 0;            // number of buffers flushed so far
  size_t limit = 0;            // flush when the open buffer grows beyond this
  int hold = 0;                // > 0: no automatic flush (keeps event groups in one buffer)
  bool alive = false;
  bool done = false;
  uint64_t start_step = 0, end_step = 0;
  std::vector<size_t> stack;  // method indices, outermost first
  uint64_t stack_root = 0;
  uint64_t tls_root = 0;
  struct Handle {
    uint64_t type, handle;
  };
  std::vector<Handle> handles;
};

struct Obj {
  uint64_t addr;
  size_t vtable;
  uint64_t size;
  uint8_t gen;
};

struct Method {
  uint64_t ptr = 0, code = 0, size = 0;
  std::string name;
  bool jitted = false;
};

struct VTable {
  uint64_t ptr;
  size_t cls;
  uint64_t domain;
  Def def;
};

class Synth {
 public:
  Synth(uint64_t seed, unsigned app_threads, unsigned scale, bool workarounds)
      : rng_(seed), seed_(seed), app_threads_(app_threads), scale_(scale), workarounds_(workarounds) {}

  void run();
  bool write(const char* path, bool gzip) const;
  void print_expected() const;

 private:
  // --- buffers ---
  uint64_t tick() {
    clock_ += 1 + rng_.below(20000);
    return clock_;
  }
  void emit(size_t t, Event e);
  void flush(size_t t);
  void flush_all();
  void need(size_t t, const Def& d) {
    if (d.defined && d.thread != t && threads_[d.thread].gen == d.gen && !threads_[d.thread].pending.empty())
      flush(d.thread);
  }
  Def here(size_t t) const { return Def{true, t, threads_[t].gen}; }

  // --- metadata ---
  void ensure_class(size_t t, size_t cls);
  size_t ensure_vtable(size_t t, size_t cls, uint64_t domain);
  void ensure_jit(size_t m);
  std::vector<uint64_t> backtrace(size_t t) const;

  // --- actions ---
  void start_thread(size_t t);
  void end_thread(size_t t);
  void enter(size_t t, size_t m);
  void leave(size_t t, EventKind kind = EventKind::method_leave);
  uint64_t alloc(size_t t, size_t cls, uint64_t domain, uint64_t elems);
  void monitor(size_t t);
  void handle_create(size_t t);
  void handle_destroy(size_t t);
  void throw_exception(size_t t);
  void jit_helper(size_t t);
  void gc(size_t t, uint8_t gen, bool heapshot);
  void finalize();
  void samples();
  void periodic_sync(bool final);
  void load_plugin_domain();
  void step(size_t t);
  // An ordinary method for the call simulation: the named ones or the generated ones (--scale).
  size_t callable() {
    const size_t named = sizeof kMethodNames / sizeof kMethodNames[0];
    const size_t n = (kLastCallable - kFirstCallable + 1) + (methods_.size() - named);
    const size_t i = rng_.below(n);
    return i <= kLastCallable - kFirstCallable ? kFirstCallable + i : named + (i - (kLastCallable - kFirstCallable + 1));
  }

  Rng rng_;
  uint64_t seed_;
  unsigned app_threads_;
  unsigned scale_;
  bool workarounds_;
  uint64_t clock_ = 0;

  std::vector<uint8_t> file_;
  std::vector<Thread> threads_;
  size_t writer_ = 0, helper_ = 0, dumper_ = 0, finalizer_ = 0;
  std::array<uint64_t, kEventKindCount> counts_{};
  Model model_;

  std::vector<uint64_t> image_ptrs_, assembly_ptrs_;
  std::vector<std::string> mvids_;
  std::vector<uint64_t> class_ptrs_;
  std::vector<Def> class_defs_;
  std::vector<VTable> vtables_;
  std::map<std::pair<size_t, uint64_t>, size_t> vtable_index_;
  std::vector<Method> methods_;
  std::vector<uint64_t> usym_addrs_;
  std::vector<uint64_t> usym_sizes_;
  std::vector<bool> usym_written_;
  std::vector<uint64_t> lock_objects_;
  std::vector<Obj> live_;
  uint64_t nursery_next_ = 0x7f4a10000000, major_next_ = 0x7f4a80000000, trampoline_next_ = 0x41a00000;
  uint64_t next_handle_ = 0x100;
  bool plugin_loaded_ = false, plugin_unloaded_ = false;
  bool counters_described_ = false, perf_described_ = false;
  std::vector<uint64_t> counter_values_;  // integer state (absolute) per counter
  int64_t perf_value_ = 0;
  uint64_t heap_size_ = 4u << 20;
};

// ---------------------------------------------------------------------------------------------

void Synth::emit(size_t t, Event e) {
  Thread& th = threads_[t];
  if (!th.enc) {
    th.enc.emplace(th.tid, clock_);
    th.limit = 1500 + rng_.below(5000);
  }
  e.time = tick();
  th.enc->add(e);
  ++counts_[static_cast<size_t>(e.kind)];
  th.pending.push_back(std::move(e));
  if (th.hold == 0 && th.enc->data_size() > th.limit) flush(t);
}

void Synth::flush(size_t t) {
  Thread& th = threads_[t];
  if (th.pending.empty()) return;
  // Mono's writer dumps its own buffer (the JIT events) before the buffer that was queued.
  if (t != writer_) flush(writer_);
  th.enc->finish_into(file_);
  model_.consume(th.tid, th.pending);
  th.pending.clear();
  th.enc.reset();
  ++th.gen;
}

void Synth::flush_all() {
  for (size_t t = 0; t < threads_.size(); ++t) flush(t);
}

void Synth::ensure_class(size_t t, size_t cls) {
  if (class_defs_[cls].defined) {
    need(t, class_defs_[cls]);
    return;
  }
  Event e = make(EventKind::class_load);
  e.ptr = class_ptrs_[cls];
  e.ptr2 = image_ptrs_[kClasses[cls].image];
  e.name = kClasses[cls].name;
  emit(t, std::move(e));
  class_defs_[cls] = here(t);
}

size_t Synth::ensure_vtable(size_t t, size_t cls, uint64_t domain) {
  auto key = std::make_pair(cls, domain);
  auto it = vtable_index_.find(key);
  if (it != vtable_index_.end()) {
    need(t, vtables_[it->second].def);
    return it->second;
  }
  // Keep the class and its vtable in the same buffer.
  ++threads_[t].hold;
  ensure_class(t, cls);
  const size_t vi = vtables_.size();
  vtables_.push_back({0x55d0c4000000ull + 0x180 * vi + 0x40 * domain, cls, domain, {}});
  Event e = make(EventKind::vtable_load);
  e.ptr = vtables_[vi].ptr;
  e.ptr2 = domain;
  e.ptr3 = class_ptrs_[cls];
  emit(t, std::move(e));
  vtables_[vi].def = here(t);
  vtable_index_[key] = vi;
  --threads_[t].hold;
  return vi;
}

void Synth::ensure_jit(size_t m) {
  Method& me = methods_[m];
  if (me.jitted) return;
  me.jitted = true;
  Event e = make(EventKind::method_jit);
  e.method = me.ptr;
  e.ptr = me.code;
  e.size = me.size;
  e.name = me.name;
  emit(writer_, std::move(e));
}

std::vector<uint64_t> Synth::backtrace(size_t t) const {
  const auto& st = threads_[t].stack;
  std::vector<uint64_t> bt;
  const size_t first = st.size() > fmt::kMaxFrames ? st.size() - fmt::kMaxFrames : 0;
  for (size_t i = first; i < st.size(); ++i) bt.push_back(methods_[st[i]].ptr);
  return bt;  // outermost first
}

void Synth::enter(size_t t, size_t m) {
  ensure_jit(m);
  Event e = make(EventKind::method_enter);
  e.method = methods_[m].ptr;
  emit(t, std::move(e));
  threads_[t].stack.push_back(m);
}

void Synth::leave(size_t t, EventKind kind) {
  Thread& th = threads_[t];
  Event e = make(kind);
  e.method = methods_[th.stack.back()].ptr;
  th.stack.pop_back();
  emit(t, std::move(e));
}

uint64_t Synth::alloc(size_t t, size_t cls, uint64_t domain, uint64_t elems) {
  const size_t vi = ensure_vtable(t, cls, domain);
  const ClassInfo& ci = kClasses[cls];
  const uint64_t size = round8(ci.size + ci.elem * elems);
  const uint64_t addr = nursery_next_;
  nursery_next_ += size;
  Event e = make(EventKind::alloc);
  e.ptr = vtables_[vi].ptr;
  e.obj = addr;
  e.size = size;
  e.has_backtrace = rng_.chance(85);
  if (e.has_backtrace) e.backtrace = backtrace(t);
  emit(t, std::move(e));
  live_.push_back({addr, vi, size, 0});
  if (live_.size() > 400u * scale_) {
    // Objects die silently (no event); keep the model's heap bounded.
    live_.erase(live_.begin() + static_cast<long>(rng_.below(live_.size())));
  }
  return addr;
}

void Synth::start_thread(size_t t) {
  Thread& th = threads_[t];
  th.alive = true;
  Event e = make(EventKind::thread_start);
  e.ptr = th.tid;
  emit(t, std::move(e));
  e = make(EventKind::thread_name);
  e.ptr = th.tid;
  e.name = th.name;
  emit(t, std::move(e));
  if (th.role == Role::app || th.role == Role::finalizer) {
    th.stack_root = 0x7ffc00000000ull + (static_cast<uint64_t>(t) << 24);
    e = make(EventKind::heap_root_register);
    e.ptr = th.stack_root;
    e.size = 8u << 20;
    e.code = 1;  // MONO_ROOT_SOURCE_STACK
    e.ptr2 = th.tid;
    e.name = "Thread Stack";
    emit(t, std::move(e));
    th.tls_root = 0x55d0c6000000ull + (static_cast<uint64_t>(t) << 12);
    e = make(EventKind::heap_root_register);
    e.ptr = th.tls_root;
    e.size = 64;
    e.code = 4;  // MONO_ROOT_SOURCE_THREAD_STATIC
    e.ptr2 = th.tid;
    e.name = "ThreadStatic Fields";
    emit(t, std::move(e));
  }
  if (th.role == Role::app && t != 0) enter(t, kRunMethod);
}

void Synth::end_thread(size_t t) {
  Thread& th = threads_[t];
  while (!th.stack.empty()) leave(t);
  while (!th.handles.empty()) handle_destroy(t);
  if (th.stack_root) {
    for (uint64_t root : {th.stack_root, th.tls_root}) {
      Event e = make(EventKind::heap_root_unregister);
      e.ptr = root;
      emit(t, std::move(e));
    }
  }
  Event e = make(EventKind::thread_end);
  e.ptr = th.tid;
  emit(t, std::move(e));
  th.alive = false;
  th.done = true;
  flush(t);
}

void Synth::monitor(size_t t) {
  const uint64_t lock = rng_.pick(lock_objects_);
  const bool fail = rng_.chance(25);
  for (uint8_t code : {fmt::MONITOR_CONTENTION, fail ? fmt::MONITOR_FAIL : fmt::MONITOR_DONE}) {
    Event e = make(EventKind::monitor);
    e.code = code;
    e.obj = lock;
    e.has_backtrace = rng_.chance(80);
    if (e.has_backtrace) e.backtrace = backtrace(t);
    emit(t, std::move(e));
  }
}

void Synth::handle_create(size_t t) {
  if (live_.empty()) return;
  Thread& th = threads_[t];
  const uint64_t type = rng_.below(4);
  const uint64_t handle = (next_handle_++ << 3) | type;
  Event e = make(EventKind::gc_handle_created);
  e.handle_type = type;
  e.handle = handle;
  e.obj = rng_.pick(live_).addr;
  e.has_backtrace = rng_.chance(85);
  if (e.has_backtrace) e.backtrace = backtrace(t);
  emit(t, std::move(e));
  th.handles.push_back({type, handle});
}

// Handles are destroyed by the thread that created them, so the live count never goes negative in
// file order (mprof-report's "max" is computed from the running count).
void Synth::handle_destroy(size_t t) {
  Thread& th = threads_[t];
  if (th.handles.empty()) return;
  const size_t i = rng_.below(th.handles.size());
  const Thread::Handle h = th.handles[i];
  th.handles.erase(th.handles.begin() + static_cast<long>(i));
  Event e = make(EventKind::gc_handle_destroyed);
  e.handle_type = h.type;
  e.handle = h.handle;
  e.has_backtrace = rng_.chance(70);
  if (e.has_backtrace) e.backtrace = backtrace(t);
  emit(t, std::move(e));
}

// A throw in Inner caught in Outer: first pass runs Outer's filter, second pass runs Inner's finally
// (exception object NULL), leaves Inner exceptionally, runs Middle's fault (NULL), leaves Middle
// exceptionally, runs Outer's catch. Sometimes Inner catches its own exception instead.
void Synth::throw_exception(size_t t) {
  Thread& th = threads_[t];
  if (th.stack.size() + 3 > 28) return;
  enter(t, kOuterMethod);
  enter(t, kMiddleMethod);
  enter(t, kInnerMethod);
  const uint64_t exc = alloc(t, kExceptionClass, 0, 0);
  Event e = make(EventKind::exception_throw);
  e.obj = exc;
  e.has_backtrace = rng_.chance(90);
  if (e.has_backtrace) e.backtrace = backtrace(t);
  emit(t, std::move(e));
  auto clause = [&](uint8_t type, uint64_t index, size_t m, uint64_t obj) {
    Event c = make(EventKind::exception_clause);
    c.code = type;
    c.index = index;
    c.method = methods_[m].ptr;
    c.obj = obj;
    emit(t, std::move(c));
  };
  if (rng_.chance(25)) {
    clause(fmt::CLAUSE_CATCH, 0, kInnerMethod, exc);
    leave(t);  // Inner returns normally after its catch
    leave(t);
    leave(t);
    return;
  }
  clause(fmt::CLAUSE_FILTER, 0, kOuterMethod, exc);
  clause(fmt::CLAUSE_FINALLY, 0, kInnerMethod, 0);
  leave(t, EventKind::method_exc_leave);
  if (rng_.chance(50)) clause(fmt::CLAUSE_FAULT, 0, kMiddleMethod, 0);
  leave(t, EventKind::method_exc_leave);
  clause(fmt::CLAUSE_CATCH, 1, kOuterMethod, exc);
  leave(t);
}

void Synth::jit_helper(size_t t) {
  Event e = make(EventKind::jit_helper);
  e.code = static_cast<uint8_t>(rng_.below(fmt::kMaxCodeBufferType + 1));
  e.ptr = trampoline_next_;
  e.size = 16 + 8 * rng_.below(40);
  trampoline_next_ += round8(e.size) + 64;
  if (e.code == fmt::CODE_BUFFER_SPECIFIC_TRAMPOLINE)
    e.name = kTrampolineNames[rng_.below(sizeof kTrampolineNames / sizeof kTrampolineNames[0])];
  emit(t, std::move(e));
}

// One collection on thread t, in the order Mono writes it (FORMAT-NOTES 2.5 and 6).
void Synth::gc(size_t t, uint8_t gen, bool heapshot) {
  auto gc_event = [&](uint8_t ev) {
    Event e = make(EventKind::gc_event);
    e.code = ev;
    e.generation = gen;
    emit(t, std::move(e));
  };
  auto sync = [&](uint8_t type) {
    Event e = make(EventKind::sync_point);
    e.code = type;
    emit(t, std::move(e));
  };

  // The vtable of the big arrays of the heap walk is defined before the world stops (the other
  // objects' vtables were defined when they were allocated).
  if (heapshot) ensure_vtable(t, kNodeArrayClass, 0);

  gc_event(fmt::GC_EVENT_PRE_STOP_WORLD);
  gc_event(fmt::GC_EVENT_PRE_STOP_WORLD_LOCKED);
  gc_event(fmt::GC_EVENT_POST_STOP_WORLD);
  // sync_point(WORLD_STOP): every thread's buffer is queued, then the sync point goes into a new
  // buffer of the GC thread that is queued at once.
  flush_all();
  sync(fmt::SYNC_POINT_WORLD_STOP);
  flush(t);
  if (heapshot) emit(t, make(EventKind::heap_start));
  gc_event(fmt::GC_EVENT_START);

  // Moves: nursery survivors are copied to the major heap; some nursery objects die.
  std::vector<uint64_t> moved;
  for (Obj& o : live_) {
    if (o.gen == 0 && rng_.chance(gen == 0 ? 40 : 70)) {
      moved.push_back(o.addr);
      o.addr = major_next_;
      major_next_ += o.size;
      o.gen = 1;
      moved.push_back(o.addr);
    }
  }
  live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const Obj& o) { return o.gen == 0 && rng_.chance(30); }),
              live_.end());
  for (size_t i = 0; i < moved.size();) {
    Event e = make(EventKind::gc_move);
    const size_t n = std::min<size_t>(moved.size() - i, 2 * (1 + rng_.below(32)));
    e.objects.assign(moved.begin() + static_cast<long>(i), moved.begin() + static_cast<long>(i + n));
    i += n;
    emit(t, std::move(e));
  }

  // The heap walk set (post-move addresses): live objects plus one or two big arrays whose
  // references come in chunks of at most 128 (the first chunk carries the size, later chunks
  // size 0). Every reference points into the set.
  struct WalkObj {
    uint64_t addr;
    size_t vtable;
    uint64_t size;
    uint8_t gen;
    std::vector<HeapRef> refs;
  };
  std::vector<WalkObj> walk;
  std::vector<uint64_t> root_objs;
  if (heapshot) {
    const size_t array_vt = vtable_index_.at({kNodeArrayClass, 0});
    for (const Obj& o : live_) walk.push_back({o.addr, o.vtable, o.size, o.gen, {}});
    const size_t plain = walk.size();
    const size_t arrays = 1 + rng_.below(2);
    for (size_t a = 0; a < arrays; ++a) {
      const uint64_t n = 129 + rng_.below(200);
      const uint64_t size = round8(32 + 8 * n);
      walk.push_back({major_next_, array_vt, size, 1, {}});
      major_next_ += size;
      for (uint64_t i = 0; i < n && plain; ++i)
        walk.back().refs.push_back({32 + 8 * i, walk[rng_.below(plain)].addr});
    }
    for (size_t i = 0; i < plain; ++i) {
      const size_t nrefs = rng_.below(4);
      for (size_t r = 0; r < nrefs; ++r)
        walk[i].refs.push_back({16 + 8 * r, walk[rng_.below(walk.size())].addr});
    }
    const size_t n = 1 + rng_.below(std::min<size_t>(walk.size(), 60));
    for (size_t i = 0; i < n; ++i) root_objs.push_back(rng_.pick(walk).addr);
  } else if (!live_.empty() && rng_.chance(50)) {
    // Compat mode reports roots on every collection.
    const size_t n = 1 + rng_.below(std::min<size_t>(live_.size(), 70));
    for (size_t i = 0; i < n; ++i) root_objs.push_back(rng_.pick(live_).addr);
  }
  for (size_t i = 0; i < root_objs.size();) {
    Event e = make(EventKind::heap_root);
    const size_t n = std::min<size_t>(root_objs.size() - i, 1 + rng_.below(32));
    for (size_t k = 0; k < n; ++k, ++i)
      e.roots.push_back({threads_[t].stack_root + 0x1000 + 8 * rng_.below(4096), root_objs[i]});
    emit(t, std::move(e));
  }
  gc_event(fmt::GC_EVENT_END);
  if (rng_.chance(40)) {
    heap_size_ += (1 + rng_.below(16)) << 16;
    Event e = make(EventKind::gc_resize);
    e.size = heap_size_;
    emit(t, std::move(e));
  }
  gc_event(fmt::GC_EVENT_PRE_START_WORLD);
  if (heapshot) {
    for (const WalkObj& w : walk) {
      size_t i = 0;
      do {
        Event e = make(EventKind::heap_object);
        e.obj = w.addr;
        e.ptr = vtables_[w.vtable].ptr;
        e.size = i == 0 ? w.size : 0;
        e.generation = w.gen;
        const size_t end = std::min(w.refs.size(), i + 128);
        e.refs.assign(w.refs.begin() + static_cast<long>(i), w.refs.begin() + static_cast<long>(end));
        emit(t, std::move(e));
        i = end;
      } while (i < w.refs.size());
    }
    emit(t, make(EventKind::heap_end));
  }
  sync(fmt::SYNC_POINT_WORLD_START);
  flush(t);
  gc_event(fmt::GC_EVENT_POST_START_WORLD);
  gc_event(fmt::GC_EVENT_POST_START_WORLD_UNLOCKED);
}

// The finalizer thread runs finalizers of some dead finalizable objects.
void Synth::finalize() {
  const size_t t = finalizer_;
  std::vector<size_t> victims;
  for (size_t i = 0; i < live_.size() && victims.size() < 6; ++i)
    if (kClasses[vtables_[live_[i].vtable].cls].finalizable && rng_.chance(30)) victims.push_back(i);
  emit(t, make(EventKind::gc_finalize_start));
  for (size_t i : victims) {
    Event e = make(EventKind::gc_finalize_object_start);
    e.obj = live_[i].addr;
    emit(t, std::move(e));
    enter(t, kFinalizeMethod);
    leave(t);
    e = make(EventKind::gc_finalize_object_end);
    e.obj = live_[i].addr;
    emit(t, std::move(e));
  }
  for (size_t k = victims.size(); k-- > 0;) live_.erase(live_.begin() + static_cast<long>(victims[k]));
  emit(t, make(EventKind::gc_finalize_end));
}

// The dumper writes sample hits of the app threads: one IP (inside the innermost method's code, or
// inside a native symbol) and the managed frames, innermost first; a USYM event follows the first
// hit of each native symbol.
void Synth::samples() {
  std::vector<size_t> alive;
  for (size_t t = 0; t < threads_.size(); ++t)
    if (threads_[t].role == Role::app && threads_[t].alive) alive.push_back(t);
  if (alive.empty()) return;
  const size_t hits = 1 + rng_.below(3);
  for (size_t h = 0; h < hits; ++h) {
    const size_t t = rng_.pick(alive);
    const Thread& th = threads_[t];
    Event e = make(EventKind::sample_hit);
    e.ptr = th.tid;
    std::vector<uint64_t> bt = backtrace(t);
    e.frames.assign(bt.rbegin(), bt.rend());
    size_t sym = SIZE_MAX;
    if (!th.stack.empty() && rng_.chance(65)) {
      const Method& m = methods_[th.stack.back()];
      e.ips.push_back(m.code + rng_.below(m.size));
    } else {
      sym = rng_.below(usym_addrs_.size());
      e.ips.push_back(usym_addrs_[sym] + rng_.below(usym_sizes_[sym]));
    }
    emit(dumper_, std::move(e));
    if (sym != SIZE_MAX && !usym_written_[sym]) {
      usym_written_[sym] = true;
      Event u = make(EventKind::sample_usym);
      u.ptr = usym_addrs_[sym];
      u.size = usym_sizes_[sym];
      u.name = kSymbols[sym];
      emit(dumper_, std::move(u));
    }
  }
}

// Periodic flush from the helper thread: every thread's buffer is queued, then the helper samples
// the counters and writes a periodic sync point into its own buffer, which it queues.
void Synth::periodic_sync(bool final) {
  clock_ += 50'000'000 + rng_.below(100'000'000);  // the helper wakes up about every 100 ms here
  for (size_t t = 0; t < threads_.size(); ++t)
    if (t != helper_) flush(t);
  const size_t t = helper_;
  if (!counters_described_ || (!perf_described_ && (final || rng_.chance(50)))) {
    Event d = make(EventKind::counter_descriptors);
    if (!counters_described_) {
      for (size_t i = 0; i < kCounterCount; ++i) {
        const CounterSpec& s = kCounters[i];
        d.counter_descs.push_back({s.section, "", s.name, s.type, s.unit, s.variance, i + 1});
      }
    } else {
      // A custom performance counter category (section 0x8000 carries the category name; Mono
      // writes type LONG, unit and variance 0 for them).
      d.counter_descs.push_back({fmt::COUNTER_SECTION_PERFCOUNTERS, "Synth Category", "Requests served",
                                 fmt::COUNTER_LONG, 0, 0, kCounterCount + 1});
      perf_described_ = true;
    }
    emit(t, std::move(d));
  }
  Event s = make(EventKind::counter_samples);
  const bool first = !counters_described_;
  if (first) counter_values_.assign(kCounterCount, 0);
  for (size_t i = 0; i < kCounterCount; ++i) {
    const CounterSpec& spec = kCounters[i];
    if (spec.type == fmt::COUNTER_STRING) {
      // Mono only ever writes null string values (and mprof-report --verbose crashes on others).
      if (first) s.counter_values.push_back({i + 1, spec.type, 0, workarounds_, workarounds_ ? "" : "Plugin"});
      continue;
    }
    if (!first && !rng_.chance(60)) continue;  // only changed counters are written
    CounterValue v{i + 1, spec.type, 0, false, ""};
    if (spec.type == fmt::COUNTER_DOUBLE) {
      const double d = static_cast<double>(rng_.below(100000)) / 64.0;
      std::memcpy(&v.bits, &d, sizeof d);
    } else {
      uint64_t delta = 1 + rng_.below(5000);
      if (spec.variance == fmt::COUNTER_VARIANCE_VARIABLE && !first && counter_values_[i] > 10000 &&
          rng_.chance(40)) {
        v.bits = static_cast<uint64_t>(-static_cast<int64_t>(std::min<uint64_t>(delta, counter_values_[i] / 2)));
        counter_values_[i] += v.bits;
      } else {
        v.bits = delta;
        counter_values_[i] += delta;
      }
      if (spec.type == fmt::COUNTER_UINT || spec.type == fmt::COUNTER_INT) v.bits &= 0xFFFFFFFFu;
      if (spec.type == fmt::COUNTER_INT && static_cast<int32_t>(v.bits) < 0)
        v.bits = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v.bits)));
    }
    s.counter_values.push_back(v);
  }
  if (perf_described_) {
    perf_value_ += static_cast<int64_t>(rng_.below(50));
    s.counter_values.push_back({kCounterCount + 1, fmt::COUNTER_LONG, static_cast<uint64_t>(perf_value_), false, ""});
  }
  counters_described_ = true;
  emit(t, std::move(s));
  Event sp = make(EventKind::sync_point);
  sp.code = fmt::SYNC_POINT_PERIODIC;
  emit(t, std::move(sp));
  flush(t);
}

void Synth::load_plugin_domain() {
  const size_t t = 0;
  Event e = make(EventKind::domain_load);
  e.ptr = 1;
  emit(t, std::move(e));
  e = make(EventKind::domain_name);
  e.ptr = 1;
  e.name = "PluginDomain";
  emit(t, std::move(e));
  e = make(EventKind::context_load);
  e.ptr = 1;
  e.ptr2 = 1;
  emit(t, std::move(e));
  e = make(EventKind::heap_root_register);
  e.ptr = 0x55d0c7001000ull;
  e.size = 256;
  e.code = 9;  // MONO_ROOT_SOURCE_DOMAIN
  e.ptr2 = 1;
  e.name = "Domain Structure";
  emit(t, std::move(e));
  e = make(EventKind::image_load);
  e.ptr = image_ptrs_[kPluginImage];
  e.name = kImages[kPluginImage].file;
  e.mvid = mvids_[kPluginImage];
  emit(t, std::move(e));
  e = make(EventKind::assembly_load);
  e.ptr = assembly_ptrs_[kPluginImage];
  e.ptr2 = image_ptrs_[kPluginImage];
  e.name = kImages[kPluginImage].assembly;
  emit(t, std::move(e));
  plugin_loaded_ = true;
  // Images are defined before any other thread can use them.
  flush(t);
}

void Synth::step(size_t t) {
  Thread& th = threads_[t];
  const uint64_t r = rng_.below(100);
  const size_t base = 1;  // Main / Run stay on the stack
  if (r < 30) {
    if (th.stack.size() < 20) enter(t, callable());
  } else if (r < 55) {
    if (th.stack.size() > base) leave(t);
  } else if (r < 72) {
    size_t cls = rng_.below(kClassCount);
    uint64_t domain = 0;
    if (kClasses[cls].image == kPluginImage) {
      if (!plugin_loaded_ || plugin_unloaded_) cls = 8;  // Synth.Node
      else domain = 1;
    } else if (plugin_loaded_ && !plugin_unloaded_ && rng_.chance(10)) {
      domain = 1;
    }
    const uint64_t elems = kClasses[cls].elem ? rng_.below(64) : 0;
    alloc(t, cls, domain, elems);
  } else if (r < 77) {
    monitor(t);
  } else if (r < 83) {
    handle_create(t);
  } else if (r < 88) {
    handle_destroy(t);
  } else if (r < 91) {
    throw_exception(t);
  } else if (r < 94) {
    jit_helper(t);
  } else if (r < 96) {
    gc(t, rng_.chance(75) ? 0 : 1, false);
    if (rng_.chance(60)) finalize();
  } else {
    // A little burst of calls, the common shape of a profile.
    const size_t m = callable();
    if (th.stack.size() < 24) {
      enter(t, m);
      alloc(t, 9, 0, 0);
      leave(t);
    }
  }
}

void Synth::run() {
  // Header-independent material.
  clock_ = 1'000'000'000ull * (1000 + seed_ % 1000) + rng_.below(1'000'000);
  for (size_t i = 0; i < sizeof kImages / sizeof kImages[0]; ++i) {
    image_ptrs_.push_back(0x55d0c3000000ull + 0x11000 * i + 0x10 * rng_.below(256));
    assembly_ptrs_.push_back(0x55d0c3800000ull + 0x2000 * i + 0x10 * rng_.below(128));
    mvids_.push_back(guid_string(rng_));
  }
  for (size_t i = 0; i < kClassCount; ++i) class_ptrs_.push_back(0x55d0c3c00000ull + 0x2c0 * i);
  class_defs_.assign(kClassCount, {});
  uint64_t code = 0x40a3c000ull;
  const size_t extra = 8 * scale_;
  for (size_t i = 0; i < sizeof kMethodNames / sizeof kMethodNames[0] + extra; ++i) {
    Method m;
    m.ptr = 0x55d0c5000000ull + 0x68 * i;
    m.code = code;
    m.size = 24 + 8 * rng_.below(120);
    code += round8(m.size) + 16 * rng_.below(8);
    if (i < sizeof kMethodNames / sizeof kMethodNames[0]) {
      m.name = kMethodNames[i];
    } else {
      const size_t k = i - sizeof kMethodNames / sizeof kMethodNames[0];
      m.name = "Synth.Generated.C" + std::to_string(k / 3) + ":M" + std::to_string(k % 3) + " (int,long)";
    }
    methods_.push_back(std::move(m));
  }
  for (size_t i = 0; i < sizeof kSymbols / sizeof kSymbols[0]; ++i) {
    usym_addrs_.push_back(0x7f3a2b000000ull + 0x20000 * i + 0x10 * rng_.below(64));
    usym_sizes_.push_back(64 + 16 * rng_.below(200));  // < 4096: mprof-report's lookup window
    usym_written_.push_back(false);
  }

  // Threads: app threads first (0 = main), then the runtime's/profiler's own threads.
  const uint64_t total_steps = 500ull * scale_;
  for (unsigned i = 0; i < app_threads_; ++i) {
    Thread th;
    th.tid = 0x7f4c3a1ff700ull - 0x801000ull * i;
    th.name = i == 0 ? "Main" : "Worker " + std::to_string(i);
    th.start_step = i == 0 ? 0 : rng_.below(total_steps / 3);
    th.end_step = i == 0 ? total_steps : total_steps / 2 + rng_.below(total_steps / 2);
    threads_.push_back(std::move(th));
  }
  auto internal = [&](Role role, const char* name, uint64_t tid) {
    Thread th;
    th.tid = tid;
    th.name = name;
    th.role = role;
    threads_.push_back(std::move(th));
    return threads_.size() - 1;
  };
  writer_ = internal(Role::writer, "Profiler Writer", 0x7f4c40bfe700ull);
  helper_ = internal(Role::helper, "Profiler Helper", 0x7f4c413ff700ull);
  dumper_ = internal(Role::dumper, "Profiler Dumper", 0x7f4c403fd700ull);
  finalizer_ = internal(Role::finalizer, "Finalizer", 0x7f4c41bff700ull);

  // Main thread, first buffer of the file: the runtime's startup metadata.
  {
    const size_t t = 0;
    Event e = make(EventKind::heap_root_register);
    e.ptr = 0x55d0c7000000ull;
    e.size = 512;
    e.code = 9;  // MONO_ROOT_SOURCE_DOMAIN
    e.ptr2 = 0;
    e.name = "Domain Structure";
    emit(t, std::move(e));
    e = make(EventKind::domain_load);
    e.ptr = 0;
    emit(t, std::move(e));
    for (size_t i = 0; i < kPluginImage; ++i) {
      e = make(EventKind::image_load);
      e.ptr = image_ptrs_[i];
      e.name = kImages[i].file;
      e.mvid = mvids_[i];
      emit(t, std::move(e));
      e = make(EventKind::assembly_load);
      e.ptr = assembly_ptrs_[i];
      e.ptr2 = image_ptrs_[i];
      e.name = kImages[i].assembly;
      emit(t, std::move(e));
    }
    e = make(EventKind::context_load);
    e.ptr = 0;
    e.ptr2 = 0;
    emit(t, std::move(e));
    e = make(EventKind::domain_name);
    e.ptr = 0;
    e.name = "synth.exe";
    emit(t, std::move(e));
    e = make(EventKind::heap_root_register);
    e.ptr = 0x55d0c7100000ull;
    e.size = 4096;
    e.code = 3;  // MONO_ROOT_SOURCE_STATIC
    e.ptr2 = 0;
    e.name = "Static Fields";
    emit(t, std::move(e));
    start_thread(t);
    ensure_class(t, kObjectClass);
    flush(t);
  }
  for (size_t t : {writer_, helper_, dumper_, finalizer_}) start_thread(t);
  for (size_t t = 0; t < 3; ++t) jit_helper(0);
  Event fh = make(EventKind::jit_helper);  // always at least one named specific trampoline
  fh.code = fmt::CODE_BUFFER_SPECIFIC_TRAMPOLINE;
  fh.ptr = trampoline_next_;
  fh.size = 48;
  trampoline_next_ += 128;
  fh.name = "generic_trampoline_jit";
  emit(0, std::move(fh));
  enter(0, kMainMethod);
  for (int i = 0; i < 3; ++i) lock_objects_.push_back(alloc(0, kObjectClass, 0, 0));

  const uint64_t plugin_step = total_steps / 10;
  std::set<uint64_t> heapshot_steps;
  for (unsigned i = 0; i <= scale_; ++i) heapshot_steps.insert(total_steps * (i + 1) / (scale_ + 2));
  for (uint64_t s = 0; s < total_steps; ++s) {
    for (size_t t = 1; t < app_threads_; ++t) {
      Thread& th = threads_[t];
      if (!th.alive && !th.done && s >= th.start_step) start_thread(t);
      if (th.alive && s >= th.end_step) end_thread(t);
    }
    if (s == plugin_step) load_plugin_domain();
    if (heapshot_steps.count(s)) {
      gc(finalizer_, 1, true);
      finalize();
    }
    if (s % 40 == 39) periodic_sync(false);
    if (s % 9 == 4) samples();
    std::vector<size_t> alive;
    for (size_t t = 0; t < app_threads_; ++t)
      if (threads_[t].alive) alive.push_back(t);
    step(rng_.pick(alive));
  }
  for (size_t t = 1; t < app_threads_; ++t)
    if (threads_[t].alive) end_thread(t);

  // Shutdown on the main thread: Main returns, the plugin domain is unloaded, then the runtime
  // shuts down (AOT id in log_early_shutdown).
  {
    const size_t t = 0;
    while (threads_[t].stack.size() > 1) leave(t);
    leave(t);  // Main
    while (!threads_[t].handles.empty()) handle_destroy(t);
    Event e;
    if (!workarounds_) {
      // --no-workarounds: the image unload is followed by ordinary events, which mprof-report 6.8
      // then misreads (FORMAT-NOTES 7.3).
      e = make(EventKind::image_unload);
      e.ptr = image_ptrs_[kPluginImage];
      e.name = kImages[kPluginImage].file;
      emit(t, std::move(e));
    }
    e = make(EventKind::domain_unload);
    e.ptr = 1;
    emit(t, std::move(e));
    e = make(EventKind::context_unload);
    e.ptr = 1;
    e.ptr2 = 1;
    emit(t, std::move(e));
    e = make(EventKind::heap_root_unregister);
    e.ptr = 0x55d0c7001000ull;
    emit(t, std::move(e));
    e = make(EventKind::assembly_unload);
    e.ptr = assembly_ptrs_[kPluginImage];
    e.ptr2 = image_ptrs_[kPluginImage];
    e.name = kImages[kPluginImage].assembly;
    emit(t, std::move(e));
    plugin_unloaded_ = true;
    // mprof-report 6.8 swallows the bytes after an image unload up to the next NUL (it expects an
    // mvid there). The aot_id event right behind it is exactly such a NUL-terminated run (event
    // byte 0x1A, time delta >= 1, GUID characters), so mprof-report skips just that event --
    // which it ignores anyway -- and the buffer ends right after it.
    ++threads_[t].hold;
    if (workarounds_) {
      e = make(EventKind::image_unload);
      e.ptr = image_ptrs_[kPluginImage];
      e.name = kImages[kPluginImage].file;
      emit(t, std::move(e));
    }
    e = make(EventKind::aot_id);
    e.name = guid_string(rng_);
    emit(t, std::move(e));
    --threads_[t].hold;
    flush(t);
  }
  // A last heapshot-on-shutdown style collection, final counters, then every thread ends.
  gc(finalizer_, 1, false);
  finalize();
  periodic_sync(true);
  for (size_t t : {finalizer_, dumper_, size_t{0}, helper_, writer_}) end_thread(t);
  flush_all();
  model_.finish();
}

bool Synth::write(const char* path, bool gzip) const {
  std::vector<uint8_t> out;
  FileHeader h;
  h.startup_ms = 1700000000000ull + 1000ull * (seed_ % 100000);
  h.startup_ns = 1'000'000'000ull * (1000 + seed_ % 1000);
  h.timer_overhead = 21;
  h.pid = 4242 + static_cast<int32_t>(seed_ % 1000);
  h.port = 34567;
  h.args = "log:synth,seed=" + std::to_string(seed_) + ",threads=" + std::to_string(app_threads_) +
           ",scale=" + std::to_string(scale_);
  h.arch = "x86-64";
  h.os = "linux";
  encode_file_header(h, out);
  out.insert(out.end(), file_.begin(), file_.end());
  if (gzip) {
    gzFile gz = gzopen(path, "wb");
    if (!gz) return false;
    const bool ok = gzwrite(gz, out.data(), static_cast<unsigned>(out.size())) == static_cast<int>(out.size());
    return gzclose(gz) == Z_OK && ok;
  }
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  return std::fclose(f) == 0 && ok;
}

void Synth::print_expected() const {
  for (size_t k = 0; k < kEventKindCount; ++k)
    if (counts_[k]) std::printf("%s %llu\n", std::string(kEventKindNames[k]).c_str(), static_cast<unsigned long long>(counts_[k]));
  auto total = [](const std::string& key, uint64_t v) {
    std::printf("total.%s %llu\n", key.c_str(), static_cast<unsigned long long>(v));
  };
  const Model& m = model_;
  total("calls", m.calls);
  total("unmatched_leaves", m.unmatched);
  total("alloc_objects", m.alloc_objects);
  total("alloc_bytes", m.alloc_bytes);
  total("throws", m.throws);
  const char* clause_names[] = {"catch", "filter", "finally", "", "fault"};
  for (size_t c = 0; c < m.clauses.size(); ++c)
    if (*clause_names[c]) total(std::string("exception_clause.") + clause_names[c], m.clauses[c]);
  const char* handle_names[] = {"weak", "weaktrack", "normal", "pinned"};
  for (size_t h = 0; h < 4; ++h) {
    total(std::string("gc_handle_created.") + handle_names[h], m.handles[h].created);
    total(std::string("gc_handle_destroyed.") + handle_names[h], m.handles[h].destroyed);
    total(std::string("gc_handle_max.") + handle_names[h], m.handles[h].max);
  }
  total("monitor.contention", m.monitor[fmt::MONITOR_CONTENTION]);
  total("monitor.done", m.monitor[fmt::MONITOR_DONE]);
  total("monitor.fail", m.monitor[fmt::MONITOR_FAIL]);
  for (size_t g = 0; g < 3; ++g)
    if (m.gc_starts[g]) total("gc_collections.gen" + std::to_string(g), m.gc_starts[g]);
  total("gc_resizes", m.gc_resizes);
  total("gc_max_heap_size", m.gc_max_heap);
  total("gc_move_objects", m.gc_move_objects);
  total("heapshots", m.heapshots.size());
  for (size_t i = 0; i < m.heapshots.size(); ++i) {
    const std::string p = "heapshot." + std::to_string(i) + ".";
    total(p + "objects", m.heapshots[i].objects);
    total(p + "bytes", m.heapshots[i].bytes);
    total(p + "classes", m.heapshots[i].classes.size());
    total(p + "roots", m.heapshots[i].roots);
  }
  total("heap_root_entries", m.heap_root_entries);
  uint64_t jitted = 0, code_size = 0;
  for (const auto& [method, cs] : m.jit) {
    if (!cs.first) continue;
    ++jitted;
    code_size += cs.second;
  }
  total("jit.methods", jitted);
  total("jit.code_size", code_size);
  total("jit.helpers", m.jit_helpers);
  total("jit.helpers_code_size", m.jit_helpers_size);
  uint64_t managed, unmanaged, unresolved;
  m.sample_summary(managed, unmanaged, unresolved);
  total("samples.managed", managed);
  total("samples.unmanaged", unmanaged);
  total("samples.unresolved", unresolved);
  total("images", m.images);
  total("assemblies", m.assemblies);
  for (const auto& [index, c] : m.counters) {
    if (!c.has || !kReportedCounterNames.count(c.desc.name)) continue;
    std::string key = c.desc.name;
    std::replace(key.begin(), key.end(), ' ', '_');
    std::printf("total.counter.%s %s\n", key.c_str(), Model::printed(c).c_str());
  }
}

void usage(FILE* out) {
  std::fputs(
      "usage: mlpd_synth [--seed N] [--gzip] [--threads T] [--scale K] [--no-workarounds] OUT\n"
      "Writes a synthetic, consistent mlpd file with every v17 event kind to OUT and prints the\n"
      "expected per-kind counts (`NAME COUNT`) and mprof-report totals (`total.KEY VALUE`).\n",
      out);
}

bool parse_uint(const char* s, unsigned long long& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s, &end, 10);
  return errno == 0 && end && *end == 0 && end != s;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long long seed = 1, threads = 3, scale = 1;
  bool gzip = false, workarounds = true;
  const char* out = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](unsigned long long& v, unsigned long long lo, unsigned long long hi) {
      if (i + 1 >= argc || !parse_uint(argv[i + 1], v) || v < lo || v > hi) {
        std::fprintf(stderr, "mlpd_synth: %s needs a number in [%llu, %llu]\n", a.c_str(), lo, hi);
        std::exit(2);
      }
      ++i;
    };
    if (a == "--seed") {
      value(seed, 0, ~0ull);
    } else if (a == "--threads") {
      value(threads, 1, 64);
    } else if (a == "--scale") {
      value(scale, 1, 1000);
    } else if (a == "--gzip") {
      gzip = true;
    } else if (a == "--no-workarounds") {
      workarounds = false;
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "mlpd_synth: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    } else if (!out) {
      out = argv[i];
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!out) {
    usage(stderr);
    return 2;
  }
  Synth synth(seed, static_cast<unsigned>(threads), static_cast<unsigned>(scale), workarounds);
  synth.run();
  if (!synth.write(out, gzip)) {
    std::fprintf(stderr, "mlpd_synth: cannot write %s: %s\n", out, std::strerror(errno));
    return 1;
  }
  synth.print_expected();
  return 0;
}
