// ClrRuntime (runtime-hooks/src/coreclr/clr_runtime.cpp) against a fake CoreCLR: install's event mask
// and refusals, methods named in Mono's style with one method_jit per code body (tiers), modules and
// assemblies before use, threads started on their own thread with their names. Events read back
// from the MetaLog with the codec's decoder.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "coreclr/clr_calls.h"
#include "coreclr/clr_runtime.h"
#include "mlpd/buffer_decoder.h"
#include "mlpd/header_decoder.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd_catch.h"

using namespace mlpd;
using namespace mlpd::coreclr;

namespace {

struct Fake {
  DWORD low = 0, high = 0;
  std::vector<UINT_PTR> starts{0x10000, 0x20000};
  // EventPipe: what the session was asked for, and whether the runtime grants it.
  HRESULT session_hr = 0;
  int sessions = 0, stopped = 0;
  std::u16string provider;
  uint64_t keywords = 0;
  uint32_t level = 0;
  BOOL rundown = -1;
  // calls: the mapper and the hooks the runtime was given.
  void* mapper = nullptr;
  void* enter = nullptr;
  void* leave = nullptr;
  void* tailcall = nullptr;
} g_fake;

void copy_name(const char16_t* text, ULONG capacity, ULONG* length, WCHAR* out) {
  const ULONG n = static_cast<ULONG>(std::char_traits<char16_t>::length(text)) + 1;
  if (length) *length = n;
  if (out && capacity >= n) std::memcpy(out, text, n * sizeof(WCHAR));
}

// The metadata of module 0x7000: MlpdTests.Work (0x02000002) with Sum (0x06000001): long Sum(int).
HRESULT md_typedef(MetaDataImport*, mdTypeDef type, WCHAR* name, ULONG capacity, ULONG* length, DWORD*, mdToken*) {
  if (type == 0x02000002) return copy_name(u"MlpdTests.Work", capacity, length, name), kS_OK;
  if (type == 0x02000003) return copy_name(u"Inner", capacity, length, name), kS_OK;
  return kE_FAIL;
}
HRESULT md_nested(MetaDataImport*, mdTypeDef type, mdTypeDef* enclosing) {
  if (type != 0x02000003) return kE_FAIL;
  *enclosing = 0x02000002;
  return kS_OK;
}
const BYTE kSumSig[] = {0x00, 1, 0x0a, 0x08};
HRESULT md_method(MetaDataImport*, mdMethodDef method, mdTypeDef* owner, WCHAR* name, ULONG capacity, ULONG* length,
                  DWORD*, PCCOR_SIGNATURE* sig, ULONG* sig_size, ULONG*, DWORD*) {
  if (method != 0x06000001) return kE_FAIL;
  *owner = 0x02000003;
  copy_name(u"Sum", capacity, length, name);
  *sig = kSumSig;
  *sig_size = sizeof kSumSig;
  return kS_OK;
}
MetaDataImportTable2 g_md_table = [] {
  MetaDataImportTable2 t{};
  t.GetTypeDefProps = &md_typedef;
  t.GetNestedClassProps = &md_nested;
  t.GetMethodProps = &md_method;
  return t;
}();
MetaDataImport g_md{&g_md_table};

// ForceGC: a full collection on the calling thread (as the runtime runs a workstation one), its start
// and end callbacks; or a refusal.
std::atomic<int> g_force_calls{0};
HRESULT g_force_hr = 0;
HRESULT info_force_gc(ProfilerInfo*) {
  g_force_calls.fetch_add(1);
  if (g_force_hr != 0) return g_force_hr;
  const BOOL all[3] = {1, 1, 1};
  ClrRuntime::instance()->gc_started(3, all);
  ClrRuntime::instance()->gc_finished();
  return kS_OK;
}

HRESULT info_set_mask2(ProfilerInfo*, DWORD low, DWORD high) {
  g_fake.low = low;
  g_fake.high = high;
  return kS_OK;
}
HRESULT info_function2(ProfilerInfo*, FunctionID f, COR_PRF_FRAME_INFO, ClassID* klass, ModuleID* module,
                       mdToken* token, ULONG32, ULONG32* count, ClassID*) {
  if (f != 0x5000) return kE_FAIL;
  *klass = 0x6000;
  *module = 0x7000;
  *token = 0x06000001;
  *count = 0;
  return kS_OK;
}
HRESULT info_class2(ProfilerInfo*, ClassID klass, ModuleID* module, mdTypeDef* type, ClassID* parent, ULONG32,
                    ULONG32* count, ClassID*) {
  if (klass != 0x6000) return kE_FAIL;
  *module = 0x7000;
  *type = 0x02000003;
  *parent = 0;
  *count = 0;
  return kS_OK;
}
HRESULT info_is_array(ProfilerInfo*, ClassID, std::uint32_t*, ClassID*, ULONG*) { return kS_FALSE; }
HRESULT info_metadata(ProfilerInfo*, ModuleID module, DWORD, const Guid* riid, void** out) {
  if (module != 0x7000 || !(*riid == kIID_IMetaDataImport2)) return kE_FAIL;
  *out = &g_md;
  return kS_OK;
}
HRESULT info_starts(ProfilerInfo*, FunctionID f, ReJITID, ULONG32 capacity, ULONG32* count, UINT_PTR* starts) {
  if (f != 0x5000) return kE_FAIL;
  *count = static_cast<ULONG32>(g_fake.starts.size());
  for (size_t i = 0; i < g_fake.starts.size() && i < capacity; ++i) starts[i] = g_fake.starts[i];
  return kS_OK;
}
HRESULT info_code4(ProfilerInfo*, UINT_PTR start, ULONG32, ULONG32* count, CodeInfo* infos) {
  infos[0] = CodeInfo{start, start >> 10};
  *count = 1;
  return kS_OK;
}
HRESULT info_module(ProfilerInfo*, ModuleID module, LPCBYTE* base, ULONG capacity, ULONG* length, WCHAR* name,
                    AssemblyID* assembly) {
  if (module != 0x7000) return kE_FAIL;
  *base = nullptr;
  *assembly = 0x8000;
  copy_name(u"/app/DotnetPrograms.dll", capacity, length, name);
  return kS_OK;
}
HRESULT info_assembly(ProfilerInfo*, AssemblyID, ULONG capacity, ULONG* length, WCHAR* name, AppDomainID* domain,
                      ModuleID* manifest) {
  *domain = 1;
  *manifest = 0x7000;
  copy_name(u"DotnetPrograms", capacity, length, name);
  return kS_OK;
}

HRESULT info_ep_start(ProfilerInfo*, UINT32 count, EventPipeProviderConfig* configs, BOOL rundown,
                      EVENTPIPE_SESSION* session) {
  if (g_fake.session_hr != 0) return g_fake.session_hr;
  REQUIRE(count == 1);
  ++g_fake.sessions;
  g_fake.provider = configs[0].provider_name;
  g_fake.keywords = configs[0].keywords;
  g_fake.level = configs[0].logging_level;
  g_fake.rundown = rundown;
  *session = 0x1234;
  return kS_OK;
}
// Provider 0x77 is the runtime's, 0x78 EventPipe's own.
HRESULT info_ep_provider(ProfilerInfo*, EVENTPIPE_PROVIDER provider, ULONG capacity, ULONG* length, WCHAR* name) {
  if (provider == 0x77) return copy_name(u"Microsoft-Windows-DotNETRuntime", capacity, length, name), kS_OK;
  if (provider == 0x78) return copy_name(u"Microsoft-DotNETCore-EventPipe", capacity, length, name), kS_OK;
  return kE_FAIL;
}
HRESULT info_ep_stop(ProfilerInfo*, EVENTPIPE_SESSION session) {
  if (session == 0x1234) ++g_fake.stopped;
  return kS_OK;
}

HRESULT info_mapper2(ProfilerInfo*, void* mapper, void*) {
  g_fake.mapper = mapper;
  return kS_OK;
}
HRESULT info_hooks3(ProfilerInfo*, void* enter, void* leave, void* tailcall) {
  g_fake.enter = enter;
  g_fake.leave = leave;
  g_fake.tailcall = tailcall;
  return kS_OK;
}

InfoTable12 make_info() {
  InfoTable12 t{};
  t.SetFunctionIDMapper2 = &info_mapper2;
  t.SetEnterLeaveFunctionHooks3 = &info_hooks3;
  t.SetEventMask2 = &info_set_mask2;
  t.GetFunctionInfo2 = &info_function2;
  t.GetClassIDInfo2 = &info_class2;
  t.IsArrayClass = &info_is_array;
  t.GetModuleMetaData = &info_metadata;
  t.GetNativeCodeStartAddresses = &info_starts;
  t.GetCodeInfo4 = &info_code4;
  t.GetModuleInfo = &info_module;
  t.GetAssemblyInfo = &info_assembly;
  t.EventPipeStartSession = &info_ep_start;
  t.EventPipeStopSession = &info_ep_stop;
  t.EventPipeGetProviderInfo = &info_ep_provider;
  t.ForceGC = &info_force_gc;
  return t;
}

std::vector<Event> take(rt::MetaLog& meta) {
  std::vector<uint8_t> bytes;
  meta.take(bytes, 1);
  std::vector<Event> out;
  size_t at = 0;
  while (at + format::kBufferHeaderSize <= bytes.size()) {
    BufferHeader h;
    decode_buffer_header(bytes.data() + at, h);
    BufferDecoder dec(h, bytes.data() + at + format::kBufferHeaderSize, 0);
    Event e;
    std::string problem;
    uint64_t offset = 0;
    while (dec.next(e, problem, offset)) out.push_back(e);
    REQUIRE(problem.empty());
    at += format::kBufferHeaderSize + h.length;
  }
  return out;
}

struct Fixture {
  InfoTable12 table = make_info();
  ProfilerInfo info{&table};
  rt::MetaLog meta{1, 0};
  runtime::Env env;
  RuntimeInfo about;
  ClrRuntime runtime{&info, about_for()};
  static RuntimeInfo about_for(uint16_t major = 10) {
    RuntimeInfo r;
    r.info_level = 12;
    r.major = major;
    r.version = std::to_string(major) + ".0.12";
    return r;
  }
  Fixture() {
    env.meta = &meta;
    g_fake = Fake{};
  }
  ~Fixture() { ClrRuntime::set_instance(nullptr); }
};

}  // namespace

