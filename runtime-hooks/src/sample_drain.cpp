// The helper-thread half of sampling: completed sample records become TYPE_SAMPLE_HIT events.
//
// Native frames are unwound here, not in the signal handler, with libunwind's remote interface on
// the copy the handler made (registers + stack top): memory reads come from that copy, or from the
// loaded modules' mapped segments (unwind tables, .eh_frame). A batch is unwound in chunks of at
// most kChunk records, each inside one dl_iterate_phdr() callback: the loader holds its
// dl_load_write_lock for the duration, so no module can be unloaded (dlclose takes that lock to
// unlink and unmap) while we read its tables, and every address we read is first checked against
// the module list of that moment. This thread is not a Mono thread (the GC never suspends it) and
// holds only g_fork_mutex while waiting for the loader's lock (below), so waiting cannot deadlock;
// the host's dlopen/dlclose wait at most for one chunk. The locked part does not allocate (malloc's
// lock may be held by a thread the GC stopped).
//
// fork(): glibc's fork does not reset dl_load_write_lock in the child, so a fork while a chunk holds
// it would leave a child that does not exec hanging at its first dlopen or dl_iterate_phdr. Each
// chunk therefore also holds g_fork_mutex, which a pthread_atfork prepare handler takes (and the
// parent and child handlers release): fork waits for the chunk in progress to end. Lock order is
// always g_fork_mutex, then the loader's lock; the prepare handler runs before glibc takes any lock
// of its own, this thread never forks, and the signal handler never touches g_fork_mutex.
//
// Native code is then named from the modules' ELF symbols (sample_drain keeps one ElfSymbols per
// module: .symtab, or the separate debug file's, or .dynsym), each symbol described by one
// TYPE_SAMPLE_USYM (real start and size) before the first hit that references it. An address inside
// a module that no symbol covers is described as that gap ("?? (libc.so.6+0x...)"), never as the
// neighbouring symbol. Addresses in JIT'd code are left to the methods' JIT ranges.
//
// A machine without native unwinding (arch/generic: MLPD_ARCH_NATIVE_UNWIND 0) keeps the leaf IP of
// each sample only, named the same way; libunwind is then neither included nor opened.
#include "mlpd/arch/machine.h"
#if MLPD_ARCH_NATIVE_UNWIND
#define UNW_REMOTE_ONLY
#include <libunwind.h>
#endif
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "described.h"
#include "elf_symbols.h"
#include "mlpd/format.h"
#include "mlpd/hooks/mono_api.h"
#include "mlpd/rt/clock.h"
#include "sample_pool.h"
#include "unwind_binding.h"

#include <dlfcn.h>

namespace mlpd::hooks {

using namespace sampling_detail;

namespace {

#if MLPD_ARCH_NATIVE_UNWIND
// libunwind's remote interface (unwind_binding.h), opened on the helper thread when sampling starts.
UnwindLib g_unw;
#endif

struct Segment {
  uint64_t start, end;
};

// Fixed-size (no allocation while the loader lock is held: a thread stopped by the GC may hold
// malloc's lock, and we must not make the loader lock wait for the world to restart).
inline constexpr size_t kMaxModules = 1024;
inline constexpr size_t kMaxSegments = 8;

struct Module {
  char name[512];  // dlpi_name ("" for the main program), truncated
  uint64_t bias = 0;
  uint64_t lo = 0, hi = 0;            // extent of the PT_LOAD segments
  uint64_t text_lo = 0, text_hi = 0;  // executable segments
  uint64_t eh_frame_hdr = 0;          // PT_GNU_EH_FRAME, 0 if none
  uint32_t nreadable = 0;
  Segment readable[kMaxSegments];
};

struct Snapshot {
  std::vector<Module> modules;  // sorted by lo; capacity kMaxModules, reserved outside the lock
  unsigned long long adds = 0, subs = 0;

