// CoreCLR's profiling interfaces, declared by mlpd itself (no runtime header is used or copied).
//
// The facts come from the documented interface definition (dotnet/runtime, src/coreclr/inc/corprof.idl):
// the order of every interface's methods, their parameters, the interface ids, the flag values. The
// shapes are ours: each interface is a struct holding a pointer to its table of function pointers
// (what a COM object is in memory: Itanium C++ ABI, `this` first, the runtime's PAL uses no special
// calling convention on Linux), and each table is written out flat, one X-macro list per interface
// level, so a table's size says how many methods it has (tests/unit/runtime-hooks/coreclr/profiling_api_test.cpp
// checks every count and a few offsets against the IDL).
//
// Only what mlpd uses or must answer for is here: IUnknown, IClassFactory, ICorProfilerCallback
// through ICorProfilerCallback11 (every method: the runtime calls through the whole table),
// ICorProfilerInfo through ICorProfilerInfo12 (the table as far as the highest method called).
#pragma once

#include <cstddef>
#include <cstdint>

#include "mlpd/runtime/attach_protocol.h"

namespace mlpd::coreclr {

using HRESULT = std::int32_t;
using BOOL = std::int32_t;
using ULONG = std::uint32_t;
using ULONG32 = std::uint32_t;
using DWORD = std::uint32_t;
using UINT = std::uint32_t;
using UINT32 = std::uint32_t;
using UINT64 = std::uint64_t;
using UINT8 = std::uint8_t;
using USHORT = std::uint16_t;
using UINT_PTR = std::uintptr_t;
using SIZE_T = std::size_t;
using WCHAR = char16_t;  // 16 bits on every platform (the runtime's PAL), never wchar_t
using BYTE = std::uint8_t;
using LPCBYTE = const BYTE*;
using mdToken = std::uint32_t;
using mdTypeDef = mdToken;
using mdMethodDef = mdToken;
using mdFieldDef = mdToken;

// The ids the runtime hands out: pointers to its own structures, opaque to us.
using AppDomainID = UINT_PTR;
using AssemblyID = UINT_PTR;
using ModuleID = UINT_PTR;
using ClassID = UINT_PTR;
using ThreadID = UINT_PTR;
using ContextID = UINT_PTR;
using FunctionID = UINT_PTR;
using ObjectID = UINT_PTR;
using GCHandleID = UINT_PTR;
using ReJITID = UINT_PTR;
using ProcessID = UINT_PTR;
using COR_PRF_FRAME_INFO = UINT_PTR;
using EVENTPIPE_PROVIDER = UINT_PTR;
using EVENTPIPE_EVENT = UINT_PTR;
using EVENTPIPE_SESSION = UINT64;

constexpr HRESULT kS_OK = 0;
constexpr HRESULT kS_FALSE = 1;
constexpr HRESULT kE_NOINTERFACE = static_cast<HRESULT>(0x80004002u);
constexpr HRESULT kE_POINTER = static_cast<HRESULT>(0x80004003u);
constexpr HRESULT kE_FAIL = static_cast<HRESULT>(0x80004005u);
constexpr HRESULT kE_OUTOFMEMORY = static_cast<HRESULT>(0x8007000Eu);
constexpr HRESULT kCLASS_E_NOAGGREGATION = static_cast<HRESULT>(0x80040110u);
constexpr HRESULT kCLASS_E_CLASSNOTAVAILABLE = static_cast<HRESULT>(0x80040111u);
constexpr HRESULT kERROR_INSUFFICIENT_BUFFER = static_cast<HRESULT>(0x8007007Au);  // HRESULT_FROM_WIN32(122)
constexpr bool succeeded(HRESULT hr) { return hr >= 0; }

// A GUID as the runtime lays it out (16 bytes: u32, u16, u16, 8 bytes).
struct Guid {
  std::uint32_t data1;
  std::uint16_t data2;
  std::uint16_t data3;
  std::uint8_t data4[8];

