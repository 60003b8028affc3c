// The mlpd format (Mono log profiler, format 3.0, data version 17): the one definition of every
// constant, enum and fixed layout. The writer, the reader and the agent all use this header; nothing
// else in the project spells a type byte or an id. See docs/format.md for the prose.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlpd::format {

inline constexpr uint32_t kFileId = 0x4D505A01;    // LOG_HEADER_ID
inline constexpr uint32_t kBufferId = 0x4D504C01;  // BUF_ID
inline constexpr uint8_t kVersionMajor = 3;
inline constexpr uint8_t kVersionMinor = 0;
inline constexpr uint8_t kDataVersion = 17;
inline constexpr uint8_t kPointerSize = 8;  // we only write and read 64-bit files
inline constexpr size_t kBufferHeaderSize = 48;
// Fixed part of the file header: id 4, major/minor/format/ptrsize 4, startup ms 8, startup ns 8,
// timer overhead 4, flags 4, pid 4, port 2. Three length-prefixed strings follow.
inline constexpr size_t kFileHeaderFixedSize = 38;
inline constexpr unsigned kMaxFrames = 32;  // Mono's MAX_FRAMES: longest backtrace Mono writes
// mlpd's convention for a sample stack cut short (deeper than the agent keeps, 256 frames): its
// managed frames end (at the root) with the method kTruncatedMethod, which a method_jit event
// describes with the name kTruncatedName and the code range [kTruncatedMethod, +1), so that every
// reader names it, as a frame and as an IP. Page 0 is never mapped: no real method or code is there.
inline constexpr uint64_t kTruncatedMethod = 0x100;
inline constexpr char kTruncatedName[] = "[truncated]";

// Base event types (low 4 bits of the event byte).
// Type
inline constexpr uint8_t TYPE_ALLOC = 0;
inline constexpr uint8_t TYPE_GC = 1;
inline constexpr uint8_t TYPE_METADATA = 2;
inline constexpr uint8_t TYPE_METHOD = 3;
inline constexpr uint8_t TYPE_EXCEPTION = 4;
inline constexpr uint8_t TYPE_MONITOR = 5;
inline constexpr uint8_t TYPE_HEAP = 6;
inline constexpr uint8_t TYPE_SAMPLE = 7;
inline constexpr uint8_t TYPE_RUNTIME = 8;
inline constexpr uint8_t TYPE_COVERAGE = 9;  // removed in data version 16; never valid in v17
inline constexpr uint8_t TYPE_META = 10;

// Extended info (high 4 bits of the event byte), per base type.
// HeapExt
inline constexpr uint8_t TYPE_HEAP_START = 0 << 4;
inline constexpr uint8_t TYPE_HEAP_END = 1 << 4;
inline constexpr uint8_t TYPE_HEAP_OBJECT = 2 << 4;
inline constexpr uint8_t TYPE_HEAP_ROOT = 3 << 4;
inline constexpr uint8_t TYPE_HEAP_ROOT_REGISTER = 4 << 4;
inline constexpr uint8_t TYPE_HEAP_ROOT_UNREGISTER = 5 << 4;
// MetadataExt
inline constexpr uint8_t TYPE_METADATA_NAME = 0 << 4;  // only for TYPE_DOMAIN and TYPE_THREAD
inline constexpr uint8_t TYPE_END_LOAD = 2 << 4;
inline constexpr uint8_t TYPE_END_UNLOAD = 4 << 4;
// GcExt
inline constexpr uint8_t TYPE_GC_EVENT = 1 << 4;
inline constexpr uint8_t TYPE_GC_RESIZE = 2 << 4;
inline constexpr uint8_t TYPE_GC_MOVE = 3 << 4;
inline constexpr uint8_t TYPE_GC_HANDLE_CREATED = 4 << 4;
inline constexpr uint8_t TYPE_GC_HANDLE_DESTROYED = 5 << 4;
inline constexpr uint8_t TYPE_GC_HANDLE_CREATED_BT = 6 << 4;
inline constexpr uint8_t TYPE_GC_HANDLE_DESTROYED_BT = 7 << 4;
inline constexpr uint8_t TYPE_GC_FINALIZE_START = 8 << 4;
inline constexpr uint8_t TYPE_GC_FINALIZE_END = 9 << 4;
inline constexpr uint8_t TYPE_GC_FINALIZE_OBJECT_START = 10 << 4;
inline constexpr uint8_t TYPE_GC_FINALIZE_OBJECT_END = 11 << 4;
// MethodExt
inline constexpr uint8_t TYPE_LEAVE = 1 << 4;
inline constexpr uint8_t TYPE_ENTER = 2 << 4;
inline constexpr uint8_t TYPE_EXC_LEAVE = 3 << 4;
inline constexpr uint8_t TYPE_JIT = 4 << 4;
// ExceptionExt
inline constexpr uint8_t TYPE_THROW_NO_BT = 0 << 7;
inline constexpr uint8_t TYPE_THROW_BT = 1 << 7;
inline constexpr uint8_t TYPE_CLAUSE = 1 << 4;
// AllocExt
inline constexpr uint8_t TYPE_ALLOC_NO_BT = 0 << 4;
inline constexpr uint8_t TYPE_ALLOC_BT = 1 << 4;
// MonitorExt
inline constexpr uint8_t TYPE_MONITOR_NO_BT = 0 << 7;
inline constexpr uint8_t TYPE_MONITOR_BT = 1 << 7;
// SampleExt
inline constexpr uint8_t TYPE_SAMPLE_HIT = 0 << 4;
inline constexpr uint8_t TYPE_SAMPLE_USYM = 1 << 4;
inline constexpr uint8_t TYPE_SAMPLE_UBIN = 2 << 4;  // removed in data version 16; never valid in v17
inline constexpr uint8_t TYPE_SAMPLE_COUNTERS_DESC = 3 << 4;
inline constexpr uint8_t TYPE_SAMPLE_COUNTERS = 4 << 4;
// RuntimeExt
inline constexpr uint8_t TYPE_JITHELPER = 1 << 4;
// MetaExt
inline constexpr uint8_t TYPE_SYNC_POINT = 0 << 4;
inline constexpr uint8_t TYPE_AOT_ID = 1 << 4;

