// The class factory and the profiler object (profiler.h). Both are static objects: the runtime
// creates one profiler for the life of the process and never unloads a profiler that did not
// detach, so reference counts are answered but nothing is ever freed.
#include "coreclr/profiler.h"

#include <atomic>

#include "coreclr/clr_callbacks.h"
#include "coreclr/clr_runtime.h"

namespace mlpd::coreclr {

namespace {

std::atomic<StartFn> g_start{nullptr};
std::atomic<ShutdownFn> g_shutdown{nullptr};
std::atomic<AttachFn> g_attach{nullptr};
std::atomic<AttachCompleteFn> g_attach_complete{nullptr};
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_shut_down{false};

// A slot's default: does nothing, returns S_OK (0). Every slot gets one first, then the ones mlpd
// handles are set; a table with an empty slot would crash the host when the runtime calls it.
template <class F>
struct Noop;
template <class R, class... A>
struct Noop<R (*)(A...)> {
  static R call(A...) { return R{}; }
};

bool is_callback_iid(const Guid& iid) {
  static constexpr const Guid* kOurs[] = {
      &kIID_IUnknown,           &kIID_ICorProfilerCallback,  &kIID_ICorProfilerCallback2,
      &kIID_ICorProfilerCallback3, &kIID_ICorProfilerCallback4, &kIID_ICorProfilerCallback5,
      &kIID_ICorProfilerCallback6, &kIID_ICorProfilerCallback7, &kIID_ICorProfilerCallback8,
      &kIID_ICorProfilerCallback9, &kIID_ICorProfilerCallback10, &kIID_ICorProfilerCallback11,
  };
  for (const Guid* g : kOurs)
    if (*g == iid) return true;
  return false;
}

// ---- the profiler object

HRESULT profiler_query_interface(ProfilerCallback* self, const Guid* riid, void** object) {
  if (!object) return kE_POINTER;
  if (riid && is_callback_iid(*riid)) {
    *object = self;
    return kS_OK;
  }
  *object = nullptr;
  return kE_NOINTERFACE;
}
ULONG profiler_add_ref(ProfilerCallback*) { return 1; }
ULONG profiler_release(ProfilerCallback*) { return 1; }

// The runtime's ICorProfilerInfo at the highest level it answers (12 down to 5: SetEventMask2 is
// Info5's and mlpd needs it).
ProfilerInfo* query_info(void* unknown, int& level) {
  struct Unknown {
    const InfoTable1* table;  // IUnknown's three slots come first in every table
  };
  static constexpr const Guid* kLevels[] = {&kIID_ICorProfilerInfo12, &kIID_ICorProfilerInfo11,
                                            &kIID_ICorProfilerInfo10, &kIID_ICorProfilerInfo9,
                                            &kIID_ICorProfilerInfo8,  &kIID_ICorProfilerInfo7,
                                            &kIID_ICorProfilerInfo6,  &kIID_ICorProfilerInfo5};
  auto* u = static_cast<Unknown*>(unknown);
  if (!u || !u->table) return nullptr;
  for (size_t i = 0; i < sizeof kLevels / sizeof kLevels[0]; ++i) {
    void* out = nullptr;
    if (succeeded(u->table->QueryInterface(reinterpret_cast<ProfilerInfo*>(u), kLevels[i], &out)) && out) {
      level = 12 - static_cast<int>(i);
      return static_cast<ProfilerInfo*>(out);
    }
  }
  return nullptr;
}

RuntimeInfo runtime_info(ProfilerInfo* info, int level) {
  RuntimeInfo r;
  r.info_level = level;
  WCHAR text[64] = {};
  ULONG length = 0;
  RuntimeType type{};
  if (succeeded(info->table->GetRuntimeInformation(info, nullptr, &type, &r.major, &r.minor, &r.build, &r.qfe,
                                                   63, &length, text))) {
    for (ULONG i = 0; i < length && i < 63 && text[i]; ++i)
      r.version += text[i] < 0x80 ? static_cast<char>(text[i]) : '?';
  }
  return r;
}

HRESULT profiler_initialize(ProfilerCallback*, void* info_unknown) {
  const StartFn start = g_start.load(std::memory_order_acquire);
  int level = 0;
  ProfilerInfo* info = query_info(info_unknown, level);
  // No info at Info5 or above (a runtime older than .NET Core 3): refused; the runtime goes on
  // without a profiler.
  if (!info || !start) return kE_FAIL;
  if (!start(info, runtime_info(info, level))) {
    // Profiling is off (a bad option, an output that cannot be opened: the start said why): no
    // event is asked for, and returning a failure lets the runtime drop the profiler.
    return kE_FAIL;
  }
  g_initialized.store(true, std::memory_order_release);
  return kS_OK;
}

HRESULT profiler_shutdown(ProfilerCallback*) {
  if (!g_initialized.load(std::memory_order_acquire) || g_shut_down.exchange(true)) return kS_OK;
  if (const ShutdownFn f = g_shutdown.load(std::memory_order_acquire)) f();
  return kS_OK;
}

// Out-parameters the runtime reads back: answered with the runtime's own default (use the
// ReadyToRun code, except where `calls` needs the method compiled with its hooks; inline as the JIT
// decides; a full profiler, not a notification-only one).
HRESULT cached_function_search_started(ProfilerCallback*, FunctionID function, BOOL* use_cached) {
  ClrRuntime* r = ClrRuntime::instance();
  if (use_cached) *use_cached = !r || r->use_cached_code(function) ? 1 : 0;
  return kS_OK;
}
HRESULT jit_inlining(ProfilerCallback*, FunctionID, FunctionID, BOOL* should_inline) {
  if (should_inline) *should_inline = 1;
  return kS_OK;
}
HRESULT load_as_notification_only(ProfilerCallback*, BOOL* notification_only) {
  if (notification_only) *notification_only = 0;
  return kS_OK;
}
// Attach (the diagnostics socket's AttachProfiler, `mlpd attach PID`): the runtime loaded the library
// (or found it loaded: it is never unloaded, -z nodelete) and created the profiler object; the
// agent starts late with the trigger's options. A detach (RequestProfilerDetach) and a second
// attach give the same object again: the flags are those of the new session.
HRESULT initialize_for_attach(ProfilerCallback*, void* info_unknown, void* data, UINT size) {
  const AttachFn attach = g_attach.load(std::memory_order_acquire);
  int level = 0;
  ProfilerInfo* info = query_info(info_unknown, level);
  if (!info || !attach) return kE_FAIL;
  if (!attach(info, runtime_info(info, level), data, size)) return kE_FAIL;
  g_shut_down.store(false, std::memory_order_release);
  g_initialized.store(true, std::memory_order_release);
  return kS_OK;
}
HRESULT attach_complete(ProfilerCallback*) {
  if (const AttachCompleteFn f = g_attach_complete.load(std::memory_order_acquire)) f();
  return kS_OK;
}
HRESULT detach_succeeded(ProfilerCallback*) {
  g_initialized.store(false, std::memory_order_release);
  return kS_OK;
}

CallbackTable11 make_callback_table() {
  CallbackTable11 t{};
#define MLPD_NOOP(ret, name, ...) t.name = &Noop<decltype(t.name)>::call;
  MLPD_IUNKNOWN_SLOTS(MLPD_NOOP)
  MLPD_CALLBACK_UPTO11(MLPD_NOOP)
#undef MLPD_NOOP
  t.QueryInterface = &profiler_query_interface;
  t.AddRef = &profiler_add_ref;
  t.Release = &profiler_release;
  t.Initialize = &profiler_initialize;
  t.Shutdown = &profiler_shutdown;
  t.JITCachedFunctionSearchStarted = &cached_function_search_started;
  t.JITInlining = &jit_inlining;
  t.LoadAsNotificationOnly = &load_as_notification_only;
  t.InitializeForAttach = &initialize_for_attach;
  t.ProfilerAttachComplete = &attach_complete;
  t.ProfilerDetachSucceeded = &detach_succeeded;
  fill_event_callbacks(t);
  return t;
}

const CallbackTable11 g_callback_table = make_callback_table();
ProfilerCallback g_profiler{&g_callback_table};

// ---- the class factory

HRESULT factory_query_interface(ClassFactory* self, const Guid* riid, void** object) {
  if (!object) return kE_POINTER;
  if (riid && (*riid == kIID_IUnknown || *riid == kIID_IClassFactory)) {
    *object = self;
    return kS_OK;
  }
  *object = nullptr;
  return kE_NOINTERFACE;
}
ULONG factory_add_ref(ClassFactory*) { return 1; }
ULONG factory_release(ClassFactory*) { return 1; }
HRESULT factory_create_instance(ClassFactory*, void* outer, const Guid* riid, void** object) {
  if (!object) return kE_POINTER;
  *object = nullptr;
  if (outer) return kCLASS_E_NOAGGREGATION;
  return profiler_query_interface(&g_profiler, riid, object);
}
HRESULT factory_lock_server(ClassFactory*, BOOL) { return kS_OK; }

const ClassFactoryTable g_factory_table{&factory_query_interface, &factory_add_ref, &factory_release,
                                        &factory_create_instance, &factory_lock_server};
ClassFactory g_factory{&g_factory_table};

}  // namespace

void set_attach(AttachFn attach, AttachCompleteFn complete) {
  g_attach.store(attach, std::memory_order_release);
  g_attach_complete.store(complete, std::memory_order_release);
}

void set_start(StartFn start, ShutdownFn shutdown) {
  g_start.store(start, std::memory_order_release);
  g_shutdown.store(shutdown, std::memory_order_release);
}

HRESULT get_class_object(const Guid* clsid, const Guid* iid, void** out) {
  if (!out) return kE_POINTER;
  *out = nullptr;
  if (!clsid || !(*clsid == kMlpdClsid)) return kCLASS_E_CLASSNOTAVAILABLE;
  return factory_query_interface(&g_factory, iid, out);
}

const CallbackTable11& callback_table() { return g_callback_table; }
ProfilerCallback* profiler_object() { return &g_profiler; }
bool initialized() { return g_initialized.load(std::memory_order_acquire); }

bool parse_guid(std::string_view text, Guid& out) {
  if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
  if (text.size() != 36) return false;
  auto hex = [](char c, uint32_t& v) {
    if (c >= '0' && c <= '9') v = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v = static_cast<uint32_t>(c - 'A' + 10);
    else return false;
    return true;
  };
  uint8_t bytes[16];
  size_t b = 0;
  for (size_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return false;
      ++i;
      continue;
    }
    uint32_t hi = 0, lo = 0;
    if (!hex(text[i], hi) || !hex(text[i + 1], lo)) return false;
    bytes[b++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  out.data1 = static_cast<uint32_t>(bytes[0]) << 24 | static_cast<uint32_t>(bytes[1]) << 16 |
              static_cast<uint32_t>(bytes[2]) << 8 | bytes[3];
  out.data2 = static_cast<uint16_t>(bytes[4] << 8 | bytes[5]);
  out.data3 = static_cast<uint16_t>(bytes[6] << 8 | bytes[7]);
  for (int i = 0; i < 8; ++i) out.data4[i] = bytes[8 + i];
  return true;
}

}  // namespace mlpd::coreclr
