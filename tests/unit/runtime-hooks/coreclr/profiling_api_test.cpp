// Our own declarations of CoreCLR's profiling interfaces (runtime-hooks/src/coreclr/profiling_api.h)
// against the facts of the documented IDL (dotnet/runtime src/coreclr/inc/corprof.idl): every table's
// method count (IUnknown's 3 included) and the slot of methods the runtime and mlpd use, counted by
// hand in the IDL. A method left out, doubled or moved changes a count or an offset here.
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "coreclr/profiling_api.h"
#include "mlpd_catch.h"

using namespace mlpd::coreclr;

namespace {
template <class Table>
constexpr std::size_t slots() {
  return sizeof(Table) / sizeof(void*);
}
constexpr std::size_t slot(std::size_t byte_offset) { return byte_offset / sizeof(void*); }
}  // namespace

TEST_CASE("coreclr: each table has the IDL's number of methods", "[coreclr]") {
  CHECK(slots<ClassFactoryTable>() == 5);
  CHECK(slots<CallbackTable1>() == 3 + 69);
  CHECK(slots<CallbackTable2>() == 3 + 69 + 8);
  CHECK(slots<CallbackTable3>() == 3 + 69 + 8 + 3);
  CHECK(slots<CallbackTable4>() == 3 + 69 + 8 + 3 + 6);
  CHECK(slots<CallbackTable8>() == 3 + 69 + 8 + 3 + 6 + 1 + 1 + 1 + 2);
  CHECK(slots<CallbackTable11>() == 98);
  CHECK(slots<InfoTable1>() == 3 + 33);
  CHECK(slots<InfoTable2>() == 3 + 33 + 21);
  CHECK(slots<InfoTable3>() == 3 + 33 + 21 + 14);
  CHECK(slots<InfoTable5>() == 3 + 33 + 21 + 14 + 10 + 2);
  CHECK(slots<InfoTable9>() == 3 + 33 + 21 + 14 + 10 + 2 + 1 + 3 + 3 + 3);
  CHECK(slots<InfoTable12>() == 108);
}

