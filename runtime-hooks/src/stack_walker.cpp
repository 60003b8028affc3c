// Our managed stack walker (stack_walker.h). Everything here may run on any managed thread inside an
// allocation: the fast path takes no lock, makes no syscall and allocates nothing (a thread's first
// backtrace allocates its cache; learning and cache misses take a mutex, rarely).
#define UNW_LOCAL_ONLY
#include "mlpd/hooks/stack_walker.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "code_index.h"
#include "mono_walk.h"
#include "mlpd/format.h"
#include "mlpd/hooks/mono_api.h"

namespace mlpd::hooks::walker {

namespace {

// ---- code ranges -------------------------------------------------------------------------------

constexpr uint8_t kNative = 0;        // not JIT code we know: the end of a managed segment
constexpr uint8_t kUnsure = 1;        // JIT code whose frame or method we cannot trust: ask Mono
constexpr uint8_t kFramePointer = 2;  // push rbp; mov rbp,rsp: [rbp] = caller's rbp, [rbp+8] = return
constexpr uint8_t kFixedFrame = 3;    // sub rsp,N (no frame pointer): return at [sp+N], rbp saved or kept

// One cache line (a walk reads kind, method, body and the frame's shape of every frame's entry).
struct alignas(64) CodeEntry {
  uint64_t start = 0, end = 0;
  uint64_t body = 0;  // where the prologue ends: a frame's IP must be at or after it
  MonoMethod* method = nullptr;
  MonoDomain* domain = nullptr;
  uint8_t kind = kNative;
  // Set (under g_table_mutex) when the range leaves the table (its method freed, its domain unloaded,
  // its memory reused): a thread's cached lookup of it is then stale (see lookup()).
  std::atomic<bool> gone{false};
  uint32_t frame = 0;     // kFixedFrame: N
  int32_t rbp_save = -1;  // kFixedFrame: where the prologue saved rbp ([sp+rbp_save]); -1: rbp untouched
  // Shared generic code (ctx != kCtxNone): Mono's walk names the instantiation it reads from the frame's
  // generic context, kept in a stack slot at [rsp or rbp + ctx_offset] from code offset ctx_from on.
  // The method is then looked up by (this entry, context value) in what Mono's walks taught us.
  uint8_t ctx = 0;        // kCtxNone, kCtxValue (the slot holds a vtable or mrgctx), kCtxThis (`this`)
  uint8_t ctx_base = 0;   // 4: rsp, 5: rbp (Mono's amd64 register numbers)
  int32_t ctx_offset = 0;
  uint32_t ctx_from = 0;
};
static_assert(sizeof(CodeEntry) == 64);

constexpr uint8_t kCtxNone = 0, kCtxValue = 1, kCtxThis = 2;

const CodeEntry kNativeEntry{};

// Entries are immutable (but for `gone`) and never freed (a frame may still be looked up by another
// thread). The table is ordered by start, and by method and domain for removals (code_index.h).
std::mutex g_table_mutex;
CodeIndex<CodeEntry>* g_table = nullptr;  // guarded by g_table_mutex
// Bumped on every new code range: every thread's cached "not JIT code" answers are then stale (a
// thread can run new code before its jit_done reaches us). Removed ranges are marked `gone` instead.
std::atomic<uint32_t> g_generation{1};
// For `verbose`: code ranges added (each one a generation), and repeated jit_done events for a range
// already there (Mono 6.12 raises jit_done again whenever it finds code already compiled), ignored.
std::atomic<uint64_t> g_ranges_added{0}, g_ranges_repeated{0};
void mark_gone(const CodeEntry* e) { const_cast<CodeEntry*>(e)->gone.store(true, std::memory_order_release); }

// Reads Mono's amd64 prologue. Mono 6.8 (mini-amd64.c, mono_arch_emit_prolog) emits, for a method with a
// frame pointer, `push %rbp` then `mov %rsp,%rbp`; without one (omit_fp), `sub $N,%rsp` and then the
// callee-saved registers it uses stored with `mov %reg,k(%rsp)`; rsp does not move again in the body
// (mono_arch_compute_omit_fp keeps the frame pointer for localloc, exception clauses, a parameter area
// for calls with stack arguments, varargs and stack-passed parameters). Frames of 4 KiB or more are
// probed page by page (MONO_ARCH_SIGSEGV_ON_ALTSTACK): `sub $0x1000,%rsp; test %rsp,(%rsp)` per page,
// then `sub $rest,%rsp`; N is their sum (a start's big methods, a form's InitializeComponent, have
// such frames: left to Mono, they made 40,130 of a GUI-like start's 225,349 backtraces Mono's walks).
// The cross-checks and tests/integration/agent/test_backtraces.py hold us to this reading.
void classify(const uint8_t* c, uint64_t size, CodeEntry& e) {
  e.kind = kUnsure;
  if (size < 8) return;
  if (c[0] == 0x55 && ((c[1] == 0x48 && c[2] == 0x8b && c[3] == 0xec) || (c[1] == 0x48 && c[2] == 0x89 && c[3] == 0xe5))) {
    e.kind = kFramePointer;
    e.body = e.start + 4;
    return;
  }
  size_t i = 0;
  uint32_t n = 0;
  constexpr uint32_t kPage = 0x1000, kMaxProbed = 1u << 20;
  // The probed pages: 48 81 ec 00 10 00 00 (sub $0x1000,%rsp), 48 85 24 24 (test %rsp,(%rsp)).
  while (i + 11 <= size && c[i] == 0x48 && c[i + 1] == 0x81 && c[i + 2] == 0xec && c[i + 3] == 0x00 &&
         c[i + 4] == 0x10 && c[i + 5] == 0x00 && c[i + 6] == 0x00 && c[i + 7] == 0x48 && c[i + 8] == 0x85 &&
         c[i + 9] == 0x24 && c[i + 10] == 0x24) {
    n += kPage;
    i += 11;
    if (n > kMaxProbed) return;
  }
  const bool probed = n != 0;
  if (i + 4 <= size && c[i] == 0x48 && c[i + 1] == 0x83 && c[i + 2] == 0xec) {
    n += c[i + 3];
    i += 4;
  } else if (i + 7 <= size && c[i] == 0x48 && c[i + 1] == 0x81 && c[i + 2] == 0xec) {
    uint32_t rest;
    std::memcpy(&rest, c + i + 3, 4);
    if (rest >= kPage) return;
    n += rest;
    i += 7;
  } else if (!probed) {
    return;
  }
  if (n == 0 || (!probed && n >= kPage) || (n % 8) != 0) return;
  int32_t rbp_save = -1;
  // mov %reg,(%rsp) / mov %reg,disp8(%rsp) / mov %reg,disp32(%rsp): REX.W(+R) 89 modrm 24 [disp]
  while (i + 4 <= size && (c[i] == 0x48 || c[i] == 0x4c) && c[i + 1] == 0x89 && (c[i + 2] & 7) == 4 && c[i + 3] == 0x24) {
    const uint8_t mod = c[i + 2] >> 6;
    const uint8_t reg = ((c[i + 2] >> 3) & 7) | (c[i] == 0x4c ? 8 : 0);
    int32_t disp = 0;
    size_t len = 4;
    if (mod == 1) {
      if (i + 5 > size) return;
      disp = static_cast<int8_t>(c[i + 4]);
      len = 5;
    } else if (mod == 2) {
      if (i + 8 > size) return;
      std::memcpy(&disp, c + i + 4, 4);
      len = 8;
    } else if (mod != 0) {
      break;
    }
    if (reg == 5) rbp_save = disp;
    i += len;
  }
  // A second rsp adjustment or a probe right after would mean the frame is not what we read.
  if (i + 3 <= size && c[i] == 0x48 && (c[i + 1] == 0x83 || c[i + 1] == 0x81) && c[i + 2] == 0xec) return;
  if (rbp_save != -1 && (rbp_save < 0 || static_cast<uint32_t>(rbp_save) + 8 > n)) return;
  e.kind = kFixedFrame;
  e.body = e.start + i;
  e.frame = n;
  e.rbp_save = rbp_save;
}

// ---- per-thread state --------------------------------------------------------------------------

constexpr unsigned kIpCache = 4096;  // IP -> code entry, two ways per set (64 KiB per thread)

// A cached lookup: the entry's address, or for "not JIT code we know" (kNativeEntry) the code
// generation then, as (generation << 1) | 1.
struct IpSlot {
  uint64_t ip;
  uintptr_t value;
};

// `this` objects' vtables already read (see generic_context), with the collection count then.
constexpr unsigned kThisCache = 64;
struct ThisSlot {
  uint64_t obj, vtable, epoch;
};

struct ThreadWalk {
  uintptr_t native_tag = 1;  // an IpSlot value for kNativeEntry valid now: (g_generation << 1) | 1
  bool bounds_ok = false;
  uintptr_t lo = 0, hi = 0;  // this thread's stack
  uint32_t fast = 0, slow[5] = {};  // not yet added to the global counters (slow: by reason)
  uint32_t via_lmf = 0;             // of `fast`: started from the LMF
  uint64_t jit_tls = 0;      // Mono's MonoJitTlsData of this thread (see lmf_frame), once found
  uint8_t jit_tls_tries = 0;  // searches for it so far
  uint32_t lmf_misses = 0;    // walks that wanted it before it was found
  IpSlot ips[kIpCache];
  ThisSlot objs[kThisCache];
};

thread_local ThreadWalk* tls_walk __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_key;
bool g_key_ok = false;

std::atomic<uint64_t> g_fast_total{0}, g_slow_total[5], g_lmf_total{0};

void flush_counts(ThreadWalk& t) {
  if (t.fast) g_fast_total.fetch_add(t.fast, std::memory_order_relaxed);
  if (t.via_lmf) g_lmf_total.fetch_add(t.via_lmf, std::memory_order_relaxed);
  t.fast = 0;
  t.via_lmf = 0;
  for (int i = 0; i < 5; ++i) {
    if (t.slow[i]) g_slow_total[i].fetch_add(t.slow[i], std::memory_order_relaxed);
    t.slow[i] = 0;
  }
}

void free_thread(void* p) {
  auto* t = static_cast<ThreadWalk*>(p);
  flush_counts(*t);
  tls_walk = nullptr;
  std::free(t);
}

ThreadWalk* thread_walk() {
  if (ThreadWalk* t = tls_walk) [[likely]] return t;
  void* mem = std::calloc(1, sizeof(ThreadWalk));
  if (!mem) return nullptr;
  auto* t = new (mem) ThreadWalk;
  std::memset(t->ips, 0, sizeof t->ips);
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
      t->lo = reinterpret_cast<uintptr_t>(addr);
      t->hi = t->lo + size;
      t->bounds_ok = true;
    }
    pthread_attr_destroy(&attr);
  }
  if (g_key_ok) pthread_setspecific(g_key, t);
  tls_walk = t;
  return t;
}

