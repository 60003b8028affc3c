// The arm64 frame shapes of our stack walker (runtime-hooks/src/mono/walker/aarch64/frame_shapes.h, issue 23
// item 2; machine-independent, so tested on every build machine): the prologue classifier and the
// throw-trampoline decoder on code bytes recorded from Mono 6.8.0.105's arm64 JIT (Debian
// 6.8.0.105+dfsg-3.3+deb12u1 arm64, under qemu-user in scripts/mono-root.sh's arm64 root): the code
// load records of the jitdump file `MLPD_OPTIONS=jitdump` wrote for walkcover.exe (a method with a
// small frame, one with a parameter area, one with a large frame, a call trampoline, and Mono's
// exception-handling code buffers). Addresses are those of that run. Over the four walkcover runs'
// 1,450 JIT'd methods the classifier read every one as a frame record with its frame size. The frame
// step on a synthetic stack.
#include "mlpd_catch.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "walker/aarch64/frame_shapes.h"

using namespace mlpd::hooks::walker;

namespace {

// (wrapper alloc) object:ProfilerAllocSmall (intptr,intptr): the first 32 of its 260 bytes at 0x550ecc1c88
constexpr uint8_t kProfilerAllocSmall[] = {
    0xfd, 0x7b, 0xbc, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xb5, 0x5b, 0x01, 0xa9, 0xb7, 0x63, 0x02, 0xa9,
    0xb9, 0x6b, 0x03, 0xa9, 0xf9, 0x03, 0x00, 0xaa, 0xfa, 0x03, 0x01, 0xaa, 0x3e, 0x00, 0x00, 0x94,
};

// System.Globalization.CultureInfo:.ctor (int,bool,bool): the first 32 of its 816 bytes at 0x550e94cca0
constexpr uint8_t kCultureInfoCtor[] = {
    0xfd, 0x7b, 0xb5, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x10, 0x04, 0x80, 0xd2, 0xf1, 0x03, 0x00, 0x91,
    0x31, 0x02, 0x10, 0xcb, 0x3f, 0x02, 0x00, 0x91, 0xb8, 0x0b, 0x00, 0xf9, 0xf8, 0x03, 0x00, 0xaa,
};

// System.Globalization.CalendarData:.cctor (): the first 32 of its 5040 bytes at 0x550e836840
constexpr uint8_t kCalendarDataCctor[] = {
    0x10, 0x68, 0x80, 0xd2, 0xf1, 0x03, 0x00, 0x91, 0x31, 0x02, 0x10, 0xcb, 0x3f, 0x02, 0x00, 0x91,
    0xfd, 0x7b, 0x00, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xd0, 0x20, 0x00, 0xd0, 0x10, 0xa2, 0x08, 0x91,
};

// [mono] specific_trampoline jit: the first 28 of its 28 bytes at 0x550ecc16c0
constexpr uint8_t kSpecificTrampoline[] = {
    0x11, 0x86, 0x8d, 0xd2, 0xf1, 0x09, 0xa0, 0xf2, 0xb1, 0x0a, 0xc0, 0xf2, 0x10, 0x40, 0x96, 0xd2,
    0x90, 0x77, 0xa1, 0xf2, 0xb0, 0x0a, 0xc0, 0xf2, 0x00, 0x02, 0x1f, 0xd6,
};

// [mono] exception_handling (a throw trampoline): the first 172 of its 176 bytes at 0x550bbccd00
constexpr uint8_t kThrowTrampoline[] = {
    0xfd, 0x7b, 0xab, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0xa0, 0x07, 0x01, 0xa9, 0xa2, 0x0f, 0x02, 0xa9,
    0xa4, 0x17, 0x03, 0xa9, 0xa6, 0x1f, 0x04, 0xa9, 0xa8, 0x27, 0x05, 0xa9, 0xaa, 0x2f, 0x06, 0xa9,
    0xac, 0x37, 0x07, 0xa9, 0xae, 0x3f, 0x08, 0xa9, 0xb0, 0x47, 0x09, 0xa9, 0xb2, 0x4f, 0x0a, 0xa9,
    0xb4, 0x57, 0x0b, 0xa9, 0xb6, 0x5f, 0x0c, 0xa9, 0xb8, 0x67, 0x0d, 0xa9, 0xba, 0x6f, 0x0e, 0xa9,
    0xbc, 0x77, 0x0f, 0xa9, 0xbe, 0x83, 0x00, 0xf9, 0xf1, 0x03, 0x00, 0x91, 0xb1, 0x87, 0x00, 0xf9,
    0xb0, 0x03, 0x40, 0xf9, 0xb0, 0x7f, 0x00, 0xf9, 0xb0, 0x43, 0x05, 0x91, 0xb0, 0x87, 0x00, 0xf9,
    0xa8, 0x8b, 0x00, 0xfd, 0xa9, 0x8f, 0x00, 0xfd, 0xaa, 0x93, 0x00, 0xfd, 0xab, 0x97, 0x00, 0xfd,
    0xac, 0x9b, 0x00, 0xfd, 0xad, 0x9f, 0x00, 0xfd, 0xae, 0xa3, 0x00, 0xfd, 0xaf, 0xa7, 0x00, 0xfd,
    0xe0, 0x03, 0x00, 0xaa, 0xa1, 0x07, 0x40, 0xf9, 0xa2, 0x43, 0x00, 0x91, 0xa3, 0x43, 0x04, 0x91,
    0x04, 0x00, 0x80, 0xd2, 0x05, 0x00, 0x80, 0xd2, 0x06, 0x00, 0x80, 0xd2, 0x1e, 0x52, 0x9d, 0xd2,
    0x1e, 0x01, 0xa0, 0xf2, 0xbe, 0x0a, 0xc0, 0xf2, 0xc0, 0x03, 0x3f, 0xd6,
};

// [mono] exception_handling (restore_context: no frame, ends with br x17): the first 220 of its 220 bytes at 0x550bbcca00
constexpr uint8_t kRestoreContext[] = {
    0xf0, 0x03, 0x00, 0xaa, 0x11, 0x86, 0x41, 0xf9, 0x31, 0x04, 0x00, 0xb4, 0x00, 0x82, 0x40, 0xfd,
    0x01, 0x8a, 0x40, 0xfd, 0x02, 0x92, 0x40, 0xfd, 0x03, 0x9a, 0x40, 0xfd, 0x04, 0xa2, 0x40, 0xfd,
    0x05, 0xaa, 0x40, 0xfd, 0x06, 0xb2, 0x40, 0xfd, 0x07, 0xba, 0x40, 0xfd, 0x08, 0xc2, 0x40, 0xfd,
    0x09, 0xca, 0x40, 0xfd, 0x0a, 0xd2, 0x40, 0xfd, 0x0b, 0xda, 0x40, 0xfd, 0x0c, 0xe2, 0x40, 0xfd,
    0x0d, 0xea, 0x40, 0xfd, 0x0e, 0xf2, 0x40, 0xfd, 0x0f, 0xfa, 0x40, 0xfd, 0x10, 0x02, 0x41, 0xfd,
    0x11, 0x0a, 0x41, 0xfd, 0x12, 0x12, 0x41, 0xfd, 0x13, 0x1a, 0x41, 0xfd, 0x14, 0x22, 0x41, 0xfd,
    0x15, 0x2a, 0x41, 0xfd, 0x16, 0x32, 0x41, 0xfd, 0x17, 0x3a, 0x41, 0xfd, 0x18, 0x42, 0x41, 0xfd,
    0x19, 0x4a, 0x41, 0xfd, 0x1a, 0x52, 0x41, 0xfd, 0x1b, 0x5a, 0x41, 0xfd, 0x1c, 0x62, 0x41, 0xfd,
    0x1d, 0x6a, 0x41, 0xfd, 0x1e, 0x72, 0x41, 0xfd, 0x1f, 0x7a, 0x41, 0xfd, 0x00, 0x06, 0x40, 0xa9,
    0x02, 0x0e, 0x41, 0xa9, 0x04, 0x16, 0x42, 0xa9, 0x06, 0x1e, 0x43, 0xa9, 0x08, 0x26, 0x44, 0xa9,
    0x0a, 0x2e, 0x45, 0xa9, 0x0c, 0x36, 0x46, 0xa9, 0x0e, 0x3e, 0x47, 0xa9, 0x11, 0xca, 0x48, 0xa9,
    0x13, 0xd2, 0x49, 0xa9, 0x15, 0xda, 0x4a, 0xa9, 0x17, 0xe2, 0x4b, 0xa9, 0x19, 0xea, 0x4c, 0xa9,
    0x1b, 0xf2, 0x4d, 0xa9, 0x1d, 0xfa, 0x4e, 0xa9, 0x11, 0x82, 0x41, 0xf9, 0x10, 0x7e, 0x40, 0xf9,
    0x1f, 0x02, 0x00, 0x91, 0x20, 0x02, 0x1f, 0xd6, 0x00, 0x00, 0x20, 0xd4,
};

struct Shape {
  uint8_t kind;
  uint32_t frame;
  uint64_t body;
};

Shape classified(const uint8_t* c, size_t n, uint64_t start) {
  CodeEntry e;
  e.start = start;
  aarch64::classify(c, n, e);
  return {e.kind, e.frame, e.body};
}

void put32(std::vector<uint8_t>& v, size_t at, uint32_t w) { std::memcpy(v.data() + at, &w, 4); }

}  // namespace