TEST_CASE("coreclr runtime: install sets the event mask and refuses what .NET cannot do yet", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.calls = true;
  c.late = true;  // attach: .NET takes enter/leave hooks only at Initialize
  CHECK_FALSE(f.runtime.install(c, f.env, error));
  CHECK_THAT(error, mlpd_test::contains("calls"));
  CHECK(g_fake.mapper == nullptr);
  c = {};
  c.mask = format::MASK_GC_ALLOC;
  c.alloc_sample = 100000;
  CHECK_FALSE(f.runtime.install(c, f.env, error));
  CHECK_THAT(error, mlpd_test::contains("alloc-sample"));
  CHECK(g_fake.low == 0);  // nothing asked of the runtime by a refused install
  CHECK(ClrRuntime::instance() == nullptr);

  c = {};
  c.mask = format::MASK_EXCEPTION | format::MASK_GC | format::MASK_COUNTER;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK(ClrRuntime::instance() == &f.runtime);
  CHECK((g_fake.low & monitor::kJitCompilation) != 0);
  CHECK((g_fake.low & monitor::kThreads) != 0);
  CHECK((g_fake.low & monitor::kExceptions) != 0);
  CHECK((g_fake.low & monitor::kSuspends) != 0);
  CHECK((g_fake.low & monitor::kGc) == 0);  // MONITOR_GC would turn concurrent GC off
  CHECK((g_fake.high & monitor_high::kBasicGc) != 0);
  CHECK(f.runtime.summary() == "runtime: .NET 10.0.12 (CoreCLR), ICorProfilerInfo12");
  // Allocation callbacks only when `alloc` was asked for at start (the runtime takes them at
  // Initialize only), and then both the monitor bit and the enable bit.
  CHECK((g_fake.low & (monitor::kObjectAllocated | monitor::kEnableObjectAllocated)) == 0);
  f.runtime.set_event_mask(format::MASK_GC_ALLOC | format::MASK_GC);
  CHECK(f.runtime.event_mask() == format::MASK_GC);  // alloc cannot come later
}

