// The learned native chains (native_chains.h): learning them with libunwind's local interface.
#include "walker/native_chains.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "capture/unwind_binding.h"
#include "frame_shapes.h"  // walker/<MLPD_ARCH>/: the machine's JIT frame shapes

namespace mlpd::hooks::walker {

SignatureSet* g_bottom = nullptr;
SignatureSet* g_top = nullptr;
std::mutex g_learn_mutex;
std::atomic<int> g_learn_budget{1024};

namespace {

// glibc 2.35's _dl_find_object is made for unwinders (lock-free, fast); dladdr walks symbol tables.
using FindObject = int (*)(void*, struct dl_find_object*);
FindObject g_find_object = nullptr;

UnwindLib g_unw;  // guarded by g_learn_mutex until bound, then read-only
int g_unw_state = 0;  // 0 not tried, 1 bound, -1 unavailable (guarded by g_learn_mutex)

// Only frames in code of a loaded ELF object are stepped with libunwind: those have CFI. JIT-made code
// we do not know (trampolines, code of methods whose jit_done we have not seen) has none, and libunwind
// would guess from the frame pointer register, which there may hold anything.
bool in_loaded_object(uint64_t ret) {
  void* pc = reinterpret_cast<void*>(ret - 1);
  if (g_find_object) {
    dl_find_object found;
    return g_find_object(pc, &found) == 0 && found.dlfo_eh_frame != nullptr;
  }
  Dl_info info;
  return dladdr(pc, &info) != 0 && info.dli_fbase != nullptr;
}

}  // namespace

bool make_signature_sets() {
  if (!g_bottom) g_bottom = new (std::nothrow) SignatureSet();
  if (!g_top) g_top = new (std::nothrow) SignatureSet();
  return g_bottom && g_top;
}

void set_bounds(Signature& s) {
  s.lowest = s.highest = s.n ? s.off[0] : 0;
  for (uint32_t k = 1; k < s.n; ++k) {
    s.lowest = std::min(s.lowest, s.off[k]);
    s.highest = std::max(s.highest, s.off[k]);
  }
}

bool bind_unwind() {
  if (g_unw_state) return g_unw_state > 0;
  g_unw_state = -1;
  g_find_object = reinterpret_cast<FindObject>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  if (!g_unw.open_local(kUnwindLocalLibrary, kUnwindLocalPrefix, kUnwindGetcontext)) return false;
  unwind_own_getcontext(g_unw);  // a machine whose library exports none gives its own
  g_unw_state = 1;
  return true;
}

__attribute__((noinline)) bool learn_bottom(uintptr_t anchor, ThreadWalk& t, Signature& s) {
  unw_context_t uc;
  unw_cursor_t c;
  if (g_unw.getcontext(&uc) != 0 || g_unw.init_local(&c, &uc) != 0) return false;
  unw_word_t ip = 0, sp = 0;
  // Up to collect()'s caller: its SP is collect()'s CFA (the machine's frame shapes know how to tell
  // that frame from the anchor, collect()'s frame address).
  if (!unwind_to_anchor_caller(g_unw, &c, anchor)) return false;
  s.n = 0;
  for (;;) {
    if (g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0) return false;
    const CodeEntry* e = lookup(t, ip);
    if (e->kind == kUnsure) return false;
    uint64_t slot;  // where this frame's return address (ip) is kept
    if (!unwind_return_slot(g_unw, &c, sp, slot)) return false;
    if (e->kind != kNative) {
      uint64_t fp_at;
      if (!unwind_saved_fp(g_unw, &c, fp_at)) return false;
      s.managed_slot = static_cast<int64_t>(slot - anchor);
      s.fp_loc = static_cast<int64_t>(fp_at - anchor);
      s.managed_sp = static_cast<int64_t>(sp - anchor);
      set_bounds(s);
      return s.n > 0;
    }
    if (s.n < kMaxPairs && !in_loaded_object(ip) && e->kind == kNative) {
      // JIT-made code that is no method's (no jit_done) and has no CFI: Mono's throw trampolines.
      TrampolineFrame f;
      if (read_trampoline(ip, f)) {
        const uint64_t ret_slot = trampoline_return_slot(f, sp);
        if (ret_slot < sp || ret_slot < anchor || ret_slot + kWord > t.hi) return false;
        const CodeEntry* m = lookup(t, load(ret_slot));
        if (m->kind == kNative || m->kind == kUnsure) return false;
        int64_t fp_loc;
        if (f.fp_save >= 0) {
          fp_loc = static_cast<int64_t>(sp + static_cast<uint32_t>(f.fp_save) - anchor);
        } else {
          uint64_t fp_at;
          if (!unwind_saved_fp(g_unw, &c, fp_at)) return false;
          fp_loc = static_cast<int64_t>(fp_at - anchor);
        }
        s.off[s.n] = static_cast<int64_t>(slot - anchor);
        s.val[s.n] = ip;
        ++s.n;
        s.managed_slot = static_cast<int64_t>(ret_slot - anchor);
        s.fp_loc = fp_loc;
        s.managed_sp = static_cast<int64_t>(trampoline_caller_sp(f, sp) - anchor);
        set_bounds(s);
        return true;
      }
    }
    if (s.n == kMaxPairs || !in_loaded_object(ip)) return false;
    s.off[s.n] = static_cast<int64_t>(slot - anchor);
    s.val[s.n] = ip;
    ++s.n;
    if (g_unw.step(&c) <= 0) return false;
  }
}

bool learn_top(uint64_t top_ip, uint64_t top_sp, uint64_t top_fp, ThreadWalk& t, Signature& s) {
  unw_context_t uc;
  if (g_unw.getcontext(&uc) != 0) return false;
  unwind_set_start(uc, top_ip - 1, top_sp, top_fp);  // inside the call: its CFI row
  unw_cursor_t c;
  if (g_unw.init_local(&c, &uc) != 0) return false;
  top_begin(s, top_ip);  // the outermost managed frame's return address, the value the walk ended on
  if (!in_loaded_object(top_ip)) return false;
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
    if (sp <= top_sp || sp > t.hi) return false;
    if (lookup(t, ip)->kind != kNative) return false;  // more managed code above: leave it to Mono
    if (!in_loaded_object(ip)) return false;
    uint64_t slot;
    if (!unwind_return_slot(g_unw, &c, sp, slot)) return false;
    s.off[s.n] = static_cast<int64_t>(slot - top_sp);
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
  d.fp_loc = s.fp_loc;
  d.top_ip = s.top_ip;  // (the union's one word: managed_sp or top_ip)
  d.checks_left.store(kChecksPerSignature, std::memory_order_relaxed);
  set.count.store(n + 1, std::memory_order_release);
  return true;
}


}  // namespace mlpd::hooks::walker