TEST_CASE("aarch64 classify: Mono 6.8 arm64 prologues", "[walker][aarch64]") {
  // stp x29, x30, [sp, #-64]!; mov x29, sp: a frame record at x29, the caller's sp 64 above it
  Shape e = classified(kProfilerAllocSmall, sizeof kProfilerAllocSmall, 0x550ecc1c88);
  CHECK(e.kind == kFramePointer);
  CHECK(e.frame == 64);
  CHECK(e.body == 0x550ecc1c88 + 8);
  // stp x29, x30, [sp, #-176]!; mov x29, sp; then sp lowered by 0x20 for stack arguments: still 176
  e = classified(kCultureInfoCtor, sizeof kCultureInfoCtor, 0x550e94cca0);
  CHECK(e.kind == kFramePointer);
  CHECK(e.frame == 176);
  CHECK(e.body == 0x550e94cca0 + 8);
  // movz x16, #0x340; mov x17, sp; sub x17, x17, x16; mov sp, x17; stp x29, x30, [sp]; mov x29, sp
  e = classified(kCalendarDataCctor, sizeof kCalendarDataCctor, 0x550e836840);
  CHECK(e.kind == kFramePointer);
  CHECK(e.frame == 0x340);
  CHECK(e.body == 0x550e836840 + 24);
  // A large frame whose size needs a movk: movz x16, #0x10; movk x16, #0x1, lsl #16 (0x10010, not a
  // multiple of 16 once the low half is 0x18: refused).
  std::vector<uint8_t> big(kCalendarDataCctor, kCalendarDataCctor + sizeof kCalendarDataCctor);
  big.insert(big.begin() + 4, 4, 0);
  put32(big, 0, 0xd2800210);  // movz x16, #0x10
  put32(big, 4, 0xf2a00030);  // movk x16, #0x1, lsl #16
  e = classified(big.data(), big.size(), 0x1000);
  CHECK(e.kind == kFramePointer);
  CHECK(e.frame == 0x10010);
  CHECK(e.body == 0x1000 + 28);
  put32(big, 0, 0xd2800310);  // movz x16, #0x18
  CHECK(classified(big.data(), big.size(), 0x1000).kind == kUnsure);
  // A call trampoline (mov x17, #...): no frame of a method
  CHECK(classified(kSpecificTrampoline, sizeof kSpecificTrampoline, 0x550ecc16c0).kind == kUnsure);
  // The frame record pushed but x29 not set, a positive offset, code too short
  std::vector<uint8_t> odd(kProfilerAllocSmall, kProfilerAllocSmall + sizeof kProfilerAllocSmall);
  put32(odd, 4, 0xd503201f);  // nop
  CHECK(classified(odd.data(), odd.size(), 0x1000).kind == kUnsure);
  odd.assign(kProfilerAllocSmall, kProfilerAllocSmall + sizeof kProfilerAllocSmall);
  put32(odd, 0, 0xa9867bfd);  // stp x29, x30, [sp, #96]!
  CHECK(classified(odd.data(), odd.size(), 0x1000).kind == kUnsure);
  CHECK(classified(kProfilerAllocSmall, 4, 0x1000).kind == kUnsure);
}