  friend constexpr bool operator==(const Guid& a, const Guid& b) {
    if (a.data1 != b.data1 || a.data2 != b.data2 || a.data3 != b.data3) return false;
    for (int i = 0; i < 8; ++i)
      if (a.data4[i] != b.data4[i]) return false;
    return true;
  }
};
static_assert(sizeof(Guid) == 16);

// "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" (any case, no braces) -> Guid, at compile time; a malformed
// text does not compile (the throw in a constant expression).
consteval Guid guid_at(const char* text) {
  auto hex = [](char c) -> std::uint32_t {
    if (c >= '0' && c <= '9') return static_cast<std::uint32_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint32_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<std::uint32_t>(c - 'A' + 10);
    throw "not a hex digit";
  };
  auto field = [&](int from, int digits) {
    std::uint32_t v = 0;
    for (int i = 0; i < digits; ++i) v = (v << 4) | hex(text[from + i]);
    return v;
  };
  if (text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-') throw "not a GUID";
  Guid g{field(0, 8), static_cast<std::uint16_t>(field(9, 4)), static_cast<std::uint16_t>(field(14, 4)), {}};
  g.data4[0] = static_cast<std::uint8_t>(field(19, 2));
  g.data4[1] = static_cast<std::uint8_t>(field(21, 2));
  for (int i = 0; i < 6; ++i) g.data4[2 + i] = static_cast<std::uint8_t>(field(24 + 2 * i, 2));
  return g;
}
consteval Guid guid(const char (&text)[37]) { return guid_at(text); }

// mlpd's own class id (CORECLR_PROFILER={9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}; docs/dotnet.md; the
// text is shared with `mlpd attach`, mlpd/runtime/attach_protocol.h).
using runtime::attach_protocol::kMlpdClsidText;
inline constexpr Guid kMlpdClsid = guid_at(kMlpdClsidText + 1);

inline constexpr Guid kIID_IUnknown = guid("00000000-0000-0000-C000-000000000046");
inline constexpr Guid kIID_IClassFactory = guid("00000001-0000-0000-C000-000000000046");
inline constexpr Guid kIID_ICorProfilerCallback = guid("176FBED1-A55C-4796-98CA-A9DA0EF883E7");
inline constexpr Guid kIID_ICorProfilerCallback2 = guid("8A8CC829-CCF2-49fe-BBAE-0F022228071A");
inline constexpr Guid kIID_ICorProfilerCallback3 = guid("4FD2ED52-7731-4b8d-9469-03D2CC3086C5");
inline constexpr Guid kIID_ICorProfilerCallback4 = guid("7B63B2E3-107D-4d48-B2F6-F61E229470D2");
inline constexpr Guid kIID_ICorProfilerCallback5 = guid("8DFBA405-8C9F-45F8-BFFA-83B14CEF78B5");
inline constexpr Guid kIID_ICorProfilerCallback6 = guid("FC13DF4B-4448-4F4F-950C-BA8D19D00C36");
inline constexpr Guid kIID_ICorProfilerCallback7 = guid("F76A2DBA-1D52-4539-866C-2AA518F9EFC3");
inline constexpr Guid kIID_ICorProfilerCallback8 = guid("5BED9B15-C079-4D47-BFE2-215A140C07E0");
inline constexpr Guid kIID_ICorProfilerCallback9 = guid("27583EC3-C8F5-482F-8052-194B8CE4705A");
inline constexpr Guid kIID_ICorProfilerCallback10 = guid("CEC5B60E-C69C-495F-87F6-84D28EE16FFB");
inline constexpr Guid kIID_ICorProfilerCallback11 = guid("42350846-AAED-47F7-B128-FD0C98881CDE");
inline constexpr Guid kIID_ICorProfilerInfo = guid("28B5557D-3F3F-48b4-90B2-5F9EEA2F6C48");
inline constexpr Guid kIID_ICorProfilerInfo2 = guid("CC0935CD-A518-487d-B0BB-A93214E65478");
inline constexpr Guid kIID_ICorProfilerInfo3 = guid("B555ED4F-452A-4E54-8B39-B5360BAD32A0");
inline constexpr Guid kIID_ICorProfilerInfo4 = guid("0d8fdcaa-6257-47bf-b1bf-94dac88466ee");
inline constexpr Guid kIID_ICorProfilerInfo5 = guid("07602928-CE38-4B83-81E7-74ADAF781214");
inline constexpr Guid kIID_ICorProfilerInfo6 = guid("F30A070D-BFFB-46A7-B1D8-8781EF7B698A");
inline constexpr Guid kIID_ICorProfilerInfo7 = guid("9AEECC0D-63E0-4187-8C00-E312F503F663");
inline constexpr Guid kIID_ICorProfilerInfo8 = guid("C5AC80A6-782E-4716-8044-39598C60CFBF");
inline constexpr Guid kIID_ICorProfilerInfo9 = guid("008170DB-F8CC-4796-9A51-DC8AA0B47012");
inline constexpr Guid kIID_ICorProfilerInfo10 = guid("2F1B5152-C869-40C9-AA5F-3ABE026BD720");
inline constexpr Guid kIID_ICorProfilerInfo11 = guid("06398876-8987-4154-B621-40A00D6E4D04");
inline constexpr Guid kIID_ICorProfilerInfo12 = guid("27b24ccd-1cb1-47c5-96ee-98190dc30959");

// COR_PRF_MONITOR (SetEventMask / the low word of SetEventMask2): the bits mlpd uses.
namespace monitor {
inline constexpr DWORD kFunctionUnloads = 0x00000001;
inline constexpr DWORD kClassLoads = 0x00000002;
inline constexpr DWORD kModuleLoads = 0x00000004;
inline constexpr DWORD kAssemblyLoads = 0x00000008;
inline constexpr DWORD kAppDomainLoads = 0x00000010;
inline constexpr DWORD kJitCompilation = 0x00000020;
inline constexpr DWORD kExceptions = 0x00000040;
inline constexpr DWORD kGc = 0x00000080;
inline constexpr DWORD kObjectAllocated = 0x00000100;
inline constexpr DWORD kThreads = 0x00000200;
inline constexpr DWORD kCodeTransitions = 0x00000800;
inline constexpr DWORD kEnterLeave = 0x00001000;
inline constexpr DWORD kSuspends = 0x00010000;
inline constexpr DWORD kCacheSearches = 0x00020000;
inline constexpr DWORD kEnableRejit = 0x00040000;
inline constexpr DWORD kDisableInlining = 0x00200000;
inline constexpr DWORD kDisableOptimizations = 0x00400000;
inline constexpr DWORD kEnableObjectAllocated = 0x00800000;
inline constexpr DWORD kEnableStackSnapshot = 0x10000000;
inline constexpr DWORD kDisableAllNgenImages = 0x80000000;
// Only at Initialize (COR_PRF_MONITOR_IMMUTABLE).
inline constexpr DWORD kImmutable = 0x00000800 | 0x00000400 | 0x00004400 | 0x00008400 | 0x00080000 | 0x00100000 |
                                    0x00800000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000 |
                                    0x80000000;
}  // namespace monitor

// COR_PRF_HIGH_MONITOR (the high word of SetEventMask2).
namespace monitor_high {
inline constexpr DWORD kInMemorySymbolsUpdated = 0x00000002;
inline constexpr DWORD kDynamicFunctionUnloads = 0x00000004;
inline constexpr DWORD kDisableTieredCompilation = 0x00000008;
inline constexpr DWORD kBasicGc = 0x00000010;
inline constexpr DWORD kGcMovedObjects = 0x00000020;
inline constexpr DWORD kLargeObjectAllocated = 0x00000040;
inline constexpr DWORD kEventPipe = 0x00000080;
inline constexpr DWORD kPinnedObjectAllocated = 0x00000100;
}  // namespace monitor_high

// The enums passed by value to callbacks: int-sized C enums in the runtime.
enum class JitCacheResult : std::int32_t { kFound = 0, kNotFound = 1 };
enum class TransitionReason : std::int32_t { kCall = 0, kReturn = 1 };
enum class SuspendReason : std::int32_t {
  kOther = 0,
  kForGc = 1,
  kForAppDomainShutdown = 2,
  kForCodePitching = 3,
  kForShutdown = 4,
  kForInprocDebugger = 6,
  kForGcPrep = 7,
  kForRejit = 8,
  kForProfiler = 9,
};
enum class GcReason : std::int32_t { kOther = 0, kInduced = 1 };
enum class GcRootKind : std::int32_t { kOther = 0, kStack = 1, kFinalizer = 2, kHandle = 3 };
enum class GcRootFlags : std::int32_t { kPinning = 1, kWeakRef = 2, kInterior = 4, kRefCounted = 8 };
enum class GcGeneration : std::int32_t { kGen0 = 0, kGen1 = 1, kGen2 = 2, kLargeObjectHeap = 3, kPinnedObjectHeap = 4 };
enum class RuntimeType : std::int32_t { kDesktopClr = 1, kCoreClr = 2 };

struct CodeInfo {  // COR_PRF_CODE_INFO
  UINT_PTR start_address;
  SIZE_T size;
};
struct FunctionAndRejit {  // COR_PRF_FUNCTION
  FunctionID function_id;
  ReJITID rejit_id;
};
struct GenerationRange {  // COR_PRF_GC_GENERATION_RANGE
  GcGeneration generation;
  ObjectID range_start;
  UINT_PTR range_length;
  UINT_PTR range_length_reserved;
};
struct ExceptionClauseInfo {  // COR_PRF_EX_CLAUSE_INFO
  std::int32_t clause_type;   // 0 none, 1 filter, 2 catch, 3 finally
  UINT_PTR program_counter;
  UINT_PTR frame_pointer;
  UINT_PTR shadow_stack_pointer;
};
struct IlToNativeMap {  // COR_DEBUG_IL_TO_NATIVE_MAP
  ULONG32 il_offset;
  ULONG32 native_start_offset;
  ULONG32 native_end_offset;
};
struct EventPipeProviderConfig {  // COR_PRF_EVENTPIPE_PROVIDER_CONFIG
  const WCHAR* provider_name;
  UINT64 keywords;
  UINT32 logging_level;
  const WCHAR* filter_data;
};

// ---- The tables. X(return type, name, parameters after `this`...) ----

#define MLPD_IUNKNOWN_SLOTS(X)                                   \
  X(HRESULT, QueryInterface, const Guid* riid, void** object)    \
  X(ULONG, AddRef)                                               \
  X(ULONG, Release)

#define MLPD_ICLASSFACTORY_SLOTS(X)                                                   \
  X(HRESULT, CreateInstance, void* outer, const Guid* riid, void** object)            \
  X(HRESULT, LockServer, BOOL lock)

#define MLPD_CALLBACK1_SLOTS(X)                                                                           \
  X(HRESULT, Initialize, void* info_unknown)                                                              \
  X(HRESULT, Shutdown)                                                                                    \
  X(HRESULT, AppDomainCreationStarted, AppDomainID id)                                                    \
  X(HRESULT, AppDomainCreationFinished, AppDomainID id, HRESULT status)                                   \
  X(HRESULT, AppDomainShutdownStarted, AppDomainID id)                                                    \
  X(HRESULT, AppDomainShutdownFinished, AppDomainID id, HRESULT status)                                   \
  X(HRESULT, AssemblyLoadStarted, AssemblyID id)                                                          \
  X(HRESULT, AssemblyLoadFinished, AssemblyID id, HRESULT status)                                         \
  X(HRESULT, AssemblyUnloadStarted, AssemblyID id)                                                        \
  X(HRESULT, AssemblyUnloadFinished, AssemblyID id, HRESULT status)                                       \
  X(HRESULT, ModuleLoadStarted, ModuleID id)                                                              \
  X(HRESULT, ModuleLoadFinished, ModuleID id, HRESULT status)                                             \
  X(HRESULT, ModuleUnloadStarted, ModuleID id)                                                            \
  X(HRESULT, ModuleUnloadFinished, ModuleID id, HRESULT status)                                           \
  X(HRESULT, ModuleAttachedToAssembly, ModuleID module, AssemblyID assembly)                              \
  X(HRESULT, ClassLoadStarted, ClassID id)                                                                \
  X(HRESULT, ClassLoadFinished, ClassID id, HRESULT status)                                               \
  X(HRESULT, ClassUnloadStarted, ClassID id)                                                              \
  X(HRESULT, ClassUnloadFinished, ClassID id, HRESULT status)                                             \
  X(HRESULT, FunctionUnloadStarted, FunctionID id)                                                        \
  X(HRESULT, JITCompilationStarted, FunctionID id, BOOL safe_to_block)                                    \
  X(HRESULT, JITCompilationFinished, FunctionID id, HRESULT status, BOOL safe_to_block)                   \
  X(HRESULT, JITCachedFunctionSearchStarted, FunctionID id, BOOL* use_cached)                             \
  X(HRESULT, JITCachedFunctionSearchFinished, FunctionID id, JitCacheResult result)                       \
  X(HRESULT, JITFunctionPitched, FunctionID id)                                                           \
  X(HRESULT, JITInlining, FunctionID caller, FunctionID callee, BOOL* should_inline)                      \
  X(HRESULT, ThreadCreated, ThreadID id)                                                                  \
  X(HRESULT, ThreadDestroyed, ThreadID id)                                                                \
  X(HRESULT, ThreadAssignedToOSThread, ThreadID id, DWORD os_thread)                                      \
  X(HRESULT, RemotingClientInvocationStarted)                                                             \
  X(HRESULT, RemotingClientSendingMessage, Guid* cookie, BOOL is_async)                                   \
  X(HRESULT, RemotingClientReceivingReply, Guid* cookie, BOOL is_async)                                   \
  X(HRESULT, RemotingClientInvocationFinished)                                                            \
  X(HRESULT, RemotingServerReceivingMessage, Guid* cookie, BOOL is_async)                                 \
  X(HRESULT, RemotingServerInvocationStarted)                                                             \
  X(HRESULT, RemotingServerInvocationReturned)                                                            \
  X(HRESULT, RemotingServerSendingReply, Guid* cookie, BOOL is_async)                                     \
  X(HRESULT, UnmanagedToManagedTransition, FunctionID id, TransitionReason reason)                        \
  X(HRESULT, ManagedToUnmanagedTransition, FunctionID id, TransitionReason reason)                        \
  X(HRESULT, RuntimeSuspendStarted, SuspendReason reason)                                                 \
  X(HRESULT, RuntimeSuspendFinished)                                                                      \
  X(HRESULT, RuntimeSuspendAborted)                                                                       \
  X(HRESULT, RuntimeResumeStarted)                                                                        \
  X(HRESULT, RuntimeResumeFinished)                                                                       \
  X(HRESULT, RuntimeThreadSuspended, ThreadID id)                                                         \
  X(HRESULT, RuntimeThreadResumed, ThreadID id)                                                           \
  X(HRESULT, MovedReferences, ULONG count, ObjectID* old_starts, ObjectID* new_starts, ULONG* lengths)    \
  X(HRESULT, ObjectAllocated, ObjectID object, ClassID klass)                                             \
  X(HRESULT, ObjectsAllocatedByClass, ULONG count, ClassID* classes, ULONG* objects)                      \
  X(HRESULT, ObjectReferences, ObjectID object, ClassID klass, ULONG count, ObjectID* refs)               \
  X(HRESULT, RootReferences, ULONG count, ObjectID* roots)                                                \
  X(HRESULT, ExceptionThrown, ObjectID thrown)                                                            \
  X(HRESULT, ExceptionSearchFunctionEnter, FunctionID id)                                                 \
  X(HRESULT, ExceptionSearchFunctionLeave)                                                                \
  X(HRESULT, ExceptionSearchFilterEnter, FunctionID id)                                                   \
  X(HRESULT, ExceptionSearchFilterLeave)                                                                  \
  X(HRESULT, ExceptionSearchCatcherFound, FunctionID id)                                                  \
  X(HRESULT, ExceptionOSHandlerEnter, UINT_PTR unused)                                                    \
  X(HRESULT, ExceptionOSHandlerLeave, UINT_PTR unused)                                                    \
  X(HRESULT, ExceptionUnwindFunctionEnter, FunctionID id)                                                 \
  X(HRESULT, ExceptionUnwindFunctionLeave)                                                                \
  X(HRESULT, ExceptionUnwindFinallyEnter, FunctionID id)                                                  \
  X(HRESULT, ExceptionUnwindFinallyLeave)                                                                 \
  X(HRESULT, ExceptionCatcherEnter, FunctionID id, ObjectID object)                                       \
  X(HRESULT, ExceptionCatcherLeave)                                                                       \
  X(HRESULT, COMClassicVTableCreated, ClassID klass, const Guid* iid, void* vtable, ULONG slots)          \
  X(HRESULT, COMClassicVTableDestroyed, ClassID klass, const Guid* iid, void* vtable)                     \
  X(HRESULT, ExceptionCLRCatcherFound)                                                                    \
  X(HRESULT, ExceptionCLRCatcherExecute)

#define MLPD_CALLBACK2_SLOTS(X)                                                                           \
  X(HRESULT, ThreadNameChanged, ThreadID id, ULONG length, WCHAR* name)                                   \
  X(HRESULT, GarbageCollectionStarted, int generations, BOOL* collected, GcReason reason)                 \
  X(HRESULT, SurvivingReferences, ULONG count, ObjectID* starts, ULONG* lengths)                          \
  X(HRESULT, GarbageCollectionFinished)                                                                   \
  X(HRESULT, FinalizeableObjectQueued, DWORD flags, ObjectID object)                                      \
  X(HRESULT, RootReferences2, ULONG count, ObjectID* roots, GcRootKind* kinds, GcRootFlags* flags,        \
    UINT_PTR* ids)                                                                                        \
  X(HRESULT, HandleCreated, GCHandleID handle, ObjectID initial)                                          \
  X(HRESULT, HandleDestroyed, GCHandleID handle)

#define MLPD_CALLBACK3_SLOTS(X)                                                                           \
  X(HRESULT, InitializeForAttach, void* info_unknown, void* client_data, UINT client_data_size)           \
  X(HRESULT, ProfilerAttachComplete)                                                                      \
  X(HRESULT, ProfilerDetachSucceeded)

#define MLPD_CALLBACK4_SLOTS(X)                                                                           \
  X(HRESULT, ReJITCompilationStarted, FunctionID id, ReJITID rejit, BOOL safe_to_block)                   \
  X(HRESULT, GetReJITParameters, ModuleID module, mdMethodDef method, void* function_control)             \
  X(HRESULT, ReJITCompilationFinished, FunctionID id, ReJITID rejit, HRESULT status, BOOL safe_to_block)  \
  X(HRESULT, ReJITError, ModuleID module, mdMethodDef method, FunctionID id, HRESULT status)              \
  X(HRESULT, MovedReferences2, ULONG count, ObjectID* old_starts, ObjectID* new_starts, SIZE_T* lengths)  \
  X(HRESULT, SurvivingReferences2, ULONG count, ObjectID* starts, SIZE_T* lengths)

#define MLPD_CALLBACK5_SLOTS(X) \
  X(HRESULT, ConditionalWeakTableElementReferences, ULONG count, ObjectID* keys, ObjectID* values, GCHandleID* ids)
#define MLPD_CALLBACK6_SLOTS(X) X(HRESULT, GetAssemblyReferences, const WCHAR* path, void* provider)
#define MLPD_CALLBACK7_SLOTS(X) X(HRESULT, ModuleInMemorySymbolsUpdated, ModuleID id)
#define MLPD_CALLBACK8_SLOTS(X)                                                                               \
  X(HRESULT, DynamicMethodJITCompilationStarted, FunctionID id, BOOL safe_to_block, LPCBYTE il_header,        \
    ULONG il_header_size)                                                                                     \
  X(HRESULT, DynamicMethodJITCompilationFinished, FunctionID id, HRESULT status, BOOL safe_to_block)
#define MLPD_CALLBACK9_SLOTS(X) X(HRESULT, DynamicMethodUnloaded, FunctionID id)
#define MLPD_CALLBACK10_SLOTS(X)                                                                              \
  X(HRESULT, EventPipeEventDelivered, EVENTPIPE_PROVIDER provider, DWORD event_id, DWORD event_version,       \
    ULONG metadata_size, LPCBYTE metadata, ULONG data_size, LPCBYTE data, const Guid* activity,               \
    const Guid* related_activity, ThreadID thread, ULONG frame_count, UINT_PTR* frames)                       \
  X(HRESULT, EventPipeProviderCreated, EVENTPIPE_PROVIDER provider)
#define MLPD_CALLBACK11_SLOTS(X) X(HRESULT, LoadAsNotificationOnly, BOOL* notification_only)

#define MLPD_INFO1_SLOTS(X)                                                                                   \
  X(HRESULT, GetClassFromObject, ObjectID object, ClassID* klass)                                             \
  X(HRESULT, GetClassFromToken, ModuleID module, mdTypeDef type, ClassID* klass)                              \
  X(HRESULT, GetCodeInfo, FunctionID id, LPCBYTE* start, ULONG* size)                                         \
  X(HRESULT, GetEventMask, DWORD* events)                                                                     \
  X(HRESULT, GetFunctionFromIP, LPCBYTE ip, FunctionID* id)                                                   \
  X(HRESULT, GetFunctionFromToken, ModuleID module, mdToken token, FunctionID* id)                            \
  X(HRESULT, GetHandleFromThread, ThreadID id, void** handle)                                                 \
  X(HRESULT, GetObjectSize, ObjectID object, ULONG* size)                                                     \
  X(HRESULT, IsArrayClass, ClassID klass, std::uint32_t* element_type, ClassID* element_class, ULONG* rank)  \
  X(HRESULT, GetThreadInfo, ThreadID id, DWORD* os_thread)                                                    \
  X(HRESULT, GetCurrentThreadID, ThreadID* id)                                                                \
  X(HRESULT, GetClassIDInfo, ClassID klass, ModuleID* module, mdTypeDef* type)                                \
  X(HRESULT, GetFunctionInfo, FunctionID id, ClassID* klass, ModuleID* module, mdToken* token)                \
  X(HRESULT, SetEventMask, DWORD events)                                                                      \
  X(HRESULT, SetEnterLeaveFunctionHooks, void* enter, void* leave, void* tailcall)                            \
  X(HRESULT, SetFunctionIDMapper, void* mapper)                                                               \
  X(HRESULT, GetTokenAndMetaDataFromFunction, FunctionID id, const Guid* riid, void** import, mdToken* token) \
  X(HRESULT, GetModuleInfo, ModuleID id, LPCBYTE* base, ULONG name_capacity, ULONG* name_length,             \
    WCHAR* name, AssemblyID* assembly)                                                                        \
  X(HRESULT, GetModuleMetaData, ModuleID id, DWORD open_flags, const Guid* riid, void** out)                  \
  X(HRESULT, GetILFunctionBody, ModuleID module, mdMethodDef method, LPCBYTE* header, ULONG* size)           \
  X(HRESULT, GetILFunctionBodyAllocator, ModuleID module, void** malloc)                                      \
  X(HRESULT, SetILFunctionBody, ModuleID module, mdMethodDef method, LPCBYTE header)                          \
  X(HRESULT, GetAppDomainInfo, AppDomainID id, ULONG name_capacity, ULONG* name_length, WCHAR* name,         \
    ProcessID* process)                                                                                       \
  X(HRESULT, GetAssemblyInfo, AssemblyID id, ULONG name_capacity, ULONG* name_length, WCHAR* name,           \
    AppDomainID* domain, ModuleID* manifest_module)                                                           \
  X(HRESULT, SetFunctionReJIT, FunctionID id)                                                                 \
  X(HRESULT, ForceGC)                                                                                         \
  X(HRESULT, SetILInstrumentedCodeMap, FunctionID id, BOOL start_jit, ULONG count, void* entries)            \
  X(HRESULT, GetInprocInspectionInterface, void** out)                                                        \
  X(HRESULT, GetInprocInspectionIThisThread, void** out)                                                      \
  X(HRESULT, GetThreadContext, ThreadID id, ContextID* context)                                               \
  X(HRESULT, BeginInprocDebugging, BOOL this_thread_only, DWORD* context)                                     \
  X(HRESULT, EndInprocDebugging, DWORD context)                                                               \
  X(HRESULT, GetILToNativeMapping, FunctionID id, ULONG32 capacity, ULONG32* count, IlToNativeMap* map)

#define MLPD_INFO2_SLOTS(X)                                                                                   \
  X(HRESULT, DoStackSnapshot, ThreadID thread, void* callback, ULONG32 flags, void* client_data,             \
    BYTE* context, ULONG32 context_size)                                                                      \
  X(HRESULT, SetEnterLeaveFunctionHooks2, void* enter, void* leave, void* tailcall)                           \
  X(HRESULT, GetFunctionInfo2, FunctionID id, COR_PRF_FRAME_INFO frame, ClassID* klass, ModuleID* module,    \
    mdToken* token, ULONG32 type_arg_capacity, ULONG32* type_arg_count, ClassID* type_args)                  \
  X(HRESULT, GetStringLayout, ULONG* buffer_length_offset, ULONG* string_length_offset, ULONG* buffer_offset) \
  X(HRESULT, GetClassLayout, ClassID klass, void* field_offsets, ULONG capacity, ULONG* count, ULONG* size)   \
  X(HRESULT, GetClassIDInfo2, ClassID klass, ModuleID* module, mdTypeDef* type, ClassID* parent,             \
    ULONG32 type_arg_capacity, ULONG32* type_arg_count, ClassID* type_args)                                  \
  X(HRESULT, GetCodeInfo2, FunctionID id, ULONG32 capacity, ULONG32* count, CodeInfo* infos)                  \
  X(HRESULT, GetClassFromTokenAndTypeArgs, ModuleID module, mdTypeDef type, ULONG32 type_arg_count,          \
    ClassID* type_args, ClassID* klass)                                                                       \
  X(HRESULT, GetFunctionFromTokenAndTypeArgs, ModuleID module, mdMethodDef method, ClassID klass,            \
    ULONG32 type_arg_count, ClassID* type_args, FunctionID* id)                                               \
  X(HRESULT, EnumModuleFrozenObjects, ModuleID module, void** enumerator)                                     \
  X(HRESULT, GetArrayObjectInfo, ObjectID object, ULONG32 rank, ULONG32* sizes, int* lower_bounds,           \
    BYTE** data)                                                                                              \
  X(HRESULT, GetBoxClassLayout, ClassID klass, ULONG32* buffer_offset)                                        \
  X(HRESULT, GetThreadAppDomain, ThreadID id, AppDomainID* domain)                                            \
  X(HRESULT, GetRVAStaticAddress, ClassID klass, mdFieldDef field, void** address)                            \
  X(HRESULT, GetAppDomainStaticAddress, ClassID klass, mdFieldDef field, AppDomainID domain, void** address) \
  X(HRESULT, GetThreadStaticAddress, ClassID klass, mdFieldDef field, ThreadID thread, void** address)       \
  X(HRESULT, GetContextStaticAddress, ClassID klass, mdFieldDef field, ContextID context, void** address)    \
  X(HRESULT, GetStaticFieldInfo, ClassID klass, mdFieldDef field, std::int32_t* static_type)                  \
  X(HRESULT, GetGenerationBounds, ULONG capacity, ULONG* count, GenerationRange* ranges)                      \
  X(HRESULT, GetObjectGeneration, ObjectID object, GenerationRange* range)                                    \
  X(HRESULT, GetNotifiedExceptionClauseInfo, ExceptionClauseInfo* info)

#define MLPD_INFO3_SLOTS(X)                                                                                   \
  X(HRESULT, EnumJITedFunctions, void** enumerator)                                                           \
  X(HRESULT, RequestProfilerDetach, DWORD expected_ms)                                                        \
  X(HRESULT, SetFunctionIDMapper2, void* mapper, void* client_data)                                           \
  X(HRESULT, GetStringLayout2, ULONG* string_length_offset, ULONG* buffer_offset)                             \
  X(HRESULT, SetEnterLeaveFunctionHooks3, void* enter, void* leave, void* tailcall)                           \
  X(HRESULT, SetEnterLeaveFunctionHooks3WithInfo, void* enter, void* leave, void* tailcall)                   \
  X(HRESULT, GetFunctionEnter3Info, FunctionID id, UINT_PTR elt, COR_PRF_FRAME_INFO* frame,                  \
    ULONG* argument_info_size, void* argument_info)                                                           \
  X(HRESULT, GetFunctionLeave3Info, FunctionID id, UINT_PTR elt, COR_PRF_FRAME_INFO* frame, void* retval)    \
  X(HRESULT, GetFunctionTailcall3Info, FunctionID id, UINT_PTR elt, COR_PRF_FRAME_INFO* frame)               \
  X(HRESULT, EnumModules, void** enumerator)                                                                  \
  X(HRESULT, GetRuntimeInformation, USHORT* clr_instance, RuntimeType* type, USHORT* major, USHORT* minor,   \
    USHORT* build, USHORT* qfe, ULONG version_capacity, ULONG* version_length, WCHAR* version)               \
  X(HRESULT, GetThreadStaticAddress2, ClassID klass, mdFieldDef field, AppDomainID domain, ThreadID thread,  \
    void** address)                                                                                           \
  X(HRESULT, GetAppDomainsContainingModule, ModuleID module, ULONG32 capacity, ULONG32* count,               \
    AppDomainID* domains)                                                                                     \
  X(HRESULT, GetModuleInfo2, ModuleID id, LPCBYTE* base, ULONG name_capacity, ULONG* name_length,            \
    WCHAR* name, AssemblyID* assembly, DWORD* module_flags)

#define MLPD_INFO4_SLOTS(X)                                                                                   \
  X(HRESULT, EnumThreads, void** enumerator)                                                                  \
  X(HRESULT, InitializeCurrentThread)                                                                         \
  X(HRESULT, RequestReJIT, ULONG count, ModuleID* modules, mdMethodDef* methods)                              \
  X(HRESULT, RequestRevert, ULONG count, ModuleID* modules, mdMethodDef* methods, HRESULT* status)           \
  X(HRESULT, GetCodeInfo3, FunctionID id, ReJITID rejit, ULONG32 capacity, ULONG32* count, CodeInfo* infos)  \
  X(HRESULT, GetFunctionFromIP2, LPCBYTE ip, FunctionID* id, ReJITID* rejit)                                  \
  X(HRESULT, GetReJITIDs, FunctionID id, ULONG capacity, ULONG* count, ReJITID* ids)                          \
  X(HRESULT, GetILToNativeMapping2, FunctionID id, ReJITID rejit, ULONG32 capacity, ULONG32* count,          \
    IlToNativeMap* map)                                                                                       \
  X(HRESULT, EnumJITedFunctions2, void** enumerator)                                                          \
  X(HRESULT, GetObjectSize2, ObjectID object, SIZE_T* size)

#define MLPD_INFO5_SLOTS(X)                               \
  X(HRESULT, GetEventMask2, DWORD* low, DWORD* high)      \
  X(HRESULT, SetEventMask2, DWORD low, DWORD high)

#define MLPD_INFO6_SLOTS(X)                                                                                   \
  X(HRESULT, EnumNgenModuleMethodsInliningThisMethod, ModuleID inliners_module, ModuleID inlinee_module,     \
    mdMethodDef inlinee, BOOL* incomplete, void** enumerator)

#define MLPD_INFO7_SLOTS(X)                                                                                   \
  X(HRESULT, ApplyMetaData, ModuleID id)                                                                      \
  X(HRESULT, GetInMemorySymbolsLength, ModuleID id, DWORD* size)                                              \
  X(HRESULT, ReadInMemorySymbols, ModuleID id, DWORD offset, BYTE* bytes, DWORD capacity, DWORD* read)

#define MLPD_INFO8_SLOTS(X)                                                                                   \
  X(HRESULT, IsFunctionDynamic, FunctionID id, BOOL* dynamic)                                                 \
  X(HRESULT, GetFunctionFromIP3, LPCBYTE ip, FunctionID* id, ReJITID* rejit)                                  \
  X(HRESULT, GetDynamicFunctionInfo, FunctionID id, ModuleID* module, const BYTE** signature,                \
    ULONG* signature_size, ULONG name_capacity, ULONG* name_length, WCHAR* name)

#define MLPD_INFO9_SLOTS(X)                                                                                   \
  X(HRESULT, GetNativeCodeStartAddresses, FunctionID id, ReJITID rejit, ULONG32 capacity, ULONG32* count,    \
    UINT_PTR* starts)                                                                                         \
  X(HRESULT, GetILToNativeMapping3, UINT_PTR code_start, ULONG32 capacity, ULONG32* count,                   \
    IlToNativeMap* map)                                                                                       \
  X(HRESULT, GetCodeInfo4, UINT_PTR code_start, ULONG32 capacity, ULONG32* count, CodeInfo* infos)

#define MLPD_INFO10_SLOTS(X)                                                                                  \
  X(HRESULT, EnumerateObjectReferences, ObjectID object, void* callback, void* client_data)                   \
  X(HRESULT, IsFrozenObject, ObjectID object, BOOL* frozen)                                                   \
  X(HRESULT, GetLOHObjectSizeThreshold, DWORD* threshold)                                                     \
  X(HRESULT, RequestReJITWithInliners, DWORD flags, ULONG count, ModuleID* modules, mdMethodDef* methods)    \
  X(HRESULT, SuspendRuntime)                                                                                  \
  X(HRESULT, ResumeRuntime)

#define MLPD_INFO11_SLOTS(X)                                                                                  \
  X(HRESULT, GetEnvironmentVariable, const WCHAR* name, ULONG capacity, ULONG* length, WCHAR* value)         \
  X(HRESULT, SetEnvironmentVariable, const WCHAR* name, const WCHAR* value)

#define MLPD_INFO12_SLOTS(X)                                                                                  \
  X(HRESULT, EventPipeStartSession, UINT32 count, EventPipeProviderConfig* configs, BOOL request_rundown,    \
    EVENTPIPE_SESSION* session)                                                                               \
  X(HRESULT, EventPipeAddProviderToSession, EVENTPIPE_SESSION session, EventPipeProviderConfig config)       \
  X(HRESULT, EventPipeStopSession, EVENTPIPE_SESSION session)                                                 \
  X(HRESULT, EventPipeCreateProvider, const WCHAR* name, EVENTPIPE_PROVIDER* provider)                        \
  X(HRESULT, EventPipeGetProviderInfo, EVENTPIPE_PROVIDER provider, ULONG capacity, ULONG* length,           \
    WCHAR* name)                                                                                              \
  X(HRESULT, EventPipeDefineEvent, EVENTPIPE_PROVIDER provider, const WCHAR* name, UINT32 event_id,          \
    UINT64 keywords, UINT32 version, UINT32 level, UINT8 opcode, BOOL need_stack, UINT32 param_count,        \
    void* params, EVENTPIPE_EVENT* event)                                                                     \
  X(HRESULT, EventPipeWriteEvent, EVENTPIPE_EVENT event, UINT32 count, void* data, const Guid* activity,     \
    const Guid* related_activity)

// A slot: a function pointer taking the interface's `this` first.
#define MLPD_SLOT(ret, name, ...) ret (*name)(Self * self __VA_OPT__(, ) __VA_ARGS__);

// The object shapes: a pointer to the table, then (for our own objects) whatever we keep.
struct ClassFactory;
struct ProfilerCallback;
struct ProfilerInfo;

struct ClassFactoryTable {
  using Self = ClassFactory;
  MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)
  MLPD_ICLASSFACTORY_SLOTS(MLPD_SLOT)
};

// The callback tables, one per interface level (for the tests' counts); the runtime gets the last.
#define MLPD_CALLBACK_TABLE(N, ...)                 \
  struct CallbackTable##N {                         \
    using Self = ProfilerCallback;                  \
    MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)                  \
    __VA_ARGS__                                     \
  };