// Metadata type byte of TYPE_METADATA events.
// MetadataType
inline constexpr uint8_t TYPE_CLASS = 1;
inline constexpr uint8_t TYPE_IMAGE = 2;
inline constexpr uint8_t TYPE_ASSEMBLY = 3;
inline constexpr uint8_t TYPE_DOMAIN = 4;
inline constexpr uint8_t TYPE_THREAD = 5;
inline constexpr uint8_t TYPE_CONTEXT = 6;
inline constexpr uint8_t TYPE_VTABLE = 7;

// SyncPointType
inline constexpr uint8_t SYNC_POINT_PERIODIC = 0;
inline constexpr uint8_t SYNC_POINT_WORLD_STOP = 1;
inline constexpr uint8_t SYNC_POINT_WORLD_START = 2;

// MonitorEvent
inline constexpr uint8_t MONITOR_CONTENTION = 1;
inline constexpr uint8_t MONITOR_DONE = 2;
inline constexpr uint8_t MONITOR_FAIL = 3;

// MonoProfilerGCEvent values as they appear in TYPE_GC_EVENT.
// GcEvent
inline constexpr uint8_t GC_EVENT_START = 0;
inline constexpr uint8_t GC_EVENT_END = 5;
inline constexpr uint8_t GC_EVENT_PRE_STOP_WORLD = 6;
inline constexpr uint8_t GC_EVENT_POST_STOP_WORLD = 7;
inline constexpr uint8_t GC_EVENT_PRE_START_WORLD = 8;
inline constexpr uint8_t GC_EVENT_POST_START_WORLD = 9;
inline constexpr uint8_t GC_EVENT_PRE_STOP_WORLD_LOCKED = 10;
inline constexpr uint8_t GC_EVENT_POST_START_WORLD_UNLOCKED = 11;
inline constexpr bool is_valid_gc_event(uint8_t e) { return e == 0 || (e >= 5 && e <= 11); }

// MonoGCHandleType: 0 weak, 1 weak-track-resurrection, 2 normal, 3 pinned.
inline constexpr uint64_t kMaxGcHandleType = 3;

// MonoExceptionEnum clause kinds.
// ClauseType
inline constexpr uint8_t CLAUSE_CATCH = 0;
inline constexpr uint8_t CLAUSE_FILTER = 1;
inline constexpr uint8_t CLAUSE_FINALLY = 2;
inline constexpr uint8_t CLAUSE_FAULT = 4;
inline constexpr bool is_valid_clause_type(uint8_t t) { return t <= 2 || t == 4; }