TEST_CASE("coreclr: methods sit in the IDL's slots", "[coreclr]") {
  CHECK(slot(offsetof(ClassFactoryTable, CreateInstance)) == 3);
  CHECK(slot(offsetof(ClassFactoryTable, LockServer)) == 4);

  CHECK(slot(offsetof(CallbackTable11, QueryInterface)) == 0);
  CHECK(slot(offsetof(CallbackTable11, Release)) == 2);
  CHECK(slot(offsetof(CallbackTable11, Initialize)) == 3);
  CHECK(slot(offsetof(CallbackTable11, Shutdown)) == 4);
  CHECK(slot(offsetof(CallbackTable11, ModuleLoadFinished)) == 14);
  CHECK(slot(offsetof(CallbackTable11, JITCompilationStarted)) == 23);
  CHECK(slot(offsetof(CallbackTable11, JITCompilationFinished)) == 24);
  CHECK(slot(offsetof(CallbackTable11, ThreadCreated)) == 29);
  CHECK(slot(offsetof(CallbackTable11, RuntimeSuspendStarted)) == 42);
  CHECK(slot(offsetof(CallbackTable11, ObjectAllocated)) == 50);
  CHECK(slot(offsetof(CallbackTable11, ExceptionThrown)) == 54);
  CHECK(slot(offsetof(CallbackTable11, ExceptionCLRCatcherExecute)) == 71);
  CHECK(slot(offsetof(CallbackTable11, ThreadNameChanged)) == 72);
  CHECK(slot(offsetof(CallbackTable11, GarbageCollectionStarted)) == 73);
  CHECK(slot(offsetof(CallbackTable11, GarbageCollectionFinished)) == 75);
  CHECK(slot(offsetof(CallbackTable11, InitializeForAttach)) == 80);
  CHECK(slot(offsetof(CallbackTable11, ReJITCompilationFinished)) == 85);
  CHECK(slot(offsetof(CallbackTable11, DynamicMethodJITCompilationFinished)) == 93);
  CHECK(slot(offsetof(CallbackTable11, DynamicMethodUnloaded)) == 94);
  CHECK(slot(offsetof(CallbackTable11, EventPipeEventDelivered)) == 95);
  CHECK(slot(offsetof(CallbackTable11, EventPipeProviderCreated)) == 96);
  CHECK(slot(offsetof(CallbackTable11, LoadAsNotificationOnly)) == 97);

  CHECK(slot(offsetof(InfoTable12, GetCurrentThreadID)) == 13);
  CHECK(slot(offsetof(InfoTable12, GetFunctionInfo)) == 15);
  CHECK(slot(offsetof(InfoTable12, SetEventMask)) == 16);
  CHECK(slot(offsetof(InfoTable12, GetModuleMetaData)) == 21);
  CHECK(slot(offsetof(InfoTable12, GetAssemblyInfo)) == 26);
  CHECK(slot(offsetof(InfoTable12, GetILToNativeMapping)) == 35);
  CHECK(slot(offsetof(InfoTable12, GetFunctionInfo2)) == 38);
  CHECK(slot(offsetof(InfoTable12, GetClassIDInfo2)) == 41);
  CHECK(slot(offsetof(InfoTable12, GetCodeInfo2)) == 42);
  CHECK(slot(offsetof(InfoTable12, GetGenerationBounds)) == 54);
  CHECK(slot(offsetof(InfoTable12, GetRuntimeInformation)) == 67);
  CHECK(slot(offsetof(InfoTable12, GetModuleInfo2)) == 70);
  CHECK(slot(offsetof(InfoTable12, EnumThreads)) == 71);
  CHECK(slot(offsetof(InfoTable12, SetEventMask2)) == 82);
  CHECK(slot(offsetof(InfoTable12, GetNativeCodeStartAddresses)) == 90);
  CHECK(slot(offsetof(InfoTable12, GetCodeInfo4)) == 92);
  // What an attach uses: the catch-up enumerations and the detach request (ICorProfilerInfo3 and 4).
  CHECK(slot(offsetof(InfoTable12, RequestProfilerDetach)) == 58);
  CHECK(slot(offsetof(InfoTable12, EnumModules)) == 66);
  CHECK(slot(offsetof(InfoTable12, EnumThreads)) == 71);
  CHECK(slot(offsetof(InfoTable12, EnumJITedFunctions2)) == 79);
  CHECK(slot(offsetof(CallbackTable11, ProfilerAttachComplete)) == 81);
  CHECK(slot(offsetof(CallbackTable11, ProfilerDetachSucceeded)) == 82);
  // The enumerators: IUnknown, then Skip, Reset, Clone, GetCount, Next.
  CHECK(slots<IdEnumTable>() == 8);
  CHECK(slot(offsetof(IdEnumTable, GetCount)) == 6);
  CHECK(slot(offsetof(IdEnumTable, Next)) == 7);
  CHECK(sizeof(FunctionAndRejit) == 16);
  CHECK(slot(offsetof(InfoTable12, EventPipeStartSession)) == 101);
  CHECK(slot(offsetof(InfoTable12, EventPipeAddProviderToSession)) == 102);
  CHECK(slot(offsetof(InfoTable12, EventPipeStopSession)) == 103);
  CHECK(slot(offsetof(InfoTable12, EventPipeGetProviderInfo)) == 105);
  CHECK(slot(offsetof(InfoTable12, EventPipeWriteEvent)) == 107);
}