const CodeEntry* lookup_slow(uint64_t ip) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  const CodeEntry* e = g_table ? g_table->find(ip) : nullptr;
  return e ? e : &kNativeEntry;
}

// A cached lookup of `ip` in slot `s` that still holds, or nullptr: a cached entry holds until its
// range leaves the table (`gone`), a cached "not JIT code" until a range is added (native_tag).
inline const CodeEntry* cached(const ThreadWalk& t, const IpSlot& s, uint64_t ip) {
  if (s.ip != ip) return nullptr;
  const uintptr_t v = s.value;
  if (v & 1) return v == t.native_tag ? &kNativeEntry : nullptr;
  const auto* e = reinterpret_cast<const CodeEntry*>(v);
  return e && !e->gone.load(std::memory_order_acquire) ? e : nullptr;
}

// The code entry holding return address `ret` (the call instruction is before it, hence ret - 1),
// through the thread's cache: two ways per set, the most recent first. So freeing a method costs a
// walk nothing (before, every thread's cache was emptied: each of its next frames a lookup under
// the table's mutex), and the IPs of a compiler's deep stacks mostly stay cached (bench_dynamic:
// 1.49M lookups under the mutex with 512 direct-mapped slots, 0.23M with 4096).
inline const CodeEntry* lookup(ThreadWalk& t, uint64_t ret) {
  const uint64_t ip = ret - 1;
  IpSlot* set = &t.ips[((ip >> 2) % (kIpCache / 2)) * 2];
  if (const CodeEntry* e = cached(t, set[0], ip)) [[likely]] return e;
  if (const CodeEntry* e = cached(t, set[1], ip)) {
    std::swap(set[0], set[1]);
    return e;
  }
  const CodeEntry* e = lookup_slow(ip);
  set[1] = set[0];
  set[0] = IpSlot{ip, e == &kNativeEntry ? t.native_tag : reinterpret_cast<uintptr_t>(e)};
  return e;
}

// ---- signatures --------------------------------------------------------------------------------

// The native frames at one end of the managed frames, as libunwind found them once: slot k (at
// base + off[k]) holds return address val[k]. If every slot holds its value again, the native call chain
// is the same as then: the first slot is live (our own return address, or the outermost managed frame's),
// and each matching return address fixes the next frame's size (its CFI row), so the next slot is live
// too. Reads stay inside the thread's stack bounds whatever the memory holds.
constexpr unsigned kMaxPairs = 48;
constexpr unsigned kMaxSignatures = 32;
constexpr int kChecksPerSignature = 4;

struct Signature {
  uint32_t n = 0;
  int64_t lowest = 0, highest = 0;  // the lowest and highest slot offsets: one bounds check per signature
  int64_t off[kMaxPairs];
  uint64_t val[kMaxPairs];
  // bottom only: the innermost managed frame's return-address slot and where its rbp is saved
  int64_t managed_slot = 0;
  int64_t rbp_loc = 0;
  std::atomic<int> checks_left{kChecksPerSignature};
};

struct SignatureSet {
  Signature sigs[kMaxSignatures];
  std::atomic<uint32_t> count{0};
};

SignatureSet* g_bottom = nullptr;
SignatureSet* g_top = nullptr;
std::mutex g_learn_mutex;
std::atomic<int> g_learn_budget{1024};  // libunwind runs (~tens of us each): bounded, in case stacks never settle
std::atomic<int> g_global_checks{64};  // first fast backtraces all cross-checked
std::atomic<int> g_lmf_checks{64};     // first backtraces started from an LMF all cross-checked
std::atomic<int> g_lmf_top_checks{64};  // first backtraces ended at the first LMF all cross-checked
// Mono's mono_thread_info_current_unchecked (exported): the calling thread's MonoThreadInfo.
using ThreadInfoCurrent = void* (*)();
ThreadInfoCurrent g_thread_info = nullptr;
std::atomic<bool> g_use_ours{false};
bool g_verbose = false;
bool g_check_all = false;  // MLPD_WALKER=check: every backtrace of ours is compared with Mono's walk
// Mono's mono_method_get_context (exported, not in the public headers): the generic context of an
// inflated method (class and method instantiations), NULL for any other.
using GetContext = void* (*)(MonoMethod*);
GetContext g_method_context = nullptr;
// The wrapper type of a method (0: none, as MONO_WRAPPER_NONE). Mono 6.8 exports no reader for it.
// Its layout (metadata/class-internals.h): struct _MonoMethod {guint16 flags, iflags; guint32 token;
// MonoClass *klass; MonoMethodSignature *signature; const char *name; unsigned inline_info:1,
// inline_failure:1, wrapper_type:5, ...}: bits 2..6 of the 32-bit word at offset 32.
unsigned wrapper_type(const MonoMethod* m) {
  uint32_t bits;
  std::memcpy(&bits, reinterpret_cast<const char*>(m) + 32, sizeof bits);
  return (bits >> 2) & 31;
}

// True when the instantiation of an inflated method is open, i.e. holds generic parameters: Mono 6.8's
// shared generic code is compiled as such a method (`Select<TSource_REF, TResult_REF>`: the parameters
// are the sharing placeholders). Mono 6.8's layouts (metadata/class-internals.h): MonoGenericContext is
// {MonoGenericInst *class_inst, *method_inst}; MonoGenericInst is {gint32 id; guint type_argc : 22;
// guint is_open : 1; ...}, so is_open is bit 22 of the 32-bit word at offset 4.
bool open_instantiation(const void* inst) {
  if (!inst) return false;
  uint32_t bits;
  std::memcpy(&bits, static_cast<const char*>(inst) + 4, sizeof bits);
  return (bits >> 22) & 1;
}

// The part of the stack a walk may read: from the walk's own frame (the anchor: everything above
// it is the live, mapped stack of this thread) to the top of the thread's stack.
struct Bounds {
  uintptr_t lo, hi;
};

// True when the 8 bytes at base + off lie inside `b`. Computed without an end that could wrap
// around 2^64: `base` and `off` come from what the stack holds and may be anything.
inline bool readable(const Bounds& b, uintptr_t base, int64_t off) {
  if (base < b.lo || base > b.hi) return false;
  if (off >= 0) {
    const auto o = static_cast<uint64_t>(off);
    return o <= b.hi - base && b.hi - base - o >= 8;
  }
  const uint64_t o = 0 - static_cast<uint64_t>(off);
  return o <= base - b.lo && b.hi - (base - o) >= 8;
}

inline bool slots_match(const Signature& s, uintptr_t base, const Bounds& b) {
  if (!readable(b, base, s.lowest) || !readable(b, base, s.highest)) return false;
  for (uint32_t k = 0; k < s.n; ++k) {
    if (*reinterpret_cast<const uint64_t*>(base + s.off[k]) != s.val[k]) return false;
  }
  return true;
}

void set_bounds(Signature& s) {
  s.lowest = s.highest = s.n ? s.off[0] : 0;
  for (uint32_t k = 1; k < s.n; ++k) {
    s.lowest = std::min(s.lowest, s.off[k]);
    s.highest = std::max(s.highest, s.off[k]);
  }
}