  const Module* find(uint64_t addr) const {
    auto it = std::upper_bound(modules.begin(), modules.end(), addr,
                               [](uint64_t a, const Module& m) { return a < m.lo; });
    if (it == modules.begin()) return nullptr;
    --it;
    return addr < it->hi ? &*it : nullptr;
  }
  bool readable(uint64_t addr, uint64_t len) const {
    const Module* m = find(addr);
    if (!m) return false;
    for (uint32_t i = 0; i < m->nreadable; ++i) {
      const Segment& g = m->readable[i];
      if (g.end >= g.start && within(addr, len, g.start, g.end - g.start)) return true;
    }
    return false;
  }
};

#if MLPD_ARCH_NATIVE_UNWIND
struct UnwindArg {
  const Record* record;
  const Snapshot* snapshot;
  bool past_copy = false;  // a read failed just above a full stack copy: the stack goes on there
};

// ---- libunwind accessors -------------------------------------------------------------------------

int read_word(UnwindArg* a, uint64_t addr, uint64_t* out) {
  const Record* r = a->record;
  if (within(addr, 8, r->stack_addr, r->stack_len)) {
    std::memcpy(out, r->stack + (addr - r->stack_addr), 8);
    return 0;
  }
  if (a->snapshot->readable(addr, 8)) {  // mapped for as long as the loader lock is held
    std::memcpy(out, reinterpret_cast<const void*>(addr), 8);
    return 0;
  }
  if (r->stack_len == kStackCopyBytes && addr >= r->stack_addr && addr - r->stack_addr < 4 * kStackCopyBytes) {
    a->past_copy = true;
  }
  return -UNW_EINVAL;
}

int acc_access_mem(unw_addr_space_t, unw_word_t addr, unw_word_t* val, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  uint64_t v;
  const int rc = read_word(static_cast<UnwindArg*>(arg), addr, &v);
  if (rc == 0) *val = v;
  return rc;
}

int acc_access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* val, int write, void* arg) {
  if (write || reg < 0 || reg >= static_cast<int>(kRegs)) return -UNW_EBADREG;
  *val = static_cast<const UnwindArg*>(arg)->record->regs[reg];
  return 0;
}

int acc_access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }
int acc_resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
int acc_get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) { return -UNW_ENOINFO; }
int acc_get_dyn_info_list_addr(unw_addr_space_t, unw_word_t* addr, void*) {
  *addr = 0;
  return -UNW_ENOINFO;
}
// libunwind's DWARF layer frees the table-format unwind info it allocated itself.
void acc_put_unwind_info(unw_addr_space_t, unw_proc_info_t*, void*) {}

// Reads one DW_EH_PE-encoded value of the .eh_frame_hdr header (the forms linkers emit there).
bool read_encoded(const Snapshot& s, uint64_t& at, uint8_t enc, uint64_t& out) {
  size_t size;
  switch (enc & 0x0f) {
    case 0x03: case 0x0b: size = 4; break;  // udata4, sdata4
    case 0x04: case 0x0c: size = 8; break;  // udata8, sdata8
    default: return false;
  }
  if (!s.readable(at, size)) return false;
  if (size == 4) {
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(at), 4);
    out = (enc & 0x08) ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
  } else {
    std::memcpy(&out, reinterpret_cast<const void*>(at), 8);
  }
  at += size;
  return true;
}