TEST_CASE("aarch64 decode_trampoline: Mono 6.8 arm64 throw trampolines", "[walker][aarch64]") {
  // Up to and including its `blr x30` into the runtime: stp x29, x30, [sp, #-336]!; mov x29, sp
  aarch64::TrampolineFrame f;
  REQUIRE(aarch64::decode_trampoline(kThrowTrampoline, sizeof kThrowTrampoline, f));
  CHECK(f.size == 336);
  // Cut one instruction short: the last instruction is no call
  aarch64::TrampolineFrame g;
  CHECK_FALSE(aarch64::decode_trampoline(kThrowTrampoline, sizeof kThrowTrampoline - 4, g));
  // restore_context has no frame record and ends with `br x17`, no call
  CHECK_FALSE(aarch64::decode_trampoline(kRestoreContext, sizeof kRestoreContext, g));
  // sp moved between the frame record and the call (sub sp, sp, #16): the frame is not what was read
  std::vector<uint8_t> moved(kThrowTrampoline, kThrowTrampoline + sizeof kThrowTrampoline);
  put32(moved, moved.size() - 8, 0xd10043ff);
  CHECK_FALSE(aarch64::decode_trampoline(moved.data(), moved.size(), g));
  // Only the bytes of the call: nothing to read the frame from
  CHECK_FALSE(aarch64::decode_trampoline(kThrowTrampoline + sizeof kThrowTrampoline - 8, 8, g));
}