MLPD_CALLBACK_TABLE(1, MLPD_CALLBACK1_SLOTS(MLPD_SLOT))
MLPD_CALLBACK_TABLE(2, MLPD_CALLBACK1_SLOTS(MLPD_SLOT) MLPD_CALLBACK2_SLOTS(MLPD_SLOT))
MLPD_CALLBACK_TABLE(3, MLPD_CALLBACK1_SLOTS(MLPD_SLOT) MLPD_CALLBACK2_SLOTS(MLPD_SLOT) MLPD_CALLBACK3_SLOTS(MLPD_SLOT))
#define MLPD_CALLBACK_UPTO4(X) MLPD_CALLBACK1_SLOTS(X) MLPD_CALLBACK2_SLOTS(X) MLPD_CALLBACK3_SLOTS(X) MLPD_CALLBACK4_SLOTS(X)
#define MLPD_CALLBACK_UPTO8(X) \
  MLPD_CALLBACK_UPTO4(X) MLPD_CALLBACK5_SLOTS(X) MLPD_CALLBACK6_SLOTS(X) MLPD_CALLBACK7_SLOTS(X) MLPD_CALLBACK8_SLOTS(X)
#define MLPD_CALLBACK_UPTO11(X) \
  MLPD_CALLBACK_UPTO8(X) MLPD_CALLBACK9_SLOTS(X) MLPD_CALLBACK10_SLOTS(X) MLPD_CALLBACK11_SLOTS(X)