TEST_CASE("coreclr runtime: heapshot-on-shutdown takes one heapshot at the runtime's shutdown", "[coreclr]") {
  for (const HRESULT hr : {kS_OK, kE_FAIL}) {
    Fixture f;
    g_force_calls = 0;
    g_force_hr = hr;
    std::string error;
    runtime::Config c;
    c.heapshot_on_shutdown = true;
    c.mask = format::MASK_GC | format::MASK_GC_ROOT;
    REQUIRE(f.runtime.install(c, f.env, error));
    // MONITOR_GC at Initialize (the runtime turns concurrent GC off only then), cleared once it runs.
    CHECK((g_fake.low & monitor::kGc) != 0);
    f.runtime.module_loaded(0x7000);
    CHECK((g_fake.low & monitor::kGc) == 0);
    CHECK(f.runtime.heapshots_done() == 0);
    const auto t0 = std::chrono::steady_clock::now();
    f.runtime.runtime_shutdown();
    const auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(g_force_calls.load() == 1);
    // Taken by our thread while Shutdown waited, or, refused by the runtime, given up at once (not
    // after the 30 s a collection that makes no progress is given).
    CHECK(f.runtime.heapshots_done() == (hr == kS_OK ? 1u : 0u));
    CHECK(waited < std::chrono::seconds(3));
    CHECK((g_fake.low & monitor::kGc) == 0);  // switched on around the collection only
    f.runtime.runtime_shutdown();  // once per run
    CHECK(g_force_calls.load() == 1);
  }
  g_force_hr = 0;
}