// ---- shared generic frames --------------------------------------------------------------------

// (code entry, generic context value) -> the instantiation Mono's walk names for such a frame, learned
// from Mono's walks. Given the JIT info (the entry) and the context (a vtable, or a method runtime
// generic context), Mono's walk computes the generic context and inflates the declaring method with it
// (mini-exceptions.c, get_method_from_stack_frame); inflated methods are cached by Mono, so the same
// pair always names the same MonoMethod*. Open addressing, slots written once under g_generic_mutex
// (ctx and method first, then the entry with release) and read without a lock; kept at most 3/4 full,
// so a probe always ends on an empty slot. A slot's first uses are cross-checked against Mono's walk.
struct GenericSlot {
  std::atomic<const CodeEntry*> entry{nullptr};
  uint64_t ctx = 0;
  MonoMethod* method = nullptr;
  std::atomic<int> checks_left{2};
};
constexpr uint32_t kGenericSlots = 8192;
struct GenericTable {
  GenericSlot slots[kGenericSlots];
  uint32_t used = 0;  // guarded by g_generic_mutex
};
std::mutex g_generic_mutex;
std::atomic<GenericTable*> g_generic{nullptr};
int g_generic_tables = 0;  // tables made (a domain unload starts a new one); guarded by g_generic_mutex
constexpr int kMaxGenericTables = 8;

inline uint32_t generic_hash(const CodeEntry* e, uint64_t ctx) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(e) ^ (ctx * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
  return static_cast<uint32_t>(h >> 40) & (kGenericSlots - 1);
}

inline GenericSlot* generic_find(const CodeEntry* e, uint64_t ctx) {
  GenericTable* t = g_generic.load(std::memory_order_acquire);
  if (!t) return nullptr;
  for (uint32_t i = generic_hash(e, ctx);; i = (i + 1) & (kGenericSlots - 1)) {
    GenericSlot& s = t->slots[i];
    const CodeEntry* k = s.entry.load(std::memory_order_acquire);
    if (!k) return nullptr;
    if (k == e && s.ctx == ctx) return &s;
  }
}

// Adds pairs (guarded by g_generic_mutex held by the caller); false when the table is full.
bool generic_insert(const CodeEntry* e, uint64_t ctx, MonoMethod* m) {
  GenericTable* t = g_generic.load(std::memory_order_relaxed);
  if (!t && g_generic_tables < kMaxGenericTables) {
    t = new (std::nothrow) GenericTable();
    if (!t) return false;
    ++g_generic_tables;
    g_generic.store(t, std::memory_order_release);
  }
  if (!t || t->used >= kGenericSlots / 4 * 3) return false;
  for (uint32_t i = generic_hash(e, ctx);; i = (i + 1) & (kGenericSlots - 1)) {
    GenericSlot& s = t->slots[i];
    const CodeEntry* k = s.entry.load(std::memory_order_relaxed);
    if (k == e && s.ctx == ctx) return true;
    if (k) continue;
    s.ctx = ctx;
    s.method = m;
    s.entry.store(e, std::memory_order_release);
    ++t->used;
    return true;
  }
}

// A walk's shared generic frames that the table did not know (only when learning).
constexpr uint32_t kMaxMisses = 16;
struct Misses {
  uint32_t n = 0;
  uint32_t index[kMaxMisses];
  const CodeEntry* entry[kMaxMisses];
  uint64_t ctx[kMaxMisses];
};

// ---- the fast walk -----------------------------------------------------------------------------

constexpr int kOk = 0, kNoBottom = 1, kNoManaged = 2, kNoTop = 3, kNoGeneric = 4;  // slow[]: by reason

struct FastResult {
  uint32_t n = 0;
  Signature* bottom = nullptr;
  Signature* top = nullptr;
  uint64_t top_ip = 0, top_sp = 0, top_rbp = 0;  // the native caller of the outermost managed frame
  GenericSlot* generic = nullptr;  // a learned generic pair this walk used whose cross-checks are due
  bool lmf = false;                // the innermost managed frame came from the thread's last LMF
  bool lmf_top = false;            // the walk ended as Mono's does at the thread's first LMF
  bool segments = false;           // the walk went on from an LMF above native frames, as Mono's does
};

inline uint64_t load(uintptr_t a) { return *reinterpret_cast<const uint64_t*>(a); }

bool read_memory(uint64_t addr, uint8_t* out, size_t n);

// The number of collections so far (any generation), plus one: objects move and die only in a
// collection, so an address that held an object of some vtable holds it until the count changes.
using CollectionCount = int (*)(int);
CollectionCount g_collection_count = nullptr;
inline uint64_t gc_epoch() {
  if (!g_collection_count) return 0;
  return (static_cast<uint64_t>(static_cast<uint32_t>(g_collection_count(1))) << 32) +
         static_cast<uint32_t>(g_collection_count(0)) + 1;
}

// Whether `obj` lies in sgen's nursery: Mono's mono_gc_get_generation answers 0 exactly then, from the
// address alone (sgen_ptr_in_nursery: no dereference). The nursery is mapped once when the GC starts
// and never unmapped, so such an address can be loaded directly. Usable only once probed (sgen, its
// nursery allocated): Boehm's answers 0 for every address, and sgen's too for low addresses before
// the nursery exists; both are refused (0: not probed yet, 1: usable, -1: not).
using GetGeneration = int (*)(MonoObject*);
GetGeneration g_generation_of = nullptr;
std::atomic<int> g_nursery_check{0};
int g_probe_static = 0;
bool in_nursery(uint64_t obj) {
  int state = g_nursery_check.load(std::memory_order_relaxed);
  if (state == 0) [[unlikely]] {
    const bool ok = g_generation_of && g_generation_of(nullptr) == 1 &&
                    g_generation_of(reinterpret_cast<MonoObject*>(&g_probe_static)) == 1;
    state = ok ? 1 : -1;
    g_nursery_check.store(state, std::memory_order_relaxed);
  }
  return state == 1 && (obj & 7) == 0 && g_generation_of(reinterpret_cast<MonoObject*>(obj)) == 0;
}

// The vtable of the object at `obj` (its first word). The address comes from a stack slot, and would
// be a wild one if our reading of the frame were wrong: loaded directly only inside the nursery (where
// `this` objects mostly are: every one of the 77,008 reads of bench_dynamic), else copied with
// process_vm_readv (a system call of ~1 us). Each thread keeps the last ones copied, valid until the
// next collection (epoch 0: no count, no cache).
inline uint64_t object_vtable(ThreadWalk& t, uint64_t obj, uint64_t& epoch) {
  if (in_nursery(obj)) return load(obj);
  if (epoch == 0) epoch = gc_epoch();
  ThisSlot& c = t.objs[(obj >> 4) % kThisCache];
  if (epoch != 0 && c.obj == obj && c.epoch == epoch) return c.vtable;
  uint64_t vt = 0;
  if (!read_memory(obj, reinterpret_cast<uint8_t*>(&vt), sizeof vt)) return 0;
  c = ThisSlot{obj, vt, epoch};
  return vt;
}

// The context value of a shared generic frame (a vtable or a method runtime generic context), read as
// Mono's walk reads it (mini-exceptions.c, get_generic_info_from_stack_frame): from the stack slot the
// JIT info names, and for `this`, the object's vtable. 0 when it cannot be read.
inline uint64_t generic_context(ThreadWalk& t, const CodeEntry& e, uint64_t ip, uint64_t sp, uint64_t rbp,
                                const Bounds& b, uint64_t& epoch) {
  if (ip - e.start < e.ctx_from) return 0;
  const uint64_t base = e.ctx_base == 5 ? rbp : sp;
  if (!readable(b, base, e.ctx_offset)) return 0;
  uint64_t v = load(base + static_cast<int64_t>(e.ctx_offset));
  if (v == 0 || (v & 7) != 0) return 0;
  if (e.ctx == kCtxThis) v = object_vtable(t, v, epoch);
  return v;
}

constexpr int kLmfUnknown = 0, kLmfFrame = 1, kLmfNone = 2;  // lmf_frame's answers
int lmf_frame(ThreadWalk& t, const Bounds& b, uint64_t& ip, uint64_t& sp, uint64_t& rbp);
// The managed frame LMF record `lmf` names (kLmfFrame), read inside `b`, or kLmfUnknown.
int lmf_record(const Bounds& b, uint64_t lmf, uint64_t& ip, uint64_t& sp, uint64_t& rbp);