MLPD_CALLBACK_TABLE(4, MLPD_CALLBACK_UPTO4(MLPD_SLOT))
MLPD_CALLBACK_TABLE(8, MLPD_CALLBACK_UPTO8(MLPD_SLOT))
MLPD_CALLBACK_TABLE(11, MLPD_CALLBACK_UPTO11(MLPD_SLOT))

#define MLPD_INFO_TABLE(N, ...)                     \
  struct InfoTable##N {                             \
    using Self = ProfilerInfo;                      \
    MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)                  \
    __VA_ARGS__                                     \
  };
#define MLPD_INFO_UPTO3(X) MLPD_INFO1_SLOTS(X) MLPD_INFO2_SLOTS(X) MLPD_INFO3_SLOTS(X)
#define MLPD_INFO_UPTO5(X) MLPD_INFO_UPTO3(X) MLPD_INFO4_SLOTS(X) MLPD_INFO5_SLOTS(X)
#define MLPD_INFO_UPTO9(X) \
  MLPD_INFO_UPTO5(X) MLPD_INFO6_SLOTS(X) MLPD_INFO7_SLOTS(X) MLPD_INFO8_SLOTS(X) MLPD_INFO9_SLOTS(X)
#define MLPD_INFO_UPTO12(X) MLPD_INFO_UPTO9(X) MLPD_INFO10_SLOTS(X) MLPD_INFO11_SLOTS(X) MLPD_INFO12_SLOTS(X)
MLPD_INFO_TABLE(1, MLPD_INFO1_SLOTS(MLPD_SLOT))
MLPD_INFO_TABLE(2, MLPD_INFO1_SLOTS(MLPD_SLOT) MLPD_INFO2_SLOTS(MLPD_SLOT))
MLPD_INFO_TABLE(3, MLPD_INFO_UPTO3(MLPD_SLOT))
MLPD_INFO_TABLE(5, MLPD_INFO_UPTO5(MLPD_SLOT))
MLPD_INFO_TABLE(9, MLPD_INFO_UPTO9(MLPD_SLOT))
MLPD_INFO_TABLE(12, MLPD_INFO_UPTO12(MLPD_SLOT))

