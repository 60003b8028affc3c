// The stack walker's fast walk (walk.h).
#include "walker/walk.h"

#include "mono/layouts.h"
#include "mono/v6_8/layouts.h"
#include "frame_shapes.h"  // walker/<MLPD_ARCH>/: the machine's JIT frame shapes

namespace mlpd::hooks::walker {

namespace {

// The fast walk compiled for one row of layouts (its offsets and bits immediates, as constants were
// before the rows); walk_for() picks the one of the selected row.
template <const mono_layouts::MonoLayouts& L>
int fast_walk_with(uintptr_t anchor, ThreadWalk& t, MonoMethod** out, uint32_t max, Signature* extra_bottom,
                   Signature* extra_top, FastResult& r, Misses* misses, bool allow_lmf) {
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
    if (!readable(b, anchor, s->managed_slot) || !readable(b, anchor, s->fp_loc)) continue;
    slot = anchor + s->managed_slot;
    if (lookup(t, load(slot))->kind != kNative) bottom = s;
  }
  uint64_t ip, sp, fp;
  if (bottom) {
    r.bottom = bottom;
    ip = load(slot);
    sp = bottom_sp(anchor, slot, *bottom);
    fp = load(anchor + bottom->fp_loc);
  } else if (const int lmf = allow_lmf ? lmf_frame(L, t, b, ip, sp, fp) : kLmfUnknown; lmf == kLmfFrame) {
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
  const uint64_t first_lmf = t.jit_tls ? load(t.jit_tls + L.jit_tls_first_lmf) : 0;
  uint64_t lmf = first_lmf ? load(t.jit_tls + L.jit_tls_lmf) : 0;
  auto pass_lmf = [&](uint64_t now_sp) {
    if (lmf && lmf != first_lmf && lmf_passed(L, b, lmf, now_sp)) lmf = readable(b, lmf, 0) ? L.lmf_previous(load(lmf)) : 0;
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
      uint64_t lip, lsp, lfp;
      if (n == 0 || !lmf || lmf == first_lmf || lmf_record(L, b, lmf, lip, lsp, lfp) != kLmfFrame || lsp <= sp ||
          lookup(t, lip)->kind == kNative) {
        break;
      }
      lmf = L.lmf_previous(load(lmf));
      ip = lip;
      sp = lsp;
      fp = lfp;
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
      const uint64_t v = generic_context(t, *e, ip, sp, fp, b, epoch);
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
    uint64_t ret, caller_sp, caller_fp;
    if (!caller_frame(*e, b.hi, sp, fp, ret, caller_sp, caller_fp) || caller_sp <= sp) {
      r.n = n;
      return kNoManaged;
    }
    ip = ret;
    sp = caller_sp;
    fp = caller_fp;
    pass_lmf(sp);
  }
  if (n == 0) return kNoManaged;  // the chain did not end in managed code
  r.n = n;
  r.top_ip = ip;
  r.top_sp = sp;
  r.top_fp = fp;
  // Native code above, and Mono's walk would go on from the thread's first LMF, the top entry (rsp 0:
  // mono_arch_unwind_frame stops there): whatever native frames lie above, Mono's walk ends here. So
  // do the allocations of managed code that the runtime runs while it handles a throw (an exception's
  // constructor, a filter), whose native chain above is the throw's.
  if (lmf && lmf == first_lmf && (lmf & 7) == 0 && lmf_is_top(L, lmf)) {
    r.lmf_top = true;
    return kOk;
  }
  // Top: the native frames above must be a learned chain to the thread's first frame, or Mono's walk
  // could find more managed frames above them (reflection, a delegate called from native code).
  const uint32_t nt = g_top->count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i <= nt; ++i) {
    Signature* s = i < nt ? &g_top->sigs[i] : extra_top;
    if (s && top_matches(*s, ip, sp, b)) {
      r.top = s;
      return kOk;
    }
  }
  return kNoTop;
}

using FastWalk = int (*)(uintptr_t, ThreadWalk&, MonoMethod**, uint32_t, Signature*, Signature*, FastResult&, Misses*,
                         bool);
FastWalk g_fast_walk = nullptr;

}  // namespace

bool walk_for(const mono_layouts::MonoLayouts* row) {
  // One line per row the walker is compiled for (a new version's row adds one).
  g_fast_walk = row == &mono_v6_8::kLayouts ? fast_walk_with<mono_v6_8::kLayouts> : nullptr;
  return g_fast_walk != nullptr;
}

int fast_walk(uintptr_t anchor, ThreadWalk& t, MonoMethod** out, uint32_t max, Signature* extra_bottom,
              Signature* extra_top, FastResult& r, Misses* misses, bool allow_lmf) {
  return g_fast_walk(anchor, t, out, max, extra_bottom, extra_top, r, misses, allow_lmf);
}

}  // namespace mlpd::hooks::walker