TEST_CASE("coreclr runtime: exact allocations are asked for at Initialize", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_GC_ALLOC;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK((g_fake.low & monitor::kObjectAllocated) != 0);
  CHECK((g_fake.low & monitor::kEnableObjectAllocated) != 0);
  f.runtime.set_event_mask(0);
  CHECK(f.runtime.event_mask() == 0);
  f.runtime.set_event_mask(format::MASK_GC_ALLOC);
  CHECK(f.runtime.event_mask() == format::MASK_GC_ALLOC);
}

TEST_CASE("coreclr runtime: one method_jit per code body, named in Mono's style, module first", "[coreclr]") {
  Fixture f;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  take(f.meta);  // the domain
  f.runtime.assembly_loaded(0x8000);
  f.runtime.function_compiled(0x5000, false);
  std::vector<Event> events = take(f.meta);
  REQUIRE(events.size() == 4);
  CHECK(events[0].kind == EventKind::image_load);
  CHECK(events[0].ptr == 0x7000);
  CHECK(events[0].name == "/app/DotnetPrograms.dll");
  CHECK(events[1].kind == EventKind::assembly_load);
  CHECK(events[1].ptr2 == 0x7000);
  CHECK(events[1].name == "DotnetPrograms");
  for (int i = 2; i < 4; ++i) {
    CHECK(events[i].kind == EventKind::method_jit);
    CHECK(events[i].method == 0x5000);
    CHECK(events[i].name == "MlpdTests.Work/Inner:Sum (int)");
  }
  CHECK(events[2].ptr == 0x10000);
  CHECK(events[2].size == 0x40);
  CHECK(events[3].ptr == 0x20000);
  CHECK(events[3].size == 0x80);
  // Compiled again with nothing new: nothing written. A new tier: its body only.
  f.runtime.function_compiled(0x5000, false);
  CHECK(take(f.meta).empty());
  g_fake.starts.push_back(0x30000);
  events = take((f.runtime.function_compiled(0x5000, false), f.meta));
  REQUIRE(events.size() == 1);
  CHECK(events[0].ptr == 0x30000);
  CHECK(events[0].size == 0xC0);
  CHECK(events[0].name == "MlpdTests.Work/Inner:Sum (int)");
  // Stopped: nothing more.
  f.runtime.stop();
  g_fake.starts.push_back(0x40000);
  f.runtime.function_compiled(0x5000, false);
  CHECK(take(f.meta).empty());
}

TEST_CASE("coreclr runtime: threads start on their own thread, with the name given before", "[coreclr]") {
  Fixture f;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  take(f.meta);
  const auto self = static_cast<uint64_t>(pthread_self());
  const auto os = static_cast<DWORD>(::syscall(SYS_gettid));
  f.runtime.thread_created(0xA0);
  f.runtime.thread_named(0xA0, u"worker-1", 8);
  CHECK(take(f.meta).empty());                  // not started yet: the name waits
  f.runtime.thread_assigned(0xA0, os + 1);      // another thread's id (called elsewhere): ignored
  CHECK(take(f.meta).empty());
  f.runtime.thread_assigned(0xA0, os);
  std::vector<Event> events = take(f.meta);
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind == EventKind::thread_start);
  CHECK(events[0].ptr == self);
  CHECK(events[1].kind == EventKind::thread_name);
  CHECK(events[1].name == "worker-1");
  f.runtime.thread_named(0xA0, u"renamed", 7);
  events = take(f.meta);
  REQUIRE(events.size() == 1);
  CHECK(events[0].name == "renamed");
  REQUIRE(f.runtime.os_threads().size() == 1);
  CHECK(f.runtime.os_threads()[0].os_tid == static_cast<int>(os));
  f.runtime.thread_destroyed(0xA0);
  events = take(f.meta);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == EventKind::thread_end);
  CHECK(events[0].ptr == self);
  f.runtime.end_remaining_threads();  // ended already: nothing twice
  CHECK(take(f.meta).empty());
}

