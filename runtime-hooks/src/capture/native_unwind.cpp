// Native chains of sampled stacks (native_unwind.h): the module snapshot, libunwind's remote
// accessors over a record's stack copy and the modules' mapped segments, and the chunked unwinding
// under the loader's lock and the fork guard.
#include "mlpd/arch/machine.h"
#if MLPD_ARCH_NATIVE_UNWIND
#define UNW_REMOTE_ONLY
#include <libunwind.h>
#endif
#include <elf.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "native_unwind.h"
#include "sample_capture.h"
#include "sample_pool.h"
#include "unwind_binding.h"

namespace mlpd::hooks::sampling_detail {

namespace {

#if MLPD_ARCH_NATIVE_UNWIND
// libunwind's remote interface (unwind_binding.h), opened on the helper thread when sampling starts.
UnwindLib g_unw;
unw_addr_space_t g_as = nullptr;  // null: libunwind is not installed (the leaf IP only)

struct UnwindArg {
  const Record* record;
  const Snapshot* snapshot;
  bool past_copy = false;  // a read failed just above a full stack copy: the stack goes on there
  const uint64_t* regs = nullptr;  // the registers to start from (nullptr: the record's)
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
  const auto* a = static_cast<const UnwindArg*>(arg);
  *val = (a->regs ? a->regs : a->record->regs)[reg];
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

#if MLPD_ARCH_NATIVE_UNWIND
// Records unwound per dl_iterate_phdr call: bounds how long the loader's lock (and fork) waits.
inline constexpr size_t kChunk = 32;
#endif

pthread_mutex_t g_fork_mutex = PTHREAD_MUTEX_INITIALIZER;

void fork_prepare() { pthread_mutex_lock(&g_fork_mutex); }
void fork_release() { pthread_mutex_unlock(&g_fork_mutex); }

// The part of a batch one locked callback unwinds.
struct ChunkJob {
  Snapshot* snapshot;
  std::vector<Pending>* batch;
  size_t begin = 0, end = 0;
  uint32_t max_native;
  bool through_jit = false;  // no managed walk in the handler: JIT'd frames unwound here too
};

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
void unwind_one(const ChunkJob& d, Pending& p) {
  const Record* r = p.record;
  p.ips.clear();
  p.truncated = false;
  p.past_copy = false;
  p.ips.push_back(r->ip);
  if (r->stack_len == 0 || !d.snapshot->find(r->ip)) return;  // no copy, or JIT code (no unwind info)
  // Where the innermost managed frame is (its code start + offset: the interrupted IP or a return
  // address), 0 when the walk found none.
  const uint64_t first_managed = r->nframes > 0 && r->leaf_offset >= 0 ? r->code[0] + static_cast<uint64_t>(r->leaf_offset) : 0;
  if (first_managed == r->ip) return;  // the leaf is managed (AOT) code: no native frame
  UnwindArg arg{r, d.snapshot};
  unw_cursor_t c;
  if (g_unw.init_remote(&c, g_as, &arg) < 0) {
    g_counters.unwind_failed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  int steps = 0;
  for (;;) {
    const int rc = g_unw.step(&c);
    if (rc <= 0) {
      if (rc < 0 && steps == 0) g_counters.unwind_failed.fetch_add(1, std::memory_order_relaxed);
      // Stopped in native code for want of the stack beyond the copy: the stack goes on.
      if (rc < 0 && arg.past_copy) p.past_copy = true;
      break;
    }
    ++steps;
    unw_word_t ip = 0;
    if (g_unw.get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    // Into JIT'd code: the managed frames take over. Its return address is not kept: mprof-report
    // counts every IP of a hit as a hit of its own, and would count the P/Invoke wrapper too.
    if (!d.snapshot->find(ip - 1)) break;
    // Into AOT-compiled code (inside a loaded module, mscorlib.dll.so, with unwind info of its own):
    // the innermost managed frame the walk found, which the managed frames name.
    if (first_managed && ip == first_managed) break;
    if (p.ips.size() >= d.max_native) {  // one native frame more than kept
      p.truncated = true;
      break;
    }
    p.ips.push_back(ip);
  }
}

std::atomic<bool (*)(uint64_t, uint64_t)> g_other_body{nullptr};
std::atomic<bool (*)(uint64_t)> g_is_code{nullptr};
std::atomic<int (*)(uint64_t, bool)> g_frameless_depth{nullptr};

// On-stack replacement (sample_capture.h, set_replaced_frames): the record at `fp` holds `caller_fp`
// (the caller's frame pointer, copied from the replaced frame's record) and a return address into
// another body of the frame's own method. The replaced frame's record lies between this frame and
// the caller's, at the top of the replaced frame: right below where the caller's stack pointer was
// at the call. Searched from the caller's frame pointer down (the caller's own frame holds its live
// locals; below the replaced frame's record lie stale frame records of earlier calls, which hold the
// same saved frame pointer when the callee that made them had no frame record of its own): the first
// slot holding `caller_fp` with an address of code above it (JIT'd or in a module). Its return address (into the caller) in
// `*ret`, its place in `*record`; false when none is found (the chain goes on as it was).
template <typename InModule>
bool replaced_frame_record(UnwindArg* arg, uint64_t fp, uint64_t caller_fp, uint64_t* ret, uint64_t* record,
                           InModule&& in_module) {
  bool (*is_code)(uint64_t) = g_is_code.load(std::memory_order_acquire);
  if (!is_code || caller_fp < fp + 32) return false;
  constexpr uint64_t kScan = 8192;  // a caller's and a tier-0 frame's size at most, in bytes
  const uint64_t lowest = fp + 16;
  uint64_t x = std::min(caller_fp, lowest + kScan) - 16;
  x &= ~uint64_t{7};
  for (; x >= lowest; x -= 8) {
    uint64_t v = 0, r = 0;
    if (read_word(arg, x, &v) != 0) return false;
    if (v != caller_fp) continue;
    // Into the runtime's code or the caller's JIT'd code (a method called from native code: Main).
    if (read_word(arg, x + 8, &r) != 0 || !r || !(is_code(r - 1) || in_module(r - 1))) continue;
    *ret = r;
    *record = x;
    return true;
  }
  return false;
}

// A runtime whose managed frames are not walked in the signal handler (.NET: sampling.h's check not
// set): the whole stack is unwound here, native frames by libunwind and JIT'd frames (code in no
// module, with no unwind info the helper can read) through their frame records, which the JIT keeps:
// [fp] = the caller's frame pointer, [fp + 8] = the return address, the caller's sp = fp + 16 (the
// same on x86-64 and arm64). Each switch between the two restarts libunwind from the registers the
// other left (ip, sp, fp). A JIT'd frame interrupted before its frame record is made (its prologue)
// loses its caller, as in every frame-pointer unwinder. Frame pointers must rise; a read beyond the
// stack copy ends the chain there (past_copy: the [stack cut] marker).
void unwind_mixed(const ChunkJob& d, Pending& p) {
  const Record* r = p.record;
  p.ips.clear();
  p.truncated = false;
  p.past_copy = false;
  p.ips.push_back(r->ip);
  if (r->stack_len == 0) return;
  uint64_t regs[kRegs];
  std::memcpy(regs, r->regs, sizeof regs);
  UnwindArg arg{r, d.snapshot, false, regs};
  auto in_module = [&](uint64_t ip, bool leaf) { return d.snapshot->find(leaf ? ip : ip - 1) != nullptr; };
  bool leaf = true;
  auto add = [&](uint64_t ip) {
    if (p.ips.size() >= d.max_native) {  // one frame more than kept
      p.truncated = true;
      return false;
    }
    p.ips.push_back(ip);
    leaf = false;
    return true;
  };
  for (int guard = 0; guard < 4 * static_cast<int>(kMaxSampleFrames); ++guard) {
    const uint64_t ip = regs[arch::kRegIp];
    if (in_module(ip, leaf)) {
      unw_cursor_t c;
      if (g_unw.init_remote(&c, g_as, &arg) < 0) {
        if (leaf) g_counters.unwind_failed.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      bool into_jit = false;
      for (;;) {
        const int rc = g_unw.step(&c);
        if (rc <= 0) {
          if (rc < 0 && arg.past_copy) p.past_copy = true;
          return;
        }
        unw_word_t next = 0, sp = 0, fp = 0;
        if (g_unw.get_reg(&c, UNW_REG_IP, &next) < 0 || next == 0) return;
        if (!add(next)) return;
        if (!in_module(next, false)) {
          if (g_unw.get_reg(&c, UNW_REG_SP, &sp) < 0 || g_unw.get_reg(&c, arch::kRegFp, &fp) < 0) return;
          regs[arch::kRegIp] = next;
          regs[arch::kRegSp] = sp;
          regs[arch::kRegFp] = fp;
          into_jit = true;
          break;
        }
      }
      if (!into_jit) return;
      continue;
    }
    // A JIT'd frame without a frame record of its own: its return address sits above its stack space
    // (rbp is still its caller's, whose record comes next). Taken when it is an address of code.
    if (int (*depth_of)(uint64_t, bool) = g_frameless_depth.load(std::memory_order_acquire)) {
      const int depth = depth_of(leaf ? ip : ip - 1, leaf);
      const uint64_t sp = regs[arch::kRegSp], slot = sp + static_cast<uint64_t>(depth);
      uint64_t ret = 0;
      bool (*is_code)(uint64_t) = g_is_code.load(std::memory_order_acquire);
      if (depth >= 0 && slot >= sp && read_word(&arg, slot, &ret) == 0 && ret &&
          ((is_code && is_code(ret - 1)) || in_module(ret, false))) {
        if (!add(ret)) return;
        regs[arch::kRegIp] = ret;
        regs[arch::kRegSp] = slot + 8;
        continue;
      }
    }
    // A JIT'd frame: its frame record.
    const uint64_t fp = regs[arch::kRegFp];
    uint64_t caller_fp = 0, ret = 0;
    if (fp < regs[arch::kRegSp] || fp > UINT64_MAX - 16) return;
    if (read_word(&arg, fp, &caller_fp) != 0 || read_word(&arg, fp + 8, &ret) != 0) {
      if (arg.past_copy) p.past_copy = true;
      return;
    }
    if (ret == 0) return;
    uint64_t sp_after = fp + 16;
    // An OSR body's record returns into its own tier-0 body: the tier-0 frame's record returns into
    // the caller (the pseudo return address is not a frame of its own: the method is the leaf's).
    if (bool (*other_body)(uint64_t, uint64_t) = g_other_body.load(std::memory_order_acquire);
        other_body && other_body(leaf ? ip : ip - 1, ret - 1)) {
      uint64_t real = 0, record = 0;
      if (replaced_frame_record(&arg, fp, caller_fp, &real, &record, [&](uint64_t a) { return in_module(a, true); })) {
        ret = real;
        sp_after = record + 16;
      }
    }
    if (!add(ret)) return;
    regs[arch::kRegIp] = ret;
    regs[arch::kRegSp] = sp_after;
    regs[arch::kRegFp] = caller_fp;
    // The outermost frame has no caller (fp 0); a chain that does not rise is not a chain.
    if (caller_fp == 0) return;
    if (caller_fp <= fp && !in_module(ret, false)) return;
  }
}

// The dl_iterate_phdr callback that unwinds one chunk of the batch while the loader lock is held.
int unwind_chunk_locked(dl_phdr_info*, size_t, void* data) {
  auto* d = static_cast<ChunkJob*>(data);
  const unsigned long long adds = d->snapshot->adds, subs = d->snapshot->subs;
  take_snapshot(*d->snapshot);  // the lock is recursive: the list as it is now
  // A module was loaded or unloaded: libunwind's cached register rules may describe old code.
  if (adds != d->snapshot->adds || subs != d->snapshot->subs) g_unw.flush_cache(g_as, 0, 0);
  for (size_t i = d->begin; i < d->end; ++i) {
    if (d->through_jit) unwind_mixed(*d, (*d->batch)[i]);
    else unwind_one(*d, (*d->batch)[i]);
  }
  return 1;  // stop after the first call: one chunk per lock
}
#endif  // MLPD_ARCH_NATIVE_UNWIND


}  // namespace

void install_fork_guard() {
  static const bool installed = pthread_atfork(fork_prepare, fork_release, fork_release) == 0;
  (void)installed;
}

bool native_unwind_open() {
#if MLPD_ARCH_NATIVE_UNWIND
  if (g_unw.open_remote()) g_as = g_unw.create_addr_space(&g_accessors, 0);
  if (g_as) {
    g_unw.set_caching_policy(g_as, UNW_CACHE_GLOBAL);
    // libunwind initialises itself on its first cursor: let that happen here, outside the loader
    // lock, so that nothing libunwind does lazily runs while unwind_chunk_locked holds it.
    static Record blank;
    Snapshot none;
    UnwindArg arg{&blank, &none};
    unw_cursor_t c;
    (void)g_unw.init_remote(&c, g_as, &arg);
  }
  return g_as != nullptr;
#else
  return false;
#endif
}

void native_chains(std::vector<Pending>& batch, Snapshot& snapshot, [[maybe_unused]] uint32_t max_native) {
#if MLPD_ARCH_NATIVE_UNWIND
  const bool unwind = g_as != nullptr;
#else
  const bool unwind = false;
#endif
  if (unwind) {
#if MLPD_ARCH_NATIVE_UNWIND
    // Everything the locked part fills is allocated here, before the loader lock is taken.
    snapshot.modules.reserve(kMaxModules);
    for (Pending& p : batch) p.ips.reserve(max_native);
    ChunkJob job{&snapshot, &batch, 0, 0, max_native, !managed_walk_in_handler()};
    for (job.begin = 0; job.begin < batch.size(); job.begin = job.end) {
      job.end = std::min(batch.size(), job.begin + kChunk);
      pthread_mutex_lock(&g_fork_mutex);
      dl_iterate_phdr(unwind_chunk_locked, &job);
      pthread_mutex_unlock(&g_fork_mutex);
    }
#endif
  } else {
    // No unwinder: the leaf IP only, named from the modules loaded now (under g_fork_mutex: the
    // loader's lock is held while the list is taken).
    snapshot.modules.reserve(kMaxModules);
    pthread_mutex_lock(&g_fork_mutex);
    take_snapshot(snapshot);
    pthread_mutex_unlock(&g_fork_mutex);
    for (Pending& p : batch) p.ips.assign(1, p.record->ip);
  }
}

}  // namespace mlpd::hooks::sampling_detail

namespace mlpd::hooks {

void set_replaced_frames(const ReplacedFrames& check) {
  sampling_detail::g_is_code.store(check.is_code, std::memory_order_release);
  sampling_detail::g_other_body.store(check.other_body, std::memory_order_release);
  sampling_detail::g_frameless_depth.store(check.frameless_depth, std::memory_order_release);
}

}  // namespace mlpd::hooks
