// The class factory and the profiler object (runtime-hooks/src/coreclr/profiler.cpp), driven as the
// runtime drives them: DllGetClassObject's work, IClassFactory::CreateInstance, QueryInterface for
// each callback level, the out-parameters the runtime reads back, and Initialize with a fake
// ICorProfilerInfo that answers some interface levels only.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "coreclr/preload_env.h"
#include "coreclr/profiler.h"
#include "mlpd_catch.h"

using namespace mlpd::coreclr;

TEST_CASE("coreclr: DllGetClassObject answers mlpd's CLSID only", "[coreclr]") {
  void* out = reinterpret_cast<void*>(1);
  CHECK(get_class_object(&kIID_IUnknown, &kIID_IClassFactory, &out) == kCLASS_E_CLASSNOTAVAILABLE);
  CHECK(out == nullptr);
  REQUIRE(get_class_object(&kMlpdClsid, &kIID_IClassFactory, &out) == kS_OK);
  REQUIRE(out != nullptr);
  auto* factory = static_cast<ClassFactory*>(out);
  void* again = nullptr;
  CHECK(factory->table->QueryInterface(factory, &kIID_IUnknown, &again) == kS_OK);
  CHECK(again == factory);
  CHECK(factory->table->QueryInterface(factory, &kIID_ICorProfilerCallback, &again) == kE_NOINTERFACE);

  // CreateInstance: no aggregation; the profiler object for any callback level.
  void* object = nullptr;
  int outer = 0;
  CHECK(factory->table->CreateInstance(factory, &outer, &kIID_ICorProfilerCallback2, &object) ==
        kCLASS_E_NOAGGREGATION);
  REQUIRE(factory->table->CreateInstance(factory, nullptr, &kIID_ICorProfilerCallback2, &object) == kS_OK);
  auto* profiler = static_cast<ProfilerCallback*>(object);
  CHECK(profiler == profiler_object());
  for (const Guid* iid : {&kIID_ICorProfilerCallback, &kIID_ICorProfilerCallback3, &kIID_ICorProfilerCallback8,
                          &kIID_ICorProfilerCallback10, &kIID_ICorProfilerCallback11, &kIID_IUnknown}) {
    void* p = nullptr;
    CHECK(profiler->table->QueryInterface(profiler, iid, &p) == kS_OK);
    CHECK(p == profiler);
  }
  void* p = reinterpret_cast<void*>(1);
  CHECK(profiler->table->QueryInterface(profiler, &kIID_ICorProfilerInfo, &p) == kE_NOINTERFACE);
  CHECK(p == nullptr);
}

TEST_CASE("coreclr: every callback slot is filled and answers S_OK", "[coreclr]") {
  const CallbackTable11& t = callback_table();
  void* const* slots = reinterpret_cast<void* const*>(&t);
  for (size_t i = 0; i < sizeof t / sizeof(void*); ++i) {
    INFO("slot " << i);
    CHECK(slots[i] != nullptr);
  }
  ProfilerCallback* self = profiler_object();
  CHECK(t.ClassLoadFinished(self, 1, 0) == kS_OK);
  CHECK(t.ExceptionCLRCatcherExecute(self) == kS_OK);
  CHECK(t.EventPipeProviderCreated(self, 7) == kS_OK);
  // The out-parameters are the runtime's defaults, never left unset.
  BOOL b = 7;
  CHECK(t.JITCachedFunctionSearchStarted(self, 1, &b) == kS_OK);
  CHECK(b == 1);
  b = 7;
  CHECK(t.JITInlining(self, 1, 2, &b) == kS_OK);
  CHECK(b == 1);
  b = 7;
  CHECK(t.LoadAsNotificationOnly(self, &b) == kS_OK);
  CHECK(b == 0);
  // Attach is refused (not built yet).
  CHECK(t.InitializeForAttach(self, nullptr, nullptr, 0) == kE_FAIL);
}