namespace {
HRESULT info_code2_none(ProfilerInfo*, FunctionID, ULONG32, ULONG32* count, CodeInfo*) {
  *count = 0;
  return kE_FAIL;
}
}  // namespace

TEST_CASE("coreclr runtime: code published after the method was named is described at the next round",
          "[coreclr]") {
  Fixture f;
  f.table.GetCodeInfo2 = &info_code2_none;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  take(f.meta);
  g_fake.starts.clear();  // ReadyToRun code at its cached-function search: not published yet
  f.runtime.function_compiled(0x5000, false);
  std::vector<Event> events = take(f.meta);
  REQUIRE(events.size() == 1);  // the method, without code
  CHECK(events[0].kind == EventKind::method_jit);
  CHECK(events[0].ptr == 0);
  CHECK(events[0].name == "MlpdTests.Work/Inner:Sum (int)");
  f.runtime.round();  // still nothing: nothing written
  CHECK(take(f.meta).empty());
  g_fake.starts = {0x10000};
  f.runtime.round();
  events = take(f.meta);
  REQUIRE(events.size() == 1);
  CHECK(events[0].ptr == 0x10000);
  CHECK(events[0].size == 0x40);
  f.runtime.round();  // described: not again
  CHECK(take(f.meta).empty());
}

TEST_CASE("coreclr runtime: counters named after .NET's metrics", "[coreclr]") {
  Fixture f;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  std::vector<runtime::Counter> counters;
  f.runtime.take_new_counters(counters);
  REQUIRE(counters.size() == 8);
  std::vector<runtime::Counter> again;
  f.runtime.take_new_counters(again);
  CHECK(again.empty());  // given once
  auto value = [&](const std::string& name) {
    for (const runtime::Counter& c : counters)
      if (c.desc.name == name) {
        uint64_t bits = ~uint64_t{0};
        CHECK(f.runtime.read_counter(c, bits));
        CHECK(c.desc.section == format::COUNTER_SECTION_PERFCOUNTERS);
        CHECK(c.desc.section_name == "System.Runtime");
        return bits;
      }
    FAIL("no counter " << name);
    return uint64_t{0};
  };
  CHECK(value("dotnet.jit.compiled_methods") == 0);
  f.runtime.function_compiled(0x5000, false);
  f.runtime.function_compiled(0x5000, false);
  CHECK(value("dotnet.jit.compiled_methods") == 2);
  const BOOL gen2[] = {1, 1, 1, 0};
  const BOOL gen0[] = {1, 0, 0, 0};
  f.runtime.gc_started(4, gen2);
  f.runtime.gc_finished();
  f.runtime.gc_started(4, gen0);
  f.runtime.gc_finished();
  CHECK(value("dotnet.gc.collections.gen0") == 2);  // as GC.CollectionCount(0) counts: older ones too
  CHECK(value("dotnet.gc.collections.gen1") == 1);
  CHECK(value("dotnet.gc.collections.gen2") == 1);
  f.runtime.exception_thrown(0x1234);
  CHECK(value("dotnet.exceptions") == 1);
  f.runtime.thread_created(0xB0);
  f.runtime.thread_assigned(0xB0, static_cast<DWORD>(::syscall(SYS_gettid)));
  CHECK(value("dotnet.thread.count") == 1);
  f.runtime.thread_destroyed(0xB0);
  CHECK(value("dotnet.thread.count") == 0);
}

TEST_CASE("coreclr runtime: monitor starts an EventPipe session for the contention events", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_MONITOR | format::MASK_GC;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK(g_fake.sessions == 1);
  CHECK(g_fake.provider == u"Microsoft-Windows-DotNETRuntime");
  CHECK(g_fake.keywords == 0x4000);
  CHECK(g_fake.level == 4);
  CHECK(g_fake.rundown == 0);
  CHECK((g_fake.high & monitor_high::kEventPipe) != 0);  // EventPipeEventDelivered
  CHECK((g_fake.low & monitor::kObjectAllocated) == 0);
  // Asked for at start: monitor may go and come back.
  f.runtime.set_event_mask(format::MASK_GC);
  CHECK(f.runtime.event_mask() == format::MASK_GC);
  f.runtime.set_event_mask(format::MASK_GC | format::MASK_MONITOR);
  CHECK(f.runtime.event_mask() == (format::MASK_GC | format::MASK_MONITOR));
  f.runtime.detach();
  CHECK(g_fake.stopped == 1);
}