// The runtime's enumerators (ICorProfilerModuleEnum, ICorProfilerFunctionEnum, ICorProfilerThreadEnum):
// one shape, their Next differing only in the element type (ModuleID, COR_PRF_FUNCTION, ThreadID),
// so one table with an untyped array serves all three.
#define MLPD_ENUM_SLOTS(X)                         \
  X(HRESULT, Skip, ULONG count)                    \
  X(HRESULT, Reset)                                \
  X(HRESULT, Clone, void** copy)                   \
  X(HRESULT, GetCount, ULONG* count)               \
  X(HRESULT, Next, ULONG count, void* items, ULONG* fetched)
struct IdEnum;
struct IdEnumTable {
  using Self = IdEnum;
  MLPD_IUNKNOWN_SLOTS(MLPD_SLOT)
  MLPD_ENUM_SLOTS(MLPD_SLOT)
};
struct IdEnum {
  const IdEnumTable* table;
};

struct ClassFactory {
  const ClassFactoryTable* table;
};
struct ProfilerCallback {
  const CallbackTable11* table;
};
// The runtime's object: the table's prefix the object answers to is known by the IID it was asked
// for (QueryInterface); a table is never read past what that interface level declares.
struct ProfilerInfo {
  const InfoTable12* table;
};

}  // namespace mlpd::coreclr