// MonoProfilerCodeBufferType (TYPE_JITHELPER type byte). Only SPECIFIC_TRAMPOLINE carries a name.
// CodeBufferType
inline constexpr uint8_t CODE_BUFFER_METHOD = 0;
inline constexpr uint8_t CODE_BUFFER_METHOD_TRAMPOLINE = 1;  // no longer produced in v17
inline constexpr uint8_t CODE_BUFFER_UNBOX_TRAMPOLINE = 2;
inline constexpr uint8_t CODE_BUFFER_IMT_TRAMPOLINE = 3;
inline constexpr uint8_t CODE_BUFFER_GENERICS_TRAMPOLINE = 4;
inline constexpr uint8_t CODE_BUFFER_SPECIFIC_TRAMPOLINE = 5;
inline constexpr uint8_t CODE_BUFFER_HELPER = 6;
inline constexpr uint8_t CODE_BUFFER_MONITOR = 7;  // no longer produced in v17
inline constexpr uint8_t CODE_BUFFER_DELEGATE_INVOKE = 8;
inline constexpr uint8_t CODE_BUFFER_EXCEPTION_HANDLING = 9;
inline constexpr uint8_t kMaxCodeBufferType = 9;

// MonoGCRootSource, 0..16.
inline constexpr uint8_t kMaxRootSource = 16;

// mono-counters.h: the type is the low 4 bits of a counter's flags; sections, units and variance are
// written as the raw masked flag values.
// CounterType
inline constexpr uint8_t COUNTER_INT = 0;
inline constexpr uint8_t COUNTER_UINT = 1;
inline constexpr uint8_t COUNTER_WORD = 2;
inline constexpr uint8_t COUNTER_LONG = 3;
inline constexpr uint8_t COUNTER_ULONG = 4;
inline constexpr uint8_t COUNTER_DOUBLE = 5;
inline constexpr uint8_t COUNTER_STRING = 6;
inline constexpr uint8_t COUNTER_TIME_INTERVAL = 7;
inline constexpr uint64_t kMaxCounterType = 7;
inline constexpr uint64_t COUNTER_SECTION_PERFCOUNTERS = 1 << 15;
inline constexpr uint64_t COUNTER_SECTION_PROFILER = 1 << 16;
inline constexpr uint64_t COUNTER_UNIT_RAW = 0;
inline constexpr uint64_t COUNTER_UNIT_BYTES = 1 << 24;
inline constexpr uint64_t COUNTER_UNIT_TIME = 2 << 24;
inline constexpr uint64_t COUNTER_UNIT_COUNT = 3 << 24;
inline constexpr uint64_t COUNTER_UNIT_PERCENTAGE = 4 << 24;
inline constexpr uint64_t COUNTER_VARIANCE_MONOTONIC = 1 << 28;
inline constexpr uint64_t COUNTER_VARIANCE_CONSTANT = 1 << 29;
inline constexpr uint64_t COUNTER_VARIANCE_VARIABLE = 1 << 30;

// Event mask bits of the log profiler's options (log.h PROFLOG_*).
// EventMask
inline constexpr uint32_t MASK_EXCEPTION = 1u << 0;
inline constexpr uint32_t MASK_MONITOR = 1u << 1;
inline constexpr uint32_t MASK_GC = 1u << 2;
inline constexpr uint32_t MASK_GC_ALLOC = 1u << 3;
inline constexpr uint32_t MASK_GC_MOVE = 1u << 4;
inline constexpr uint32_t MASK_GC_ROOT = 1u << 5;
inline constexpr uint32_t MASK_GC_HANDLE = 1u << 6;
inline constexpr uint32_t MASK_GC_FINALIZATION = 1u << 7;
inline constexpr uint32_t MASK_COUNTER = 1u << 8;
inline constexpr uint32_t MASK_SAMPLE = 1u << 9;
inline constexpr uint32_t MASK_JIT = 1u << 10;

// Heapshot modes (MonoProfilerHeapshotMode in log.h).
// HeapshotMode
inline constexpr uint8_t HEAPSHOT_NONE = 0;
inline constexpr uint8_t HEAPSHOT_MAJOR = 1;
inline constexpr uint8_t HEAPSHOT_ON_DEMAND = 2;
inline constexpr uint8_t HEAPSHOT_X_GC = 3;
inline constexpr uint8_t HEAPSHOT_X_MS = 4;
// References per TYPE_HEAP_OBJECT event: SGen's heap walk hands an object's references over in chunks
// of at most this many (REFS_SIZE in sgen-mono.c); each chunk is one event, only the first with the size.
inline constexpr uint32_t kHeapRefsPerEvent = 128;

inline constexpr uint8_t event_type(uint8_t event_byte) { return event_byte & 0x0F; }
inline constexpr uint8_t event_ext(uint8_t event_byte) { return event_byte & 0xF0; }

}  // namespace mlpd::format