TEST_CASE("coreclr runtime: no session without monitor or alloc-sample - events +monitor starts one later",
          "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_GC;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK(g_fake.sessions == 0);
  CHECK((g_fake.high & monitor_high::kEventPipe) == 0);
  const DWORD low = g_fake.low;
  f.runtime.set_event_mask(format::MASK_GC | format::MASK_MONITOR);
  CHECK(f.runtime.event_mask() == (format::MASK_GC | format::MASK_MONITOR));
  CHECK(g_fake.sessions == 1);
  CHECK(g_fake.keywords == 0x4000);
  CHECK((g_fake.high & monitor_high::kEventPipe) != 0);
  CHECK(g_fake.low == low);  // nothing else changed
  f.runtime.set_event_mask(format::MASK_GC);
  f.runtime.set_event_mask(format::MASK_GC | format::MASK_MONITOR);
  CHECK(g_fake.sessions == 1);  // one session, kept
  f.runtime.detach();
  CHECK(g_fake.stopped == 1);
}

TEST_CASE("coreclr runtime: events +monitor the runtime refuses stays off", "[coreclr]") {
  Fixture f;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  g_fake.session_hr = kE_FAIL;
  f.runtime.set_event_mask(format::MASK_MONITOR);
  CHECK(f.runtime.event_mask() == 0);
}

TEST_CASE("coreclr runtime: alloc-sample takes the runtime's AllocationSampled events at its fixed mean",
          "[coreclr]") {
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_GC_ALLOC;
  SECTION("100k on .NET 10") {
    Fixture f;
    c.alloc_sample = 102400;
    REQUIRE(f.runtime.install(c, f.env, error));
    CHECK(g_fake.keywords == 0x80000000000ull);
    CHECK((g_fake.high & monitor_high::kEventPipe) != 0);
    // Not the exact allocation callbacks (the allocator keeps its fast path).
    CHECK((g_fake.low & (monitor::kObjectAllocated | monitor::kEnableObjectAllocated)) == 0);
    CHECK(f.runtime.alloc_sample_bytes() == 102400);
  }
  SECTION("with monitor: one session, both keywords") {
    Fixture f;
    c.alloc_sample = 102400;
    c.mask |= format::MASK_MONITOR;
    REQUIRE(f.runtime.install(c, f.env, error));
    CHECK(g_fake.sessions == 1);
    CHECK(g_fake.keywords == (0x80000000000ull | 0x4000));
  }
  SECTION("another mean: refused, saying the runtime's") {
    Fixture f;
    c.alloc_sample = 512 * 1024;
    CHECK_FALSE(f.runtime.install(c, f.env, error));
    CHECK_THAT(error, mlpd_test::contains("alloc-sample=524288"));
    CHECK_THAT(error, mlpd_test::contains("100k"));
    CHECK(g_fake.sessions == 0);
    CHECK(g_fake.low == 0);
  }
  SECTION(".NET 9: no AllocationSampled event, refused") {
    Fixture f;
    ClrRuntime older{&f.info, Fixture::about_for(9)};
    c.alloc_sample = 102400;
    CHECK_FALSE(older.install(c, f.env, error));
    CHECK_THAT(error, mlpd_test::contains("alloc-sample"));
    CHECK_THAT(error, mlpd_test::contains(".NET 9.0.12"));
    CHECK(g_fake.sessions == 0);
  }
  SECTION("exact alloc: no session, the allocation callbacks") {
    Fixture f;
    REQUIRE(f.runtime.install(c, f.env, error));
    CHECK(g_fake.sessions == 0);
    CHECK((g_fake.low & monitor::kObjectAllocated) != 0);
    CHECK(f.runtime.alloc_sample_bytes() == 0);
  }
}