int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need, void* arg) {
  const Snapshot& s = *static_cast<const UnwindArg*>(arg)->snapshot;
  const Module* m = s.find(ip);
  if (!m || !m->eh_frame_hdr || !s.readable(m->eh_frame_hdr, 4)) return -UNW_ENOINFO;
  unsigned char h[4];  // version, eh_frame_ptr_enc, fde_count_enc, table_enc
  std::memcpy(h, reinterpret_cast<const void*>(m->eh_frame_hdr), 4);
  // Only the binary-search table form (datarel sdata4) can be searched; linkers always emit it.
  constexpr uint8_t kDatarelSdata4 = 0x3b;  // DW_EH_PE_datarel | DW_EH_PE_sdata4
  if (h[0] != 1 || h[3] != kDatarelSdata4) return -UNW_ENOINFO;
  uint64_t at = m->eh_frame_hdr + 4, ignored = 0, fde_count = 0;
  if (!read_encoded(s, at, h[1], ignored) || !read_encoded(s, at, h[2], fde_count) || fde_count == 0 ||
      fde_count > UINT64_MAX / 8 || !s.readable(at, fde_count * 8)) {
    return -UNW_ENOINFO;
  }
  unw_dyn_info_t di;
  std::memset(&di, 0, sizeof di);
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->text_lo;
  di.end_ip = m->text_hi;
  di.u.rti.segbase = m->eh_frame_hdr;
  di.u.rti.table_data = at;
  di.u.rti.table_len = fde_count * 8 / sizeof(unw_word_t);
  return g_unw.search_unwind_table(as, ip, &di, pi, need, arg);
}

unw_accessors_t g_accessors = {acc_find_proc_info, acc_put_unwind_info, acc_get_dyn_info_list_addr,
                               acc_access_mem,     acc_access_reg,      acc_access_fpreg,
                               acc_resume,         acc_get_proc_name};
#endif  // MLPD_ARCH_NATIVE_UNWIND

// ---- the helper's state (helper thread only) -----------------------------------------------------

struct Pending {
  Record* record;
  std::vector<uint64_t> ips;  // native instruction pointers, leaf first
  bool truncated = false;     // the native unwinding stopped before the stack's end (depth, copy)
};

struct ModuleSymbols {
  std::string label;  // file name shown in gap names
  ElfSymbols symbols;
  bool ours = false;  // libmlpd itself: its frames are the profiler's overhead, named "[mlpd] ..."
  std::unordered_map<uint64_t, std::string> shown;  // symbol value -> name as written (demangled)
};

#if MLPD_ARCH_NATIVE_UNWIND
// Records unwound per dl_iterate_phdr call: bounds how long the loader's lock (and fork) waits.
inline constexpr size_t kChunk = 32;
#endif

pthread_mutex_t g_fork_mutex = PTHREAD_MUTEX_INITIALIZER;

void fork_prepare() { pthread_mutex_lock(&g_fork_mutex); }
void fork_release() { pthread_mutex_unlock(&g_fork_mutex); }

struct DrainState {
#if MLPD_ARCH_NATIVE_UNWIND
  unw_addr_space_t as = nullptr;  // null: libunwind is not installed (the leaf IP only)
#endif
  Snapshot snapshot;
  std::vector<Pending> batch;
  size_t chunk_begin = 0, chunk_end = 0;  // the part of `batch` the locked callback unwinds
  std::map<std::pair<std::string, uint64_t>, std::unique_ptr<ModuleSymbols>> symbols;  // (name, bias)
  std::unordered_map<uint64_t, std::string> described;  // USYM start -> name written
  uint32_t max_native = kMaxSampleFrames;
  uint64_t truncated_in = 0;  // the serial of the MetaLog that has the [truncated] marker's method_jit
};
DrainState* g_drain = nullptr;

int collect_module(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Snapshot*>(data);
  s->adds = info->dlpi_adds;
  s->subs = info->dlpi_subs;
  if (s->modules.size() >= kMaxModules) return 0;  // capacity reserved: never reallocates here
  Module& m = s->modules.emplace_back();
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  std::strncpy(m.name, name, sizeof m.name - 1);
  m.name[sizeof m.name - 1] = '\0';
  m.bias = info->dlpi_addr;
  m.lo = UINT64_MAX;
  m.text_lo = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    const uint64_t start = m.bias + p.p_vaddr, end = start + p.p_memsz;
    if (p.p_type == PT_LOAD) {
      m.lo = std::min(m.lo, start);
      m.hi = std::max(m.hi, end);
      if ((p.p_flags & PF_R) && m.nreadable < kMaxSegments) m.readable[m.nreadable++] = {start, start + p.p_filesz};
      if (p.p_flags & PF_X) {
        m.text_lo = std::min(m.text_lo, start);
        m.text_hi = std::max(m.text_hi, end);
      }
    } else if (p.p_type == PT_GNU_EH_FRAME) {
      m.eh_frame_hdr = start;
    }
  }
  if (!(m.lo < m.hi)) s->modules.pop_back();
  return 0;
}