namespace {
// A fake runtime object answering ICorProfilerInfo up to `g_fake_level`.
int g_fake_level = 0;
int g_started = 0;
RuntimeInfo g_seen;
bool g_accept = true;

HRESULT fake_qi(ProfilerInfo* self, const Guid* riid, void** out) {
  const Guid* levels[] = {nullptr, &kIID_ICorProfilerInfo, &kIID_ICorProfilerInfo2, &kIID_ICorProfilerInfo3,
                          &kIID_ICorProfilerInfo4, &kIID_ICorProfilerInfo5, &kIID_ICorProfilerInfo6,
                          &kIID_ICorProfilerInfo7, &kIID_ICorProfilerInfo8, &kIID_ICorProfilerInfo9,
                          &kIID_ICorProfilerInfo10, &kIID_ICorProfilerInfo11, &kIID_ICorProfilerInfo12};
  for (int i = 1; i <= g_fake_level; ++i)
    if (*levels[i] == *riid) {
      *out = self;
      return kS_OK;
    }
  *out = nullptr;
  return kE_NOINTERFACE;
}
HRESULT fake_runtime_information(ProfilerInfo*, USHORT*, RuntimeType* type, USHORT* major, USHORT* minor,
                                 USHORT* build, USHORT* qfe, ULONG capacity, ULONG* length, WCHAR* text) {
  *type = RuntimeType::kCoreClr;
  *major = 10;
  *minor = 0;
  *build = 12;
  *qfe = 0;
  const char16_t v[] = u"10.0.12";
  const ULONG n = sizeof v / sizeof v[0];
  *length = n;
  if (capacity < n) return kERROR_INSUFFICIENT_BUFFER;
  std::memcpy(text, v, sizeof v);
  return kS_OK;
}
bool fake_start(ProfilerInfo*, const RuntimeInfo& r) {
  ++g_started;
  g_seen = r;
  return g_accept;
}
}  // namespace

TEST_CASE("coreclr: Initialize asks for the highest ICorProfilerInfo and starts the agent", "[coreclr]") {
  InfoTable12 table{};
  table.QueryInterface = &fake_qi;
  table.GetRuntimeInformation = &fake_runtime_information;
  ProfilerInfo runtime_object{&table};
  ProfilerCallback* self = profiler_object();
  set_start(&fake_start, nullptr);

  // Below Info5 (no SetEventMask2): refused, the agent is not started.
  g_fake_level = 4;
  g_started = 0;
  CHECK(callback_table().Initialize(self, &runtime_object) == kE_FAIL);
  CHECK(g_started == 0);
  CHECK_FALSE(initialized());

  // The start refuses (a bad option): Initialize fails, nothing initialized.
  g_fake_level = 9;
  g_accept = false;
  CHECK(callback_table().Initialize(self, &runtime_object) == kE_FAIL);
  CHECK(g_started == 1);
  CHECK(g_seen.info_level == 9);
  CHECK_FALSE(initialized());

  g_fake_level = 12;
  g_accept = true;
  CHECK(callback_table().Initialize(self, &runtime_object) == kS_OK);
  CHECK(g_started == 2);
  CHECK(g_seen.info_level == 12);
  CHECK(g_seen.major == 10);
  CHECK(g_seen.build == 12);
  CHECK(g_seen.version == "10.0.12");
  CHECK(initialized());
  set_start(nullptr, nullptr);
}

TEST_CASE("coreclr: GUID texts", "[coreclr]") {
  Guid g{};
  CHECK(parse_guid(kMlpdClsidText, g));
  CHECK(g == kMlpdClsid);
  CHECK(parse_guid("9f52a29b-f34a-4ac8-bf3a-ed27d2c3114b", g));
  CHECK(g == kMlpdClsid);
  CHECK_FALSE(parse_guid("{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B", g));
  CHECK_FALSE(parse_guid("9F52A29B-F34A-4AC8-BF3A-ED27D2C3114", g));
  CHECK_FALSE(parse_guid("9F52A29B+F34A-4AC8-BF3A-ED27D2C3114B", g));
  CHECK_FALSE(parse_guid("9F52A29B-F34A-4AC8-BF3A-ED27D2C3114G", g));
  CHECK(is_mlpd_clsid("{9f52a29b-F34A-4AC8-BF3A-ED27D2C3114B}"));
  CHECK_FALSE(is_mlpd_clsid("{846F5F1C-F9AE-4B07-969E-05C26BC060D8}"));
}