TEST_CASE("coreclr runtime: a session the runtime refuses is one line and nothing asked", "[coreclr]") {
  Fixture f;
  g_fake.session_hr = kE_FAIL;
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_MONITOR;
  CHECK_FALSE(f.runtime.install(c, f.env, error));
  CHECK_THAT(error, mlpd_test::contains("monitor"));
  CHECK_THAT(error, mlpd_test::contains("0x80004005"));
  CHECK(error.find('\n') == std::string::npos);
  CHECK(g_fake.low == 0);  // the event mask taken back
  CHECK(ClrRuntime::instance() == nullptr);
}

TEST_CASE("coreclr runtime: with monitor, dotnet.monitor.lock_contentions counts the runtime's contentions",
          "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.mask = format::MASK_MONITOR;
  REQUIRE(f.runtime.install(c, f.env, error));
  std::vector<runtime::Counter> counters;
  f.runtime.take_new_counters(counters);
  REQUIRE(counters.size() == 9);
  const runtime::Counter& lc = counters.back();
  CHECK(lc.desc.name == "dotnet.monitor.lock_contentions");
  // ContentionStart V2 (managed), ContentionStop V1.
  const uint8_t start[27] = {0, 0, 0, 0x68, 0x22, 0, 0xf0, 0x50, 0x7f, 0, 0, 0x98, 0xc2, 0x09, 0x25, 0x51, 0x7f, 0, 0, 0x64, 2};
  const uint8_t stop[11] = {};
  f.runtime.event_pipe_event(0x77, 81, 2, start, sizeof start, 0, 0, nullptr);
  f.runtime.event_pipe_event(0x77, 91, 1, stop, sizeof stop, 0, 0, nullptr);
  f.runtime.event_pipe_event(0x77, 81, 2, start, sizeof start, 0, 0, nullptr);
  f.runtime.event_pipe_event(0x77, 81, 2, start, 20, 0, 0, nullptr);  // cut short: not an event
  f.runtime.event_pipe_event(0x78, 81, 2, start, sizeof start, 0, 0, nullptr);  // another provider's id 81
  uint64_t bits = 0;
  CHECK(f.runtime.read_counter(lc, bits));
  CHECK(bits == 2);
}

TEST_CASE("coreclr runtime: no lock-contention counter without monitor", "[coreclr]") {
  Fixture f;
  std::string error;
  REQUIRE(f.runtime.install({}, f.env, error));
  std::vector<runtime::Counter> counters;
  f.runtime.take_new_counters(counters);
  CHECK(counters.size() == 8);
  for (const runtime::Counter& c : counters) CHECK(c.desc.name != "dotnet.monitor.lock_contentions");
}

#if defined(__x86_64__)
TEST_CASE("coreclr runtime: calls sets the hooks, the mapper describes and hooks each method", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.calls = true;
  c.calldepth = 40;
  c.mask = format::MASK_EXCEPTION;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK((g_fake.low & monitor::kEnterLeave) != 0);
  CHECK((g_fake.low & monitor::kDisableInlining) != 0);  // an inlined callee has no enter/leave
  CHECK((g_fake.low & monitor::kDisableAllNgenImages) == 0);  // ReadyToRun refused per method instead
  CHECK((g_fake.low & monitor::kExceptions) != 0);  // the unwind callbacks close frames
  CHECK((g_fake.low & (0x00004000u | 0x00008000u | 0x08000000u)) == 0);  // no args/retval/frame info: fast path
  REQUIRE(g_fake.mapper != nullptr);
  CHECK(g_fake.enter == reinterpret_cast<void*>(&mlpd_clr_enter_stub));
  CHECK(g_fake.leave == reinterpret_cast<void*>(&mlpd_clr_leave_stub));
  CHECK(g_fake.tailcall == reinterpret_cast<void*>(&mlpd_clr_tailcall_stub));
  CHECK(f.runtime.calls_enabled());
  CHECK_FALSE(f.runtime.use_cached_code(0x5000));  // precompiled code has no hooks: compiled again

  // The mapper: the method described before its code can run, the FunctionID as the hooks' value.
  auto mapper = reinterpret_cast<UINT_PTR (*)(FunctionID, void*, BOOL*)>(g_fake.mapper);
  BOOL hook = 0;
  CHECK(mapper(0x5000, nullptr, &hook) == 0x5000);
  CHECK(hook == 1);
  bool described = false;
  for (const Event& e : take(f.meta))
    if (e.kind == EventKind::method_jit && e.method == 0x5000) described = e.name == "MlpdTests.Work/Inner:Sum (int)";
  CHECK(described);
  // A dynamic method being compiled on this thread is not hooked (its FunctionID is given again later).
  calls::dynamic_compile(0x5000);
  hook = 1;
  mapper(0x5000, nullptr, &hook);
  CHECK(hook == 0);
  calls::dynamic_compile(0);

  // calldepth: the command port's, and pause (depth 0) / resume.
  CHECK(f.runtime.call_depth() == 40);
  f.runtime.set_call_depth(7);
  CHECK(f.runtime.call_depth() == 7);
  REQUIRE(f.runtime.pause());
  CHECK(f.runtime.call_depth() == 0);
  f.runtime.set_call_depth(9);  // while paused: kept for resume
  CHECK(f.runtime.call_depth() == 0);
  REQUIRE(f.runtime.resume());
  CHECK(f.runtime.call_depth() == 9);
  f.runtime.stop();
}