// The loaded modules as they are now, sorted (capacity reserved by the caller: no allocation).
void take_snapshot(Snapshot& s) {
  s.modules.clear();
  dl_iterate_phdr(collect_module, &s);
  std::sort(s.modules.begin(), s.modules.end(), [](const Module& a, const Module& b) { return a.lo < b.lo; });
}

#if MLPD_ARCH_NATIVE_UNWIND
void unwind_one(DrainState& d, Pending& p) {
  const Record* r = p.record;
  p.ips.clear();
  p.truncated = false;
  p.ips.push_back(r->ip);
  if (r->stack_len == 0 || !d.snapshot.find(r->ip)) return;  // no copy, or JIT code (no unwind info)
  UnwindArg arg{r, &d.snapshot};
  unw_cursor_t c;
  if (g_unw.init_remote(&c, d.as, &arg) < 0) {
    g_counters.unwind_failed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int steps = 0;
  for (;;) {
    const int rc = g_unw.step(&c);
    if (rc <= 0) {
      if (rc < 0 && steps == 0) g_counters.unwind_failed.fetch_add(1, std::memory_order_relaxed);
      // Stopped in native code for want of the stack beyond the copy: the stack goes on.
      if (rc < 0 && arg.past_copy) p.truncated = true;
      break;
    }
    ++steps;
    unw_word_t ip = 0;
    if (g_unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    // Into JIT'd code: the managed frames take over. Its return address is not kept: mprof-report
    // counts every IP of a hit as a hit of its own, and would count the P/Invoke wrapper too.
    if (!d.snapshot.find(ip - 1)) break;
    if (p.ips.size() >= d.max_native) {  // one native frame more than kept
      p.truncated = true;
      break;
    }
    p.ips.push_back(ip);
  }
}

// The dl_iterate_phdr callback that unwinds one chunk of the batch while the loader lock is held.
int unwind_chunk_locked(dl_phdr_info*, size_t, void* data) {
  auto* d = static_cast<DrainState*>(data);
  const unsigned long long adds = d->snapshot.adds, subs = d->snapshot.subs;
  take_snapshot(d->snapshot);  // the lock is recursive: the list as it is now
  // A module was loaded or unloaded: libunwind's cached register rules may describe old code.
  if (adds != d->snapshot.adds || subs != d->snapshot.subs) g_unw.flush_cache(d->as, 0, 0);
  for (size_t i = d->chunk_begin; i < d->chunk_end; ++i) unwind_one(*d, d->batch[i]);
  return 1;  // stop after the first call: one chunk per lock
}
#endif  // MLPD_ARCH_NATIVE_UNWIND

ModuleSymbols* symbols_for(DrainState& d, const Module& m) {
  auto key = std::make_pair(std::string(m.name), m.bias);
  auto it = d.symbols.find(key);
  if (it != d.symbols.end()) return it->second.get();
  auto ms = std::make_unique<ModuleSymbols>();
  const auto self = reinterpret_cast<uint64_t>(&drain_samples);
  ms->ours = self >= m.lo && self < m.hi;
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso && vdso >= m.lo && vdso < m.hi) {
    // The vDSO has no file: its ELF image (section headers included) is mapped in full.
    ms->label = "[vdso]";
    ms->symbols.load_memory(reinterpret_cast<const unsigned char*>(vdso), m.hi - vdso);
  } else {
    const std::string name = m.name;
    std::string path = name.empty() ? "/proc/self/exe" : name;
    ms->label = name.empty() ? "main program" : name.substr(name.rfind('/') + 1);
    if (name.empty()) {
      char buf[4096];
      const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
      if (n > 0) ms->label = std::string(buf, static_cast<size_t>(n)).substr(std::string(buf, static_cast<size_t>(n)).rfind('/') + 1);
    }
    ms->symbols.load_file(path);
    // A stripped library (Debian's) keeps only .dynsym: its separate debug file, when installed,
    // has the full .symtab (static functions such as __GI___poll) at the same addresses.
    if (!ms->symbols.from_symtab() && ms->symbols.build_id().size() > 2) {
      const std::string& id = ms->symbols.build_id();
      ElfSymbols debug;
      if (debug.load_file("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug") &&
          debug.from_symtab() && debug.size() > 0) {
        ms->symbols = std::move(debug);
      }
    }
  }
  ModuleSymbols* out = ms.get();
  d.symbols.emplace(std::move(key), std::move(ms));
  return out;
}

// A symbol's name as samples show it: C++ names demangled (abi::__cxa_demangle allocates: helper
// thread only, never in the signal handler), and libmlpd's own functions prefixed "[mlpd] ", so
// that the profiler's overhead is seen as such.
std::string shown_name(std::string_view raw, bool ours) {
  std::string name(raw);
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    if (char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
      if (status == 0) name = out;
      std::free(out);
    }
  }
  return ours ? "[mlpd] " + name : name;
}