int fast_walk(uintptr_t anchor, ThreadWalk& t, MonoMethod** out, uint32_t max, Signature* extra_bottom,
              Signature* extra_top, FastResult& r, Misses* misses = nullptr, bool allow_lmf = false) {
  if (anchor < t.lo || anchor >= t.hi) return kNoBottom;
  const Bounds b{anchor, t.hi};
  // Bottom: which learned native chain leads from us to managed code. One chain can be the start of
  // another (the allocator's slow path goes deeper before it reaches managed code): the one whose
  // next return address is managed code is the one.
  Signature* bottom = nullptr;
  const uint32_t nb = g_bottom->count.load(std::memory_order_acquire);
  uintptr_t slot = 0;
  for (uint32_t i = 0; i <= nb && !bottom; ++i) {
    Signature* s = i < nb ? &g_bottom->sigs[i] : extra_bottom;
    if (!s || !slots_match(*s, anchor, b)) continue;
    if (!readable(b, anchor, s->managed_slot) || !readable(b, anchor, s->rbp_loc)) continue;
    slot = anchor + s->managed_slot;
    if (lookup(t, load(slot))->kind != kNative) bottom = s;
  }
  uint64_t ip, sp, rbp;
  if (bottom) {
    r.bottom = bottom;
    ip = load(slot);
    sp = slot + 8;
    rbp = load(anchor + bottom->rbp_loc);
  } else if (const int lmf = allow_lmf ? lmf_frame(t, b, ip, sp, rbp) : kLmfUnknown; lmf == kLmfFrame) {
    r.lmf = true;
  } else if (lmf == kLmfNone) {
    r.lmf = true;  // Mono's walk gives no frame either
    r.n = 0;
    return kOk;
  } else {
    return kNoBottom;
  }
  // The LMF Mono's walk would take at the first native frame above the managed ones, followed as
  // Mono's walk follows it (mini-exceptions.c, mono_find_jit_info_ext): after each frame, a record the
  // stack pointer has passed is dropped (an LMF lives in the frame of the wrapper or trampoline that
  // pushed it). Zero when not known (the thread's MonoJitTlsData not found yet, or a record outside
  // the stack bounds): the top is then a learned native chain.
  const uint64_t first_lmf = t.jit_tls ? load(t.jit_tls + 24) : 0;
  uint64_t lmf = first_lmf ? load(t.jit_tls + 16) : 0;
  auto pass_lmf = [&](uint64_t now_sp) {
    if (lmf && lmf != first_lmf && now_sp >= lmf) lmf = readable(b, lmf, 0) ? load(lmf) & ~uint64_t{7} : 0;
  };
  pass_lmf(sp);  // a trampoline's record lies below its managed caller's frame
  uint32_t n = 0;
  uint64_t epoch = 0;  // gc_epoch(), read when first needed
  for (;;) {
    const CodeEntry* e = lookup(t, ip);
    if (e->kind == kNative) {
      // Native code above the managed frames: Mono's walk goes on from its LMF, when that is a record
      // of a wrapper or trampoline (managed code that called into the runtime, which ran the managed
      // code below: a class constructor, a runtime invoke), at the managed frame the record names.
      uint64_t lip, lsp, lrbp;
      if (n == 0 || !lmf || lmf == first_lmf || lmf_record(b, lmf, lip, lsp, lrbp) != kLmfFrame || lsp <= sp ||
          lookup(t, lip)->kind == kNative) {
        break;
      }
      lmf = load(lmf) & ~uint64_t{7};
      ip = lip;
      sp = lsp;
      rbp = lrbp;
      pass_lmf(sp);
      r.segments = true;
      continue;
    }
    if (e->kind == kUnsure || ip - 1 < e->body) {  // (an IP in the prologue: a signal's)
      r.n = n;
      return kNoManaged;
    }
    if (e->ctx == kCtxNone) [[likely]] {
      out[n] = e->method;
    } else {
      const uint64_t v = generic_context(t, *e, ip, sp, rbp, b, epoch);
      if (!v) {
        r.n = n;
        return kNoManaged;
      }
      GenericSlot* g = generic_find(e, v);
      if (g) {
        out[n] = g->method;
        if (!r.generic && g->checks_left.load(std::memory_order_relaxed) > 0) r.generic = g;
      } else if (!misses) {
        return kNoGeneric;
      } else {
        if (misses->n == kMaxMisses) {
          r.n = n;
          return kNoManaged;
        }
        misses->index[misses->n] = n;
        misses->entry[misses->n] = e;
        misses->ctx[misses->n] = v;
        ++misses->n;
        out[n] = nullptr;
      }
    }
    ++n;
    if (n == max) {
      r.n = n;
      return kOk;  // Mono's walk stops here too
    }
    uint64_t ret, caller_sp, caller_rbp;
    if (e->kind == kFramePointer) {
      if (rbp < sp || rbp > b.hi || b.hi - rbp < 16) {
        r.n = n;
        return kNoManaged;
      }
      caller_rbp = load(rbp);
      ret = load(rbp + 8);
      caller_sp = rbp + 16;
    } else {
      if (sp > b.hi || b.hi - sp < uint64_t{e->frame} + 8) {
        r.n = n;
        return kNoManaged;
      }
      ret = load(sp + e->frame);
      caller_sp = sp + e->frame + 8;
      caller_rbp = e->rbp_save >= 0 ? load(sp + static_cast<uint32_t>(e->rbp_save)) : rbp;
    }
    if (caller_sp <= sp) {
      r.n = n;
      return kNoManaged;
    }
    ip = ret;
    sp = caller_sp;
    rbp = caller_rbp;
    pass_lmf(sp);
  }
  if (n == 0) return kNoManaged;  // the chain did not end in managed code
  r.n = n;
  r.top_ip = ip;
  r.top_sp = sp;
  r.top_rbp = rbp;
  // Native code above, and Mono's walk would go on from the thread's first LMF, the top entry (rsp 0:
  // mono_arch_unwind_frame stops there): whatever native frames lie above, Mono's walk ends here. So
  // do the allocations of managed code that the runtime runs while it handles a throw (an exception's
  // constructor, a filter), whose native chain above is the throw's.
  if (lmf && lmf == first_lmf && (lmf & 7) == 0 && load(lmf + 16) == 0 && load(lmf) == 0) {
    r.lmf_top = true;
    return kOk;
  }
  // Top: the native frames above must be a learned chain to the thread's first frame, or Mono's walk
  // could find more managed frames above them (reflection, a delegate called from native code).
  const uint32_t nt = g_top->count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i <= nt; ++i) {
    Signature* s = i < nt ? &g_top->sigs[i] : extra_top;
    if (s && s->val[0] == ip && slots_match(*s, sp, b)) {
      r.top = s;
      return kOk;
    }
  }
  return kNoTop;
}

// ---- Mono's walk -------------------------------------------------------------------------------

// mono_walk(): mono_walk.h.

bool same(MonoMethod* const* a, uint32_t na, MonoMethod* const* b, uint32_t nb) {
  return na == nb && std::memcmp(a, b, na * sizeof(MonoMethod*)) == 0;
}