TEST_CASE("aarch64 caller_frame: one frame up through the frame record", "[walker][aarch64]") {
  alignas(16) uint64_t stack[64] = {};
  const auto base = reinterpret_cast<uintptr_t>(stack);
  const uintptr_t hi = base + sizeof stack;
  CodeEntry e;
  e.kind = kFramePointer;
  e.frame = 96;
  const uint64_t fp = base + 64, sp = base + 32;
  stack[8] = base + 256;   // [fp]: the caller's x29
  stack[9] = 0x5500001234;  // [fp + 8]: the return address
  uint64_t ret = 0, csp = 0, cfp = 0;
  REQUIRE(aarch64::caller_frame(e, hi, sp, fp, ret, csp, cfp));
  CHECK(ret == 0x5500001234);
  CHECK(cfp == base + 256);
  CHECK(csp == fp + 96);
  // x29 below sp, misaligned, too close to the end of the stack, or a frame of another kind: no step
  CHECK_FALSE(aarch64::caller_frame(e, hi, fp + 16, fp, ret, csp, cfp));
  CHECK_FALSE(aarch64::caller_frame(e, hi, sp, fp + 8, ret, csp, cfp));
  CHECK_FALSE(aarch64::caller_frame(e, fp + 8, sp, fp, ret, csp, cfp));
  e.kind = kUnsure;
  CHECK_FALSE(aarch64::caller_frame(e, hi, sp, fp, ret, csp, cfp));
}

#if defined(__aarch64__)
// The walker's interface on arm64 (built there only): the arm64 MonoLMF read through the v6_8 row's
// slots, Mono's LMF-drop rule, the learned chains' arm64 words, our getcontext.
#include "mono/v6_8/layouts.h"

namespace {
// (fp_here written after the call, so that the call is no tail call: the context is this frame's.)
__attribute__((noinline)) int call_getcontext(unw_context_t* uc, uint64_t& fp_here) {
  const int r = mlpd_aarch64_getcontext(uc);
  fp_here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  return r;
}
}  // namespace