TEST_CASE("coreclr runtime: calls-min sets the eliding hooks - calls refused at attach", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.calls = true;
  c.calls_min_ns = 1000;
  REQUIRE(f.runtime.install(c, f.env, error));
  CHECK(g_fake.enter == reinterpret_cast<void*>(&mlpd_clr_enter_min_stub));
  CHECK(g_fake.leave == reinterpret_cast<void*>(&mlpd_clr_leave_min_stub));
  f.runtime.stop();
  CHECK(f.runtime.late_refusal(c).starts_with("calls"));
  c.calls = false;
  CHECK(f.runtime.late_refusal(c).find("calls") == std::string::npos);
}
#else
TEST_CASE("coreclr runtime: calls is refused where the stubs are not built", "[coreclr]") {
  Fixture f;
  std::string error;
  runtime::Config c;
  c.calls = true;
  CHECK_FALSE(f.runtime.install(c, f.env, error));
  CHECK_THAT(error, mlpd_test::contains("calls"));
}
#endif

TEST_CASE("coreclr callspec: Mono's syntax on our names, later items override earlier ones", "[coreclr]") {
  CallSpec spec;
  std::string error;
  const std::string work = "MlpdTests.Work:Sum (int)";
  const std::string inner = "MlpdTests.Work/Inner:Run<int> (int,string)";
  const std::string console = "System.Console:WriteLine (string)";
  REQUIRE(spec.parse("all", error));
  CHECK(spec.matches(work, "App", false));
  REQUIRE(spec.parse("program", error));
  CHECK(spec.matches(work, "App", true));
  CHECK_FALSE(spec.matches(console, "System.Console", false));
  REQUIRE(spec.parse("program,-M:MlpdTests.Work:Sum", error));
  CHECK_FALSE(spec.matches(work, "App", true));  // the later exclusion wins
  CHECK(spec.matches(inner, "App", true));
  REQUIRE(spec.parse("-M:MlpdTests.Work:Sum,program", error));
  CHECK(spec.matches(work, "App", true));  // and a later inclusion wins back
  REQUIRE(spec.parse("M:Console:WriteLine(string)", error));  // a bare type name, any namespace; args
  CHECK(spec.matches(console, "System.Console", false));
  CHECK_FALSE(spec.matches("System.Console:WriteLine (int)", "System.Console", false));
  REQUIRE(spec.parse("M:*:Run", error));  // any type; generic arguments are not part of the name
  CHECK(spec.matches(inner, "App", false));
  REQUIRE(spec.parse("T:MlpdTests.Work/Inner", error));
  CHECK(spec.matches(inner, "App", false));
  CHECK_FALSE(spec.matches(work, "App", false));
  REQUIRE(spec.parse("N:MlpdTests", error));
  CHECK(spec.matches(work, "App", false));
  CHECK(spec.matches(inner, "App", false));  // a nested type is in its outer type's namespace
  CHECK_FALSE(spec.matches(console, "System.Console", false));
  REQUIRE(spec.parse("System.Console", error));  // an assembly by its simple name
  CHECK(spec.matches(console, "System.Console", false));
  REQUIRE(spec.parse("E:System.Exception,wrapper,disabled,none", error));  // accepted, match nothing
  CHECK_FALSE(spec.matches(work, "App", true));
  CHECK_FALSE(spec.parse("M:nomethod", error));
  CHECK_THAT(error, mlpd_test::contains("M:Type:Method"));
  CHECK_FALSE(spec.parse("program,,all", error));
  CHECK_FALSE(spec.parse("-", error));
  CHECK_FALSE(spec.parse("T:", error));
}