void disable(const char* why) {
  if (!g_use_ours.exchange(false)) return;
  if (g_verbose) {
    std::string line = std::string("mlpd: our stack walker disagreed with Mono's (") + why +
                       "); backtraces use mono_stack_walk_no_il from now on\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
}

// ---- learning ----------------------------------------------------------------------------------

// libunwind, opened with dlopen(RTLD_LOCAL) when first needed and never linked: linked, libunwind.so.8
// would put its _Unwind_* into the host's global scope, in front of libgcc_s's.
struct Unwind {
  decltype(&::unw_tdep_getcontext) getcontext = nullptr;
  decltype(&::unw_init_local) init_local = nullptr;
  decltype(&::unw_step) step = nullptr;
  decltype(&::unw_get_reg) get_reg = nullptr;
  decltype(&::unw_get_save_loc) get_save_loc = nullptr;
};
// glibc 2.35's _dl_find_object is made for unwinders (lock-free, fast); dladdr walks symbol tables.
using FindObject = int (*)(void*, struct dl_find_object*);
FindObject g_find_object = nullptr;

Unwind g_unw;  // guarded by g_learn_mutex until bound, then read-only
int g_unw_state = 0;  // 0 not tried, 1 bound, -1 unavailable (guarded by g_learn_mutex)

#define MLPD_STR2(x) #x
#define MLPD_STR(x) MLPD_STR2(x)
bool bind_unwind() {
  if (g_unw_state) return g_unw_state > 0;
  g_unw_state = -1;
  g_find_object = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  void* h = dlopen("libunwind.so.8", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  // The API names are macros for the local-only entry points (_ULx86_64_step, _Ux86_64_getcontext).
  g_unw.getcontext = reinterpret_cast<decltype(g_unw.getcontext)>(dlsym(h, MLPD_STR(unw_tdep_getcontext)));
  g_unw.init_local = reinterpret_cast<decltype(g_unw.init_local)>(dlsym(h, MLPD_STR(unw_init_local)));
  g_unw.step = reinterpret_cast<decltype(g_unw.step)>(dlsym(h, MLPD_STR(unw_step)));
  g_unw.get_reg = reinterpret_cast<decltype(g_unw.get_reg)>(dlsym(h, MLPD_STR(unw_get_reg)));
  g_unw.get_save_loc = reinterpret_cast<decltype(g_unw.get_save_loc)>(dlsym(h, MLPD_STR(unw_get_save_loc)));
  if (!g_unw.getcontext || !g_unw.init_local || !g_unw.step || !g_unw.get_reg || !g_unw.get_save_loc) return false;
  g_unw_state = 1;
  return true;
}
#undef MLPD_STR
#undef MLPD_STR2

// Only frames in code of a loaded ELF object are stepped with libunwind: those have CFI. JIT-made code
// we do not know (trampolines, code of methods whose jit_done we have not seen) has none, and libunwind
// would guess from rbp, which there may hold anything.
bool in_loaded_object(uint64_t ret) {
  void* pc = reinterpret_cast<void*>(ret - 1);
  if (g_find_object) {
    dl_find_object found;
    return g_find_object(pc, &found) == 0 && found.dlfo_eh_frame != nullptr;
  }
  Dl_info info;
  return dladdr(pc, &info) != 0 && info.dli_fbase != nullptr;
}

// Mono's throw trampolines (mini/exceptions-amd64.c, get_throw_trampoline) are JIT-made code without
// CFI or jit_done: managed code calls one, it allocates a fixed frame (`sub $N,%rsp`), stores the
// registers into a MonoContext inside it (rbp with `mov %rbp,d(%rsp)`) and calls into the runtime,
// which raises the throw event. Read from the code before the return address: the last `sub $N,%rsp`
// within kTrampolineScan bytes and the first store of rbp after it; the call that returns to `ret` must
// be the only rsp change after the sub (no push, no second sub), as the trampolines are emitted. The
// caller's return address is then at [sp + N]. Learning checks the whole walk against Mono's.
struct TrampolineFrame {
  uint32_t size = 0;
  int32_t rbp_save = -1;
};
constexpr size_t kTrampolineScan = 512;

// Copies [addr, addr + n) if it is mapped and readable (a fault is an error, not a crash).
// errno tells a fault (EFAULT) from a refused call (EPERM, ENOSYS: a seccomp sandbox).
// Our pid, for process_vm_readv: getpid() is a system call in current glibc (it was 57% of a
// program's samples with `alloc` backtraces: issue 22). Taken at init() and in the child of a fork
// (pthread_atfork; a child that runs our code without glibc's fork, e.g. after a raw clone, would
// read its parent: a wrong backtrace, never a fault).
pid_t g_pid = 0;
void refresh_pid() { g_pid = getpid(); }

bool read_memory(uint64_t addr, uint8_t* out, size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return process_vm_readv(g_pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

bool read_trampoline(uint64_t ret, TrampolineFrame& f) {
  uint8_t code[kTrampolineScan];
  constexpr uint64_t kPage = 4096;
  if (ret <= kTrampolineScan) return false;
  // Copied with process_vm_readv, so that an unmapped address is an error, not a fault. The bytes before
  // `ret` on the page of ret - 1 (the call instruction's last byte) are code that just ran: where a
  // sandbox refuses the call, they are read directly; the page before is then left out.
  const uint64_t lo = ret - kTrampolineScan;
  const uint64_t page_start = (ret - 1) & ~(kPage - 1);
  const uint64_t same_page = std::max(lo, page_start);
  size_t len = 0;
  if (lo < page_start && read_memory(lo, code, page_start - lo)) len = page_start - lo;
  if (!read_memory(same_page, code + len, ret - same_page)) {
    if (errno == EFAULT) return false;
    std::memcpy(code + len, reinterpret_cast<const void*>(same_page), ret - same_page);
  }
  len += ret - same_page;
  // The call that returns to `ret`: `call *%r11` (41 ff d3) or `call *%rax`.. (ff d0..d7), or rel32 (e8).
  size_t end;
  if (len >= 3 && code[len - 3] == 0x41 && code[len - 2] == 0xff && (code[len - 1] & 0xf8) == 0xd0) {
    end = len - 3;
  } else if (len >= 2 && code[len - 2] == 0xff && (code[len - 1] & 0xf8) == 0xd0) {
    end = len - 2;
  } else if (len >= 5 && code[len - 5] == 0xe8) {
    end = len - 5;
  } else {
    return false;
  }
  // The last `sub $imm32,%rsp` (48 81 ec) or `sub $imm8,%rsp` (48 83 ec) before the call.
  size_t at = SIZE_MAX;
  for (size_t i = end; i-- > 0;) {
    if (i + 3 <= end && code[i] == 0x48 && (code[i + 1] == 0x81 || code[i + 1] == 0x83) && code[i + 2] == 0xec) {
      at = i;
      break;
    }
  }
  if (at == SIZE_MAX) return false;
  uint32_t n;
  size_t i;
  if (code[at + 1] == 0x81) {
    if (at + 7 > end) return false;
    std::memcpy(&n, code + at + 3, 4);
    i = at + 7;
  } else {
    if (at + 4 > end) return false;
    n = code[at + 3];
    i = at + 4;
  }
  if (n == 0 || n >= 0x1000 || n % 8 != 0) return false;
  // No push/pop (50..5f, 41 50..41 5f) between the sub and the call would be sure only with a full
  // decoder; the learned chain is kept only if the walk it gives equals Mono's (learn()).
  for (; i + 5 <= end; ++i) {
    // mov %rbp,disp8(%rsp): 48 89 6c 24 d8; mov %rbp,disp32(%rsp): 48 89 ac 24 d32
    if (code[i] == 0x48 && code[i + 1] == 0x89 && code[i + 3] == 0x24 && (code[i + 2] == 0x6c || code[i + 2] == 0xac)) {
      int32_t d;
      if (code[i + 2] == 0x6c) {
        d = static_cast<int8_t>(code[i + 4]);
      } else {
        if (i + 8 > end) break;
        std::memcpy(&d, code + i + 4, 4);
      }
      if (d >= 0 && static_cast<uint32_t>(d) + 8 <= n) f.rbp_save = d;
      break;
    }
  }
  f.size = n;
  return true;
}

// The native chain from `anchor` (collect()'s frame) up to the first managed frame.
__attribute__((noinline)) bool learn_bottom(uintptr_t anchor, ThreadWalk& t, Signature& s) {
  unw_context_t uc;
  unw_cursor_t c;
  if (g_unw.getcontext(&uc) != 0 || g_unw.init_local(&c, &uc) != 0) return false;
  unw_word_t ip = 0, sp = 0;
  // Up to collect()'s caller: its SP is collect()'s CFA (anchor + 16: collect() keeps a frame pointer).
  for (int i = 0; i < 8 && sp != anchor + 16; ++i) {
    if (g_unw.step(&c) <= 0 || g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0) return false;
  }
  if (sp != anchor + 16) return false;
  s.n = 0;
  for (;;) {
    if (g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0) return false;
    const CodeEntry* e = lookup(t, ip);
    if (e->kind == kUnsure) return false;
    if (e->kind != kNative) {
      unw_save_loc_t loc;
      if (g_unw.get_save_loc(&c, UNW_X86_64_RBP, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return false;
      s.managed_slot = static_cast<int64_t>(sp - 8 - anchor);
      s.rbp_loc = static_cast<int64_t>(loc.u.addr - anchor);
      set_bounds(s);
      return s.n > 0;
    }
    if (s.n < kMaxPairs && !in_loaded_object(ip) && e->kind == kNative) {
      // JIT-made code that is no method's (no jit_done) and has no CFI: Mono's throw trampolines.
      TrampolineFrame f;
      if (read_trampoline(ip, f)) {
        const uint64_t ret_slot = sp + f.size;
        if (ret_slot < sp || ret_slot < anchor || ret_slot + 8 > t.hi) return false;
        const CodeEntry* m = lookup(t, load(ret_slot));
        if (m->kind == kNative || m->kind == kUnsure) return false;
        int64_t rbp_loc;
        if (f.rbp_save >= 0) {
          rbp_loc = static_cast<int64_t>(sp + static_cast<uint32_t>(f.rbp_save) - anchor);
        } else {
          unw_save_loc_t loc;
          if (g_unw.get_save_loc(&c, UNW_X86_64_RBP, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return false;
          rbp_loc = static_cast<int64_t>(loc.u.addr - anchor);
        }
        s.off[s.n] = static_cast<int64_t>(sp - 8 - anchor);
        s.val[s.n] = ip;
        ++s.n;
        s.managed_slot = static_cast<int64_t>(ret_slot - anchor);
        s.rbp_loc = rbp_loc;
        set_bounds(s);
        return true;
      }
    }
    if (s.n == kMaxPairs || !in_loaded_object(ip)) return false;
    s.off[s.n] = static_cast<int64_t>(sp - 8 - anchor);
    s.val[s.n] = ip;
    ++s.n;
    if (g_unw.step(&c) <= 0) return false;
  }
}

// The native chain above the outermost managed frame, up to the thread's first frame.
bool learn_top(const FastResult& r, ThreadWalk& t, Signature& s) {
  unw_context_t uc;
  if (g_unw.getcontext(&uc) != 0) return false;
  uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(r.top_ip - 1);  // inside the call: its CFI row
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(r.top_sp);
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(r.top_rbp);
  unw_cursor_t c;
  if (g_unw.init_local(&c, &uc) != 0) return false;
  s.n = 1;
  s.off[0] = -8;  // the outermost managed frame's return address, the value the walk ended on
  s.val[0] = r.top_ip;
  if (!in_loaded_object(r.top_ip)) return false;
  for (;;) {
    const int rc = g_unw.step(&c);
    if (rc == 0) {  // the thread's first frame
      set_bounds(s);
      return true;
    }
    if (rc < 0 || s.n == kMaxPairs) return false;
    unw_word_t ip = 0, sp = 0;
    if (g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0) return false;
    if (ip == 0) {
      set_bounds(s);
      return true;
    }
    if (sp <= r.top_sp || sp > t.hi) return false;
    if (lookup(t, ip)->kind != kNative) return false;  // more managed code above: leave it to Mono
    if (!in_loaded_object(ip)) return false;
    s.off[s.n] = static_cast<int64_t>(sp - 8 - r.top_sp);
    s.val[s.n] = ip;
    ++s.n;
  }
}

bool publish(SignatureSet& set, const Signature& s) {
  const uint32_t n = set.count.load(std::memory_order_relaxed);
  if (n == kMaxSignatures) return false;
  Signature& d = set.sigs[n];
  d.n = s.n;
  d.lowest = s.lowest;
  d.highest = s.highest;
  std::memcpy(d.off, s.off, sizeof d.off);
  std::memcpy(d.val, s.val, sizeof d.val);
  d.managed_slot = s.managed_slot;
  d.rbp_loc = s.rbp_loc;
  d.checks_left.store(kChecksPerSignature, std::memory_order_relaxed);
  set.count.store(n + 1, std::memory_order_release);
  return true;
}

// After Mono's walk gave `expected`: learn what was missing and keep it only if our walk then agrees
// (a chain that does not is simply not kept: learning is a guess; only a kept chain that later
// disagrees switches our walker off).
void learn(uintptr_t anchor, ThreadWalk& t, int why, MonoMethod* const* expected, uint32_t n_expected,
           uint32_t max, bool lmf) {
  if (g_learn_budget.load(std::memory_order_relaxed) <= 0) return;
  // Never wait: another thread learning now is enough (and no lock order with the loader's locks).
  std::unique_lock<std::mutex> lock(g_learn_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (g_learn_budget.fetch_sub(1, std::memory_order_relaxed) <= 0) return;
  if (!bind_unwind()) {
    g_learn_budget.store(0, std::memory_order_relaxed);
    return;
  }
  static Signature bottom, top;  // guarded by g_learn_mutex
  MonoMethod* ours[format::kMaxFrames];
  FastResult r;
  if (why == kNoBottom) {
    if (!learn_bottom(anchor, t, bottom)) return;
    why = fast_walk(anchor, t, ours, max, &bottom, nullptr, r);
    if (why == kNoBottom) return;
    if (why == kOk) {
      if (same(ours, r.n, expected, n_expected)) publish(*g_bottom, bottom);
      return;
    }
    if (why != kNoTop) return;
    // The top is unknown too: learn it with this bottom, and keep both only if the whole walk agrees.
    if (!learn_top(r, t, top)) return;
    if (fast_walk(anchor, t, ours, max, &bottom, &top, r) != kOk) return;
    if (same(ours, r.n, expected, n_expected)) {
      publish(*g_bottom, bottom);
      publish(*g_top, top);
    }
    return;
  }
  if (why != kNoTop) return;
  if (fast_walk(anchor, t, ours, max, nullptr, nullptr, r, nullptr, lmf) != kNoTop) return;
  if (!learn_top(r, t, top)) return;
  if (fast_walk(anchor, t, ours, max, nullptr, &top, r, nullptr, lmf) != kOk) return;
  if (same(ours, r.n, expected, n_expected)) publish(*g_top, top);
}

// After Mono's walk gave `expected` for a walk of ours that met shared generic frames it did not know:
// walk again, noting those frames' (entry, context) pairs, and learn what Mono named for each, when
// every other frame of ours is the frame Mono reported at the same place (all of them when our walk
// was complete, the frames we had before it stopped otherwise, at least one).
void learn_generic(uintptr_t anchor, ThreadWalk& t, MonoMethod* const* expected, uint32_t n_expected, uint32_t max,
                   bool lmf) {
  MonoMethod* ours[format::kMaxFrames];
  FastResult r;
  Misses misses;
  const int why = fast_walk(anchor, t, ours, max, nullptr, nullptr, r, &misses, lmf);
  if (why == kNoBottom || misses.n == 0) return;
  if (why == kOk ? r.n != n_expected : r.n > n_expected) return;
  if (r.n <= misses.n) return;  // nothing of ours to hold the places together
  for (uint32_t i = 0; i < r.n; ++i) {
    if (ours[i] && ours[i] != expected[i]) return;
  }
  std::unique_lock<std::mutex> lock(g_generic_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (uint32_t k = 0; k < misses.n; ++k) {
    MonoMethod* m = expected[misses.index[k]];
    if (!m || !generic_insert(misses.entry[k], misses.ctx[k], m)) return;
  }
}

// Cross-checks a fast result against Mono's walk while checks are due (the first backtraces, the first
// uses of each signature). Returns false (and switches ours off) on a difference.
bool cross_check(FastResult& r, MonoMethod** frames, uint32_t max) {
  bool due = g_check_all;
  auto take = [&due](std::atomic<int>& c) {
    if (c.load(std::memory_order_relaxed) > 0 && c.fetch_sub(1, std::memory_order_relaxed) > 0) due = true;
  };
  take(g_global_checks);
  if (r.bottom) take(r.bottom->checks_left);
  if (r.top) take(r.top->checks_left);
  if (r.generic) take(r.generic->checks_left);
  if (r.lmf) take(g_lmf_checks);
  if (r.lmf_top || r.segments) take(g_lmf_top_checks);
  if (!due) return true;
  MonoMethod* theirs[format::kMaxFrames];
  const uint32_t n = mono_walk(theirs, max);
  if (same(frames, r.n, theirs, n)) return true;
  disable("a backtrace");
  std::memcpy(frames, theirs, n * sizeof(MonoMethod*));
  r.n = n;
  return false;
}

// ---- Mono 6.8's last managed frame ------------------------------------------------------------

// Mono's walk, started in native code (as it is from our callbacks), finds no JIT info there and goes
// straight to the thread's last LMF, the record a managed-to-native wrapper or a trampoline pushed on
// its frame when managed code called into the runtime (mini/exceptions-amd64.c, mono_arch_unwind_frame):
// its first frame is the managed frame that record names, whatever native frames lie below it. So
// when no learned native chain leads from us to managed code (allocations inside the JIT, class
// initialisation, the generic trampoline: chains of every shape), an allocation's walk starts there.
// Mono 6.8's layouts (mini/mini-runtime.h, mini/mini-amd64.h, utils/mono-context.h):
// MonoJitTlsData {gpointer end_of_stack; guint32 stack_size; MonoLMF *lmf; MonoLMF *first_lmf; ...};
// MonoLMF {gpointer previous_lmf; guint64 rbp; guint64 rsp}, whose previous_lmf's bit 1 marks a
// MonoLMFExt (debugger invoke, interpreter: left to Mono) and bit 2 a MonoLMFTramp {MonoLMF lmf;
// MonoContext *ctx; ...}, the trampoline's saved registers (gregs[16]: rip at 16, rsp at 4, rbp at 5;
// rip is the return address into the managed caller, rsp the caller's: mini/tramp-amd64.c saves
// rsp + framesize + 16). A wrapper's LMF names the wrapper's frame: rbp and rsp as at its call, whose
// return address is at [rsp - 8].
// MonoThreadInfo's layout is long and version-bound, and its unwind state points to the thread's
// MonoJitTlsData only once the thread was suspended (a collection): the MonoJitTlsData is looked for
// among the first 2 KiB of the thread's MonoThreadInfo (mono_thread_info_current_unchecked, exported),
// as the pointer that reads (with process_vm_readv) as this thread's: an end of stack and a current LMF
// on this stack above us, a first LMF. Once found it is this thread's for the thread's life, and its
// `lmf` word is loaded directly; the LMF records are read only on this thread's stack above our own
// frame (bounds-checked, as every read of the fast walk); the first uses are cross-checked against
// Mono's walk.
void find_jit_tls(ThreadWalk& t, uintptr_t anchor) {
  ++t.jit_tls_tries;
  if (!g_thread_info) return;
  const auto info = reinterpret_cast<uint64_t>(g_thread_info());
  if (!info) return;
  uint64_t words[256];
  if (!read_memory(info, reinterpret_cast<uint8_t*>(words), sizeof words)) return;
  for (const uint64_t w : words) {
    if (!w || (w & 7) || (w >= t.lo && w <= t.hi)) continue;
    uint64_t j[4];
    if (!read_memory(w, reinterpret_cast<uint8_t*>(j), sizeof j)) continue;
    if (j[0] < anchor || j[0] > t.hi) continue;                      // end_of_stack
    if (!j[3] || (j[3] & 7) != 0) continue;                          // first_lmf
    // lmf: on this stack above us, or the first one (no managed frame called into native code yet,
    // or a throw's allocations: see lmf_frame)
    if (j[2] != j[3] && (j[2] < anchor || j[2] >= t.hi || (j[2] & 7) != 0)) continue;
    // first_lmf is the top entry: allocated zeroed when the thread was set up, never written since
    uint64_t top[3];
    if (!read_memory(j[3], reinterpret_cast<uint8_t*>(top), sizeof top) || top[0] || top[1] || top[2]) continue;
    t.jit_tls = w;
    return;
  }
}

// kLmfFrame: ip, sp and rbp are the managed frame the LMF names. kLmfNone: the LMF is the thread's
// first (MonoJitTlsData's first_lmf, Mono's "top LMF entry": allocated zeroed at attach, rsp 0), where
// Mono's walk stops at once (mono_arch_unwind_frame: FALSE), so it gives no frame: the runtime's own
// allocations on a thread that never called into native code from managed code, and every allocation
// of a throw (the trace_ips array, a stack overflow's or an exception's made by the runtime): managed
// code calls the throw trampoline directly, which pushes no LMF (mini/exceptions-amd64.c,
// get_throw_trampoline). kLmfUnknown: left to Mono.
int lmf_frame(ThreadWalk& t, const Bounds& b, uint64_t& ip, uint64_t& sp, uint64_t& rbp) {
  if (!t.jit_tls) {
    // Until the JIT has set the thread up (the main thread's first allocations) its MonoThreadInfo
    // does not point to it yet: looked for again at the 2nd, 4th, 8th ... 256th walk that wanted it,
    // then every 256th time, at most 64 times.
    const uint32_t k = ++t.lmf_misses;
    if (t.jit_tls_tries >= 64 || ((k & (k - 1)) != 0 && (k & 255) != 0)) return kLmfUnknown;
    find_jit_tls(t, b.lo);
    if (!t.jit_tls) return kLmfUnknown;
  }
  const uint64_t lmf = load(t.jit_tls + 16);
  if (lmf == load(t.jit_tls + 24)) {
    // The first LMF: MonoLMF {previous_lmf, rbp, rsp}, on the heap (g_new0), Mono's for the thread's
    // life; rsp 0 marks the top entry (always, but checked).
    if (lmf == 0 || (lmf & 7) != 0) return kLmfUnknown;
    return load(lmf + 16) == 0 && load(lmf) == 0 ? kLmfNone : kLmfUnknown;
  }
  return lmf_record(b, lmf, ip, sp, rbp);
}

int lmf_record(const Bounds& b, uint64_t lmf, uint64_t& ip, uint64_t& sp, uint64_t& rbp) {
  if ((lmf & 7) != 0 || !readable(b, lmf, 16)) return kLmfUnknown;
  const uint64_t prev = load(lmf);
  if (prev & 2) return kLmfUnknown;
  if (prev & 4) {
    if (!readable(b, lmf, 24)) return kLmfUnknown;
    const uint64_t ctx = load(lmf + 24);
    if ((ctx & 7) != 0 || !readable(b, ctx, 16 * 8)) return kLmfUnknown;
    ip = load(ctx + 16 * 8);
    sp = load(ctx + 4 * 8);
    rbp = load(ctx + 5 * 8);
  } else {
    sp = load(lmf + 16);
    rbp = load(lmf + 8);
    if (!readable(b, sp, -8)) return kLmfUnknown;
    ip = load(sp - 8);
  }
  return sp >= b.lo && sp <= b.hi ? kLmfFrame : kLmfUnknown;
}

// ---- Mono 6.8's JIT info ------------------------------------------------------------------------

// Mono 6.8 exports no reader for a method's MonoGenericJitInfo (where a frame of shared generic code
// keeps its generic context). Its layouts (metadata/domain-internals.h), checked against this
// runtime's JIT info: struct _MonoJitInfo {MonoMethod *method; next; gpointer code_start; guint32
// unwind_info; int code_size; guint32 num_clauses:15, domain_neutral:1, has_generic_jit_info:1, ...;
// gpointer gc_info; gpointer seq_points; MonoJitExceptionInfo clauses[]}: code_start at 16, code_size
// at 28, the bits at 32, clauses at 56, each 64 bytes ({guint32 flags; gint32 exvar_offset; gpointer
// try_start, try_end, handler_start; int clause_index; guint32 try_offset, try_len, handler_offset,
// handler_len; data}). The MonoGenericJitInfo follows the clauses: {MonoGenericSharingContext *gsctx;
// int nlocs; MonoDwarfLocListEntry *locations; gint32 this_offset; guint8 this_reg; gboolean
// has_this:1, this_in_reg:1} (has_this is bit 0 of the byte at 29), and a location list entry is
// {gboolean is_reg; int reg, offset, from, to} (20 bytes). Mono's walk reads the context
// (mini-exceptions.c, get_generic_info_from_stack_frame): with a location list, from the first entry
// whose [from, to) holds the frame's code offset (to 0: up to the end); without one, from this_reg,
// or [this_reg + this_offset]. It is a method runtime generic context when the method has a method
// instantiation, a vtable when it is static or of a value type, else `this` (whose vtable is used).
// Only stack slots off rsp or rbp are read here: a register other than those two would need the
// callee-saved registers of every frame (such frames stay with Mono's walk).
constexpr size_t kJiBits = 32, kJiClauses = 56, kClauseSize = 64;
constexpr uint32_t kMaxLocs = 64;
using GetFlags = uint32_t (*)(MonoMethod*, uint32_t*);
using GetClass = MonoClass* (*)(MonoMethod*);
using IsValuetype = mono_bool (*)(MonoClass*);
GetFlags g_method_flags = nullptr;
GetClass g_method_class = nullptr;
IsValuetype g_class_valuetype = nullptr;

bool read_generic_jit_info(const MonoJitInfo* ji, MonoMethod* jit_method, uint64_t start, uint64_t size,
                           CodeEntry& e) {
  if (!ji || !jit_method || !g_method_context || !g_method_flags || !g_method_class || !g_class_valuetype) {
    return false;
  }
  uint8_t head[kJiClauses];
  if (!read_memory(reinterpret_cast<uint64_t>(ji), head, sizeof head)) return false;
  uint64_t method, code_start;
  int32_t code_size;
  uint32_t bits;
  std::memcpy(&method, head, 8);
  std::memcpy(&code_start, head + 16, 8);
  std::memcpy(&code_size, head + 28, 4);
  std::memcpy(&bits, head + kJiBits, 4);
  // The layout is this runtime's only if the fields the API gives are where we read them.
  if (method != reinterpret_cast<uint64_t>(jit_method) || code_start != start || code_size <= 0 ||
      static_cast<uint64_t>(code_size) != size || !((bits >> 16) & 1)) {
    return false;
  }
  const uint32_t clauses = bits & 0x7fff;
  if (clauses > 1024) return false;
  const uint64_t base = reinterpret_cast<uint64_t>(ji) + kJiClauses;
  for (uint32_t i = 0; i < clauses; ++i) {  // each clause's try and handler inside the code: the size is right
    uint64_t at[3];
    if (!read_memory(base + i * kClauseSize + 8, reinterpret_cast<uint8_t*>(at), sizeof at)) return false;
    for (uint64_t a : at) {
      if (a < start || a > start + size) return false;
    }
  }
  uint8_t gi[32];
  if (!read_memory(base + clauses * kClauseSize, gi, sizeof gi)) return false;
  int32_t nlocs, this_offset;
  uint64_t locations;
  std::memcpy(&nlocs, gi + 8, 4);
  std::memcpy(&locations, gi + 16, 8);
  std::memcpy(&this_offset, gi + 24, 4);
  const uint8_t this_reg = gi[28];
  const bool has_this = gi[29] & 1, this_in_reg = (gi[29] >> 1) & 1;
  if (!has_this || nlocs < 0 || static_cast<uint32_t>(nlocs) > kMaxLocs) return false;
  uint32_t from = 0;
  int32_t reg = this_reg, offset = this_offset;
  if (nlocs > 0) {
    int32_t loc[kMaxLocs][5];
    if (!locations || !read_memory(locations, reinterpret_cast<uint8_t*>(loc), nlocs * sizeof loc[0])) return false;
    // The entry that is the first to hold every offset from its `from` to the end (earlier entries all
    // end before it starts): from there on, Mono's walk reads it.
    int32_t ends_before = 0;
    int chosen = -1;
    for (int32_t i = 0; i < nlocs && chosen < 0; ++i) {
      const int32_t is_reg = loc[i][0], r = loc[i][1], off = loc[i][2], f = loc[i][3], to = loc[i][4];
      if (f < 0 || (to != 0 && to < f)) return false;
      if (to == 0 || static_cast<uint64_t>(to) > size) {
        if (is_reg || f < ends_before) return false;
        chosen = i;
        reg = r;
        offset = off;
        from = static_cast<uint32_t>(f);
      } else {
        ends_before = std::max(ends_before, to);
      }
    }
    if (chosen < 0) return false;
  } else if (this_in_reg) {
    return false;
  }
  if (reg != 4 && reg != 5) return false;  // rsp, rbp
  void* const* context = static_cast<void* const*>(g_method_context(jit_method));
  if (!context) return false;
  uint32_t iflags = 0;
  const uint32_t flags = g_method_flags(jit_method, &iflags);
  MonoClass* klass = g_method_class(jit_method);
  if (!klass) return false;
  constexpr uint32_t kStatic = 0x0010;  // METHOD_ATTRIBUTE_STATIC
  e.ctx = (context[1] || (flags & kStatic) || g_class_valuetype(klass)) ? kCtxValue : kCtxThis;
  e.ctx_base = static_cast<uint8_t>(reg);
  e.ctx_offset = offset;
  e.ctx_from = from;
  return true;
}

}  // namespace

void init(bool use_ours, bool check_all, bool verbose) {
  g_verbose = verbose;
  g_check_all = check_all;
  g_method_context = reinterpret_cast<GetContext>(dlsym(RTLD_DEFAULT, "mono_method_get_context"));
  g_method_flags = reinterpret_cast<GetFlags>(dlsym(RTLD_DEFAULT, "mono_method_get_flags"));
  g_collection_count = reinterpret_cast<CollectionCount>(dlsym(RTLD_DEFAULT, "mono_gc_collection_count"));
  g_generation_of = reinterpret_cast<GetGeneration>(dlsym(RTLD_DEFAULT, "mono_gc_get_generation"));
  g_thread_info = reinterpret_cast<ThreadInfoCurrent>(dlsym(RTLD_DEFAULT, "mono_thread_info_current_unchecked"));
  g_method_class = reinterpret_cast<GetClass>(dlsym(RTLD_DEFAULT, "mono_method_get_class"));
  g_class_valuetype = reinterpret_cast<IsValuetype>(dlsym(RTLD_DEFAULT, "mono_class_is_valuetype"));
  if (!g_table) g_table = new (std::nothrow) CodeIndex<CodeEntry>();
  if (g_pid == 0) {
    refresh_pid();
    pthread_atfork(nullptr, nullptr, refresh_pid);
  }
  if (!g_bottom) g_bottom = new (std::nothrow) SignatureSet();
  if (!g_top) g_top = new (std::nothrow) SignatureSet();
  if (!g_key_ok) g_key_ok = pthread_key_create(&g_key, free_thread) == 0;
  g_use_ours.store(use_ours && g_table && g_bottom && g_top && g_key_ok);
}

void code_added(MonoMethod* m, const MonoJitInfo* ji, MonoMethod* jit_method, MonoDomain* domain, uint64_t start,
                uint64_t size) {
  if (!g_table || !m || !start || !size) return;
  // A method compiled as a wrapper (an icall such as string:FastAllocateString, a pinvoke, a
  // synchronized method): jit_done names the method asked for while the code is the wrapper's, and
  // Mono's walk names the wrapper (the JIT info's method) for its frames, as it then reports
  // jit_done for the wrapper too. Its frames are ours, named as Mono names them. Told apart from shared
  // generic code below: a wrapper is no open instantiation.
  if (jit_method && jit_method != m && wrapper_type(jit_method) != 0 && wrapper_type(m) == 0) m = jit_method;
  {
    // The same code again (Mono 6.12 raises jit_done each time it finds a method compiled already: a
    // call trampoline hit, a delegate, ldftn; 6.8 does on a few paths): nothing is new, and replacing
    // the entry would empty every thread's IP cache (a new generation) for nothing. Shared generic code
    // named for another instantiation is the same code too: its entry never names its frames (Mono's
    // walk or the learned generic pairs do, and those are keyed by the entry: kept).
    std::lock_guard<std::mutex> lock(g_table_mutex);
    const CodeEntry* old = g_table->find(start);
    if (old && old->start == start && old->end == start + size && old->domain == domain &&
        (old->method == m || (jit_method != m && (old->kind == kUnsure || old->ctx != kCtxNone)))) {
      g_ranges_repeated.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  auto* e = new (std::nothrow) CodeEntry;
  if (!e) return;
  e->start = start;
  e->end = start + size;
  e->method = m;
  e->domain = domain;
  classify(reinterpret_cast<const uint8_t*>(start), size, *e);
  // Shared generic code: jit_done names the instantiation asked for (m) while the code, and its JIT
  // info, belong to the shared method (jit_method), and Mono's walk names the instantiation it reads
  // from each frame's generic context, which a code range cannot tell: left to Mono. A generic
  // instance compiled for itself (jit_method == m: value-type instantiations, generic methods over
  // value types, or reference types when not shared) has code of its own, and Mono's walk names m
  // there, as we do.
  // Mono also compiles the shared method itself (jit_done then names it: jit_method == m, its
  // instantiation open): Mono's walk names the instantiation there too. Without
  // mono_method_get_context nothing tells these apart: every frame is left to Mono.
  // Where the JIT info says the frame keeps its generic context, frames are ours after all (named
  // through what Mono's walks taught us: see GenericSlot).
  bool shared = jit_method != m || !g_method_context;
  if (!shared) {
    if (void* const* ctx = static_cast<void* const*>(g_method_context(m))) {
      shared = open_instantiation(ctx[0]) || open_instantiation(ctx[1]);
    }
  }
  if (shared && (e->kind == kUnsure || !read_generic_jit_info(ji, jit_method, start, size, *e))) e->kind = kUnsure;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_table->add(e, mark_gone);  // the ranges it overlaps (reused code memory) are gone
  g_ranges_added.fetch_add(1, std::memory_order_relaxed);
  // Every thread's IP cache may hold this range as "not managed code" (a thread can run new code
  // before jit_done reaches us): those answers start over.
  g_generation.fetch_add(1, std::memory_order_release);
}

// A domain's ranges and a freed method's are found through the table's ordered indexes (code_index.h):
// logarithmic, not a scan of every range (issue 22).
void domain_unloading(MonoDomain* domain) {
  if (g_table) {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    g_table->remove_domain(domain, mark_gone);
  }
  // Its vtables and runtime generic contexts will be freed, and their addresses may come back as
  // others': the learned generic pairs start over in a new table (the old one may still be read by a
  // walk in progress: it is never freed; after kMaxGenericTables, generic frames stay with Mono).
  std::lock_guard<std::mutex> lock(g_generic_mutex);
  g_generic.store(nullptr, std::memory_order_release);
}

void method_freed(MonoMethod* m) {
  if (!g_table) return;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_table->remove_method(m, mark_gone);
}

__attribute__((noinline)) uint32_t collect(MonoMethod** frames, uint32_t max, bool alloc) {
  // Our frame is the fixed point the learned native chains are measured from.
  const auto anchor = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  ThreadWalk* t = g_use_ours.load(std::memory_order_relaxed) ? thread_walk() : nullptr;
  if (!t || !t->bounds_ok) return mono_walk(frames, max);
  t->native_tag = (static_cast<uintptr_t>(g_generation.load(std::memory_order_acquire)) << 1) | 1;
  FastResult r;
  const int why = fast_walk(anchor, *t, frames, max, nullptr, nullptr, r, nullptr, alloc);
  if (why == kOk) {
    cross_check(r, frames, max);
    t->via_lmf += r.lmf;
    if (++t->fast >= 4096) flush_counts(*t);
    return r.n;
  }
  const uint32_t n = mono_walk(frames, max);
  if (++t->slow[why] >= 4096) flush_counts(*t);
  if (why == kNoGeneric) {
    learn_generic(anchor, *t, frames, n, max, alloc);
  } else if (why != kNoManaged) {
    learn(anchor, *t, why, frames, n, max, alloc);
  }
  return n;
}

std::string summary() {
  if (ThreadWalk* t = tls_walk) flush_counts(*t);
  const uint64_t fast = g_fast_total.load();
  uint64_t slow = 0;
  for (auto& c : g_slow_total) slow += c.load();
  return "mlpd: backtraces: " + std::to_string(fast) + " by our stack walker, " + std::to_string(slow) +
         " by mono_stack_walk_no_il (unknown native chain below/managed frame/native chain above/generic "
         "context: " +
         std::to_string(g_slow_total[kNoBottom].load()) + "/" + std::to_string(g_slow_total[kNoManaged].load()) + "/" +
         std::to_string(g_slow_total[kNoTop].load()) + "/" + std::to_string(g_slow_total[kNoGeneric].load()) +
         "; threads still running add theirs at exit); our walker " +
         (g_use_ours.load() ? "on" : "off") + "; " + std::to_string(g_bottom ? g_bottom->count.load() : 0) +
         "+" + std::to_string(g_top ? g_top->count.load() : 0) + " native chains learned; " +
         std::to_string(g_lmf_total.load()) + " of ours started from the LMF; code ranges: " +
         std::to_string(g_ranges_added.load()) + " added, " + std::to_string(g_ranges_repeated.load()) +
         " repeated jit_done ignored";
}

}  // namespace mlpd::hooks::walker
