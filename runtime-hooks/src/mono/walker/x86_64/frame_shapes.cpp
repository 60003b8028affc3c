// The x86-64 machine code knowledge of our stack walker (frame_shapes.h).
#include "frame_shapes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mlpd::hooks::walker {


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
  int32_t fp_save = -1;
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
    if (reg == 5) fp_save = disp;
    i += len;
  }
  // A second rsp adjustment or a probe right after would mean the frame is not what we read.
  if (i + 3 <= size && c[i] == 0x48 && (c[i + 1] == 0x83 || c[i + 1] == 0x81) && c[i + 2] == 0xec) return;
  if (fp_save != -1 && (fp_save < 0 || static_cast<uint32_t>(fp_save) + 8 > n)) return;
  e.kind = kFixedFrame;
  e.body = e.start + i;
  e.frame = n;
  e.fp_save = fp_save;
}

// Mono's throw trampolines (mini/exceptions-amd64.c, get_throw_trampoline) are JIT-made code without
// CFI or jit_done: managed code calls one, it allocates a fixed frame (`sub $N,%rsp`), stores the
// registers into a MonoContext inside it (rbp with `mov %rbp,d(%rsp)`) and calls into the runtime,
// which raises the throw event. Read from the code before the return address: the last `sub $N,%rsp`
// within kTrampolineScan bytes and the first store of rbp after it; the call that returns to `ret` must
// be the only rsp change after the sub (no push, no second sub), as the trampolines are emitted. The
// caller's return address is then at [sp + N]. Learning checks the whole walk against Mono's.
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
  return decode_trampoline(code, len, f);
}

bool decode_trampoline(const uint8_t* code, size_t len, TrampolineFrame& f) {
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
      if (d >= 0 && static_cast<uint32_t>(d) + 8 <= n) f.fp_save = d;
      break;
    }
  }
  f.size = n;
  return true;
}

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
  if (!mono_optional.mono_thread_info_current_unchecked) return;
  const auto info = reinterpret_cast<uint64_t>(mono_optional.mono_thread_info_current_unchecked());
  if (!info) return;
  uint64_t words[256];
  if (!read_memory(info, reinterpret_cast<uint8_t*>(words), sizeof words)) return;
  const mono_layouts::MonoLayouts& L = mono_layouts::selected();
  for (const uint64_t w : words) {
    if (!w || (w & 7) || (w >= t.lo && w <= t.hi)) continue;
    uint64_t j[mono_layouts::kMaxJitTlsWords];
    if (!read_memory(w, reinterpret_cast<uint8_t*>(j), L.jit_tls_words * 8)) continue;
    const uint64_t end_of_stack = j[L.jit_tls_end_of_stack / 8], lmf = j[L.jit_tls_lmf / 8], first = j[L.jit_tls_first_lmf / 8];
    if (end_of_stack < anchor || end_of_stack > t.hi) continue;
    if (!first || (first & 7) != 0) continue;
    // lmf: on this stack above us, or the first one (no managed frame called into native code yet,
    // or a throw's allocations: see lmf_frame)
    if (lmf != first && (lmf < anchor || lmf >= t.hi || (lmf & 7) != 0)) continue;
    // first_lmf is the top entry: allocated zeroed when the thread was set up, never written since
    uint64_t top[mono_layouts::kMaxJitTlsWords] = {};
    const size_t top_bytes = static_cast<size_t>(L.lmf.lmf_bytes);
    if (top_bytes > sizeof top || !read_memory(first, reinterpret_cast<uint8_t*>(top), top_bytes)) continue;
    bool zero = true;
    for (size_t i = 0; i < top_bytes / 8; ++i) zero = zero && top[i] == 0;
    if (!zero) continue;
    t.jit_tls = w;
    return;
  }
}

bool unwind_saved_fp(const UnwindLib& u, unw_cursor_t* c, uint64_t& addr) {
  unw_save_loc_t loc;
  if (u.get_save_loc(c, UNW_X86_64_RBP, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return false;
  addr = loc.u.addr;
  return true;
}

void unwind_set_start(unw_context_t& uc, uint64_t ip, uint64_t sp, uint64_t rbp) {
  uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(ip);
  uc.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
  uc.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(rbp);
}

}  // namespace mlpd::hooks::walker