TEST_CASE("aarch64 LMF records: Mono 6.8's arm64 MonoLMF through the row", "[walker][aarch64]") {
  const mlpd::hooks::mono_layouts::MonoLayouts& L = mlpd::hooks::mono_v6_8::kLayouts;
  alignas(16) uint64_t stack[64] = {};
  const auto base = reinterpret_cast<uintptr_t>(stack);
  const Bounds b{base, base + sizeof stack};
  // A MonoLMF at stack[4]: {previous_lmf, lmf_addr, pc, gregs[12] = x19-x28, fp, sp}
  uint64_t* lmf = stack + 4;
  lmf[0] = 0x7000;           // previous
  lmf[2] = 0x5500002000;     // pc: a wrapper's prologue instruction
  lmf[3 + 10] = base + 256;  // fp
  lmf[3 + 11] = base + 224;  // sp
  uint64_t ip = 0, sp = 0, fp = 0;
  REQUIRE(lmf_record(L, b, reinterpret_cast<uint64_t>(lmf), ip, sp, fp) == kLmfFrame);
  CHECK(ip == 0x5500002001);  // looked up at ip - 1 = pc, as Mono looks pc - 1 up
  CHECK(sp == base + 224);
  CHECK(fp == base + 256);
  // passed once a frame's sp reaches the saved sp
  CHECK_FALSE(lmf_passed(L, b, reinterpret_cast<uint64_t>(lmf), base + 216));
  CHECK(lmf_passed(L, b, reinterpret_cast<uint64_t>(lmf), base + 224));
  CHECK(L.lmf_previous(0x7003) == 0x7000);
  // a MonoLMFExt, a jump trampoline's record (pc 0), a saved sp outside the stack: left to Mono
  lmf[0] = 0x7002;
  CHECK(lmf_record(L, b, reinterpret_cast<uint64_t>(lmf), ip, sp, fp) == kLmfUnknown);
  lmf[0] = 0x7000;
  lmf[2] = 0;
  CHECK(lmf_record(L, b, reinterpret_cast<uint64_t>(lmf), ip, sp, fp) == kLmfUnknown);
  lmf[2] = 0x5500002000;
  lmf[3 + 11] = base + 4096;
  CHECK(lmf_record(L, b, reinterpret_cast<uint64_t>(lmf), ip, sp, fp) == kLmfUnknown);
  // a record whose 120 bytes do not all lie on the stack
  CHECK(lmf_record(L, b, reinterpret_cast<uint64_t>(stack + 60), ip, sp, fp) == kLmfUnknown);
  // the top entry: zeroed; its saved sp 0 is never passed
  uint64_t top[15] = {};
  CHECK(lmf_is_top(L, reinterpret_cast<uint64_t>(top)));
  const Bounds tb{reinterpret_cast<uintptr_t>(top), reinterpret_cast<uintptr_t>(top) + sizeof top};
  CHECK_FALSE(lmf_passed(L, tb, reinterpret_cast<uint64_t>(top), ~uint64_t{0} - 64));
}

TEST_CASE("aarch64 learned chains: the innermost managed sp and the top's return address", "[walker][aarch64]") {
  alignas(16) uint64_t stack[32] = {};
  const auto base = reinterpret_cast<uintptr_t>(stack);
  const Bounds b{base, base + sizeof stack};
  Signature s;
  s.managed_sp = 96;
  CHECK(bottom_sp(base, base + 40, s) == base + 96);  // not from the return address's slot
  TrampolineFrame f;
  f.size = 336;
  CHECK(trampoline_return_slot(f, base) == base + 8);
  CHECK(trampoline_caller_sp(f, base) == base + 336);
  Signature top;
  top_begin(top, 0x5500003000);
  top.off[0] = 16;
  top.val[0] = 0x7f00001000;
  top.n = 1;
  set_bounds(top);
  stack[2] = 0x7f00001000;
  CHECK(top_matches(top, 0x5500003000, base, b));
  CHECK_FALSE(top_matches(top, 0x5500003004, base, b));  // another return address
  stack[2] = 0x7f00001004;
  CHECK_FALSE(top_matches(top, 0x5500003000, base, b));  // another native chain
}

TEST_CASE("aarch64 getcontext: the caller's registers at the return", "[walker][aarch64]") {
  unw_context_t uc;
  std::memset(&uc, 0, sizeof uc);
  uint64_t fp_here = 0;
  REQUIRE(call_getcontext(&uc, fp_here) == 0);
  // x29 is call_getcontext's frame record, sp below it (its frame), pc its return address (in it)
  CHECK(uc.uc_mcontext.regs[29] == fp_here);
  CHECK(uc.uc_mcontext.sp <= fp_here);
  CHECK(fp_here - uc.uc_mcontext.sp < 4096);
  CHECK(uc.uc_mcontext.pc == uc.uc_mcontext.regs[30]);
  CHECK(uc.uc_mcontext.pc > reinterpret_cast<uint64_t>(&call_getcontext));
  CHECK(uc.uc_mcontext.pc < reinterpret_cast<uint64_t>(&call_getcontext) + 256);
}
#endif