// The EventPipe structures and parameters the runtime reads from us or hands us (corprof.idl:
// COR_PRF_EVENTPIPE_PROVIDER_CONFIG; EventPipeEventDelivered's twelve parameters after `this`).
TEST_CASE("coreclr: EventPipe declarations follow the IDL", "[coreclr]") {
  CHECK(sizeof(EventPipeProviderConfig) == 32);
  CHECK(offsetof(EventPipeProviderConfig, keywords) == 8);
  CHECK(offsetof(EventPipeProviderConfig, logging_level) == 16);
  CHECK(offsetof(EventPipeProviderConfig, filter_data) == 24);
  using Delivered = decltype(CallbackTable11::EventPipeEventDelivered);
  using Expected = HRESULT (*)(ProfilerCallback*, EVENTPIPE_PROVIDER, DWORD, DWORD, ULONG, LPCBYTE, ULONG, LPCBYTE,
                               const Guid*, const Guid*, ThreadID, ULONG, UINT_PTR*);
  constexpr bool delivered_ok = std::is_same_v<Delivered, Expected>;
  CHECK(delivered_ok);
  using Start = decltype(InfoTable12::EventPipeStartSession);
  constexpr bool start_ok =
      std::is_same_v<Start, HRESULT (*)(ProfilerInfo*, UINT32, EventPipeProviderConfig*, BOOL, EVENTPIPE_SESSION*)>;
  CHECK(start_ok);
  CHECK(sizeof(EVENTPIPE_SESSION) == 8);
}

TEST_CASE("coreclr: GUIDs parse as the runtime lays them out", "[coreclr]") {
  constexpr Guid g = guid("176FBED1-A55C-4796-98CA-A9DA0EF883E7");
  static_assert(g.data1 == 0x176FBED1u && g.data2 == 0xA55C && g.data3 == 0x4796);
  static_assert(g.data4[0] == 0x98 && g.data4[1] == 0xCA && g.data4[2] == 0xA9 && g.data4[7] == 0xE7);
  CHECK(g == kIID_ICorProfilerCallback);
  CHECK(!(g == kIID_ICorProfilerCallback2));
  // Lower-case digits are the same GUID.
  CHECK(guid("0d8fdcaa-6257-47bf-b1bf-94dac88466ee") == guid("0D8FDCAA-6257-47BF-B1BF-94DAC88466EE"));
  CHECK(kIID_IUnknown.data4[0] == 0xC0);
  CHECK(kIID_IUnknown.data4[7] == 0x46);
  // mlpd's class id and its text (what CORECLR_PROFILER carries) are the same GUID.
  CHECK(kMlpdClsid.data1 == 0x9F52A29Bu);
  CHECK(std::string_view(kMlpdClsidText).substr(1, 8) == "9F52A29B");
}

#include "coreclr/metadata_api.h"

TEST_CASE("coreclr: IMetaDataImport(2) tables follow cor.h", "[coreclr]") {
  CHECK(slots<MetaDataImportTable1>() == 3 + 62);
  CHECK(slots<MetaDataImportTable2>() == 3 + 62 + 8);
  CHECK(slot(offsetof(MetaDataImportTable2, CloseEnum)) == 3);
  CHECK(slot(offsetof(MetaDataImportTable2, GetTypeDefProps)) == 12);
  CHECK(slot(offsetof(MetaDataImportTable2, GetTypeRefProps)) == 14);
  CHECK(slot(offsetof(MetaDataImportTable2, GetMethodProps)) == 30);
  CHECK(slot(offsetof(MetaDataImportTable2, GetMemberRefProps)) == 31);
  CHECK(slot(offsetof(MetaDataImportTable2, GetTypeSpecFromToken)) == 44);
  CHECK(slot(offsetof(MetaDataImportTable2, GetNestedClassProps)) == 62);
  CHECK(slot(offsetof(MetaDataImportTable2, IsGlobal)) == 64);
  CHECK(slot(offsetof(MetaDataImportTable2, EnumGenericParams)) == 65);
  CHECK(slot(offsetof(MetaDataImportTable2, GetGenericParamProps)) == 66);
  CHECK(slot(offsetof(MetaDataImportTable2, EnumMethodSpecs)) == 72);
  CHECK(kIID_IMetaDataImport2.data1 == 0xFCE5EFA0u);
}