// The [truncated] marker (format::kTruncatedMethod), described once before its first use.
void describe_truncated(DrainState& d) {
  // By serial, not address: a stream made after another was freed (a test's, a fork child's) can have
  // the same address and must still get the marker's description.
  if (d.truncated_in == g_sample_meta->serial()) return;
  Event e;
  e.kind = EventKind::method_jit;
  e.method = format::kTruncatedMethod;
  e.ptr = format::kTruncatedMethod;
  e.size = 1;
  e.name = format::kTruncatedName;
  g_sample_meta->add(e, rt::now_ns);
  d.truncated_in = g_sample_meta->serial();
}

constexpr uint64_t kMprofReach = 4096;

void emit_usym(DrainState& d, Event& e) {
  auto it = d.described.find(e.ptr);
  if (it != d.described.end() && it->second == e.name) return;
  d.described[e.ptr] = e.name;
  g_sample_meta->add(e, rt::now_ns);
}

// Describes the native code at `ip` (a return address unless `leaf`) once, before its first use.
void describe_native(DrainState& d, uint64_t ip, bool leaf) {
  const uint64_t probe = leaf ? ip : ip - 1;  // a call's return address may be past the caller's end
  const Module* m = d.snapshot.find(probe);
  if (!m) return;  // JIT'd code: the methods' JIT ranges name it
  ModuleSymbols* ms = symbols_for(d, *m);
  uint64_t gap_start = 0, gap_end = 0;
  Event e;
  e.kind = EventKind::sample_usym;
  if (const ElfSymbols::Symbol* s = ms->symbols.find(probe - m->bias, gap_start, gap_end)) {
    e.ptr = m->bias + s->value;
    e.size = s->size;
    auto it = ms->shown.find(s->value);
    if (it == ms->shown.end()) it = ms->shown.emplace(s->value, shown_name(ms->symbols.name(*s), ms->ours)).first;
    e.name = it->second;
  } else {
    const uint64_t lo = std::max(m->lo, gap_start > UINT64_MAX - m->bias ? m->hi : m->bias + gap_start);
    const uint64_t hi = std::min(m->hi, gap_end >= UINT64_MAX - m->bias ? m->hi : m->bias + gap_end);
    e.ptr = lo;
    e.size = hi > lo ? hi - lo : 1;
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx)", static_cast<unsigned long long>(lo - m->bias));
    e.name = (ms->ours ? "[mlpd] ?? (" : "?? (") + ms->label + off;
  }
  const uint64_t start = e.ptr, end = e.ptr + e.size;
  emit_usym(d, e);
  // mprof-report ignores the size: it names an address by the nearest symbol start below it, and
  // only within 4096 bytes. Deeper into a large function (or gap) the same name is described again
  // at the 4 KiB step below the address, so that mprof-report names it too.
  if (probe - start >= kMprofReach) {
    e.ptr = start + (probe - start) / kMprofReach * kMprofReach;
    e.size = end - e.ptr;
    emit_usym(d, e);
  }
}

}  // namespace