namespace {
struct FakeEnv {
  std::map<std::string, std::string> vars;
  const char* get(const char* name) const {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};
PreloadResult run(FakeEnv& env) {
  return configure_preload(
      "/opt/mlpd/lib/libmlpd.so", [&](const char* n) { return env.get(n); },
      [&](const char* n, const char* v) { env.vars[n] = v; });
}
}  // namespace

TEST_CASE("coreclr: LD_PRELOAD in a .NET host sets the profiler variables when unset", "[coreclr]") {
  FakeEnv env;
  const PreloadResult r = run(env);
  CHECK(r.decision == PreloadDecision::kSet);
  CHECK(env.vars["CORECLR_ENABLE_PROFILING"] == "1");
  CHECK(env.vars["CORECLR_PROFILER"] == kMlpdClsidText);
  CHECK(env.vars["CORECLR_PROFILER_PATH"] == "/opt/mlpd/lib/libmlpd.so");
  CHECK(env.vars.size() == 3);
  // Run again (a child of the first: the variables are inherited): ours already, nothing changes.
  const PreloadResult again = run(env);
  CHECK(again.decision == PreloadDecision::kAlreadyOurs);
  CHECK(env.vars.size() == 3);
}

TEST_CASE("coreclr: LD_PRELOAD leaves another profiler's variables alone", "[coreclr]") {
  FakeEnv other;
  other.vars = {{"CORECLR_ENABLE_PROFILING", "1"},
                {"CORECLR_PROFILER", "{846F5F1C-F9AE-4B07-969E-05C26BC060D8}"},
                {"CORECLR_PROFILER_PATH", "/opt/datadog/Datadog.Trace.ClrProfiler.Native.so"}};
  const auto before = other.vars;
  PreloadResult r = run(other);
  CHECK(r.decision == PreloadDecision::kOtherProfiler);
  CHECK_THAT(r.note, mlpd_test::contains("846F5F1C"));
  CHECK(other.vars == before);

  FakeEnv path_only;
  path_only.vars = {{"CORECLR_PROFILER_PATH_64", "/x/other.so"}};
  r = run(path_only);
  CHECK(r.decision == PreloadDecision::kOtherProfiler);
  CHECK(path_only.vars.size() == 1);

  FakeEnv disabled;
  disabled.vars = {{"CORECLR_ENABLE_PROFILING", "0"}};
  r = run(disabled);
  CHECK(r.decision == PreloadDecision::kDisabled);
  CHECK(disabled.vars.size() == 1);
}

TEST_CASE("coreclr: a .NET host is the dotnet muxer or an apphost", "[coreclr]") {
  CHECK(is_dotnet_host("/usr/share/dotnet/dotnet"));  // by name, whether or not it exists here
  CHECK_FALSE(is_dotnet_host("/bin/sh"));
  CHECK_FALSE(is_dotnet_host("/nonexistent/program"));
  CHECK_FALSE(is_dotnet_host(nullptr));
  // An apphost carries libhostfxr.so's name: a file with the name across a 64 KiB chunk boundary.
  char path[] = "/tmp/mlpd_apphost_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::string body(65536 - 5, 'x');
  body += "libhostfxr.so";
  body += std::string(1000, 'y');
  REQUIRE(write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()));
  close(fd);
  CHECK(is_dotnet_host(path));
  // The same without the name: not a host.
  std::string plain(70000, 'z');
  FILE* f = std::fopen(path, "wb");
  REQUIRE(f);
  std::fwrite(plain.data(), 1, plain.size(), f);
  std::fclose(f);
  CHECK_FALSE(is_dotnet_host(path));
  unlink(path);
}