void sampling_detail::install_fork_guard() {
  static const bool installed = pthread_atfork(fork_prepare, fork_release, fork_release) == 0;
  (void)installed;
}

std::atomic<DescribeMethods> g_describe_methods{nullptr};
void set_describe_methods(DescribeMethods fn) { g_describe_methods.store(fn, std::memory_order_release); }

void drain_samples(bool final) {
  Pool* pool = g_pool;
  // Closed by the final drain: a record filled after it was counted there as dropped_unfinished.
  if (!pool || !g_sample_meta || pool->closed()) return;
  if (!g_drain) {
    g_drain = new DrainState;
#if MLPD_ARCH_NATIVE_UNWIND
    // Without libunwind (not installed) the samples keep their leaf IP only.
    if (g_unw.open_remote()) g_drain->as = g_unw.create_addr_space(&g_accessors, 0);
    if (g_drain->as) {
      g_unw.set_caching_policy(g_drain->as, UNW_CACHE_GLOBAL);
      // libunwind initialises itself on its first cursor: let that happen here, outside the loader
      // lock, so that nothing libunwind does lazily runs while unwind_chunk_locked holds it.
      static Record blank;
      Snapshot none;
      UnwindArg arg{&blank, &none};
      unw_cursor_t c;
      (void)g_unw.init_remote(&c, g_drain->as, &arg);
    }
#endif
    g_drain->max_native = std::max<uint32_t>(1, pool->maxframes);
  }
  DrainState& d = *g_drain;
  d.batch.clear();
  // Final: close the free stack first, so that a handler that passed the on-check before the stop
  // can no longer take a record (it counts dropped_shutdown). Every record not on the closed stack
  // and not READY now was popped by a handler that has not finished (state WRITING, or not yet
  // marked): dropped_unfinished, and nothing pushes it back.
  const uint32_t on_stack = final ? pool->close() : 0;
  for (uint32_t i = 0; i < pool->count; ++i) {
    if (pool->slots[i].state.load(std::memory_order_acquire) == kReady) d.batch.push_back({&pool->records[i], {}});
  }
  if (final) {
    const uint64_t unfinished = pool->count - on_stack - d.batch.size();
    if (unfinished) g_counters.dropped_unfinished.fetch_add(unfinished, std::memory_order_relaxed);
  }
  if (d.batch.empty()) return;
  const uint64_t t0 = rt::now_ns();
  g_counters.taken.fetch_add(d.batch.size(), std::memory_order_relaxed);
  std::sort(d.batch.begin(), d.batch.end(),
            [](const Pending& a, const Pending& b) { return a.record->time < b.record->time; });
#if MLPD_ARCH_NATIVE_UNWIND
  const bool unwind = d.as != nullptr;
#else
  const bool unwind = false;
#endif
  if (unwind) {
#if MLPD_ARCH_NATIVE_UNWIND
    // Everything the locked part fills is allocated here, before the loader lock is taken.
    d.snapshot.modules.reserve(kMaxModules);
    for (Pending& p : d.batch) p.ips.reserve(d.max_native);
    for (d.chunk_begin = 0; d.chunk_begin < d.batch.size(); d.chunk_begin = d.chunk_end) {
      d.chunk_end = std::min(d.batch.size(), d.chunk_begin + kChunk);
      pthread_mutex_lock(&g_fork_mutex);
      dl_iterate_phdr(unwind_chunk_locked, &d);
      pthread_mutex_unlock(&g_fork_mutex);
    }
#endif
  } else {
    // No unwinder: the leaf IP only, named from the modules loaded now (under g_fork_mutex: the
    // loader's lock is held while the list is taken).
    d.snapshot.modules.reserve(kMaxModules);
    pthread_mutex_lock(&g_fork_mutex);
    take_snapshot(d.snapshot);
    pthread_mutex_unlock(&g_fork_mutex);
    for (Pending& p : d.batch) p.ips.assign(1, p.record->ip);
  }
  // Attached late: methods compiled before the attach were never described (no jit_done of ours);
  // a thread attached to the runtime describes them now, before the samples that name them.
  if (DescribeMethods describe = g_describe_methods.load(std::memory_order_acquire)) {
    // (method, an address in its code or 0): the innermost frame's code start is known from the walk.
    std::vector<std::pair<uint64_t, uint64_t>> unknown;
    for (const Pending& p : d.batch) {
      for (uint32_t i = 0; i < p.record->nframes; ++i) {
        const uint64_t m = p.record->methods[i];
        if (m && !described::method_known(m))
          unknown.emplace_back(m, i == 0 && p.record->leaf_offset >= 0 ? p.record->leaf_code_start : 0);
      }
    }
    std::sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;  // one with a code address first
    });
    unknown.erase(std::unique(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                  unknown.end());
    if (!unknown.empty()) {
      std::vector<uint64_t> methods, code;
      for (const auto& [m, c] : unknown) {
        methods.push_back(m);
        code.push_back(c);
      }
      describe(methods.data(), code.data(), methods.size());
    }
  }
  Event hit;
  uint64_t frames_left_out = 0, truncated = 0;
  for (Pending& p : d.batch) {
    const Record* r = p.record;
    for (size_t i = 0; i < p.ips.size(); ++i) describe_native(d, p.ips[i], i == 0);
    hit.reset(EventKind::sample_hit);
    hit.time = r->time;
    hit.ptr = r->tid;
    hit.ips = p.ips;
    bool cut = p.truncated || r->truncated;
    for (uint32_t i = 0; i < r->nframes; ++i) {
      const uint64_t method = r->methods[i];
      // This thread must not call Mono (it is not attached: Mono aborts in mono_method_full_name or
      // mono_jit_info_table_find), so a frame is kept only if its method was described already
      // (JIT'd methods are, at jit_done). Not kept: no method (AOT code whose jit info the async
      // walk could not load) and methods never JIT'd here (some wrappers, AOT). The chain stops at
      // the first such frame, and the frames above it are left out too: skipping only that frame
      // would join its callee to its caller (A -> C for A -> B -> C), a call that never happened.
      if (!method || !described::method_known(method)) {
        frames_left_out += r->nframes - i;
        cut = true;
        break;
      }
      hit.frames.push_back(method);
    }
    // A stack cut short ends with the [truncated] marker at its root, so that flame graphs group
    // the cut stacks under one name instead of scattering them as towers of their own.
    if (cut) {
      describe_truncated(d);
      hit.frames.push_back(format::kTruncatedMethod);
      ++truncated;
    }
    g_sample_meta->add_at(hit);
    pool->push(p.record);
  }
  g_counters.written.fetch_add(d.batch.size(), std::memory_order_relaxed);
  g_counters.frames_left_out.fetch_add(frames_left_out, std::memory_order_relaxed);
  g_counters.truncated.fetch_add(truncated, std::memory_order_relaxed);
  g_counters.drain_ns.fetch_add(rt::now_ns() - t0, std::memory_order_relaxed);
}

}  // namespace mlpd::hooks
