// Whether a JIT'd (or ReadyToRun) x86-64 method body makes a frame record, read from its prologue.
// The JIT keeps frame-pointer chains on Linux, but a small method may get an "rsp based frame": no
// record of its own, rbp left as its caller's (rbp is never a general register there). Such a frame
// is invisible to a frame-pointer walk: the record below it links straight to its caller's record,
// and the return address into its caller (which sits right above its own stack space) is skipped, so
// the caller is lost. Knowing the size of that stack space (the prologue's pushes and `sub rsp`)
// finds the return address from the frame's stack pointer: [sp + depth].
//
// The JIT's prologue order (x86-64): callee-saved pushes (rbp first when the method has a frame
// record), the stack allocation (`sub rsp, N`, or `push rax` for 8 bytes), then, with a frame record,
// `lea rbp, [rsp + N]` or `mov rbp, rsp`; an OSR body starts `mov rax, [rbp]; push rax` and makes a
// record too. Anything the decoder does not know (probes of a large frame, another form) reads as
// "has a record": the walk then does what it did without this (never worse).
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mlpd::coreclr {

// 0: the body makes a frame record (or its prologue is not understood). Otherwise
// kFrameless | prologue length << 16 | stack depth at its calls (bytes from sp to the return address).
inline constexpr uint32_t kFrameless = 1u << 31;
inline uint32_t frameless_depth_of(uint32_t shape) { return shape & 0xffff; }
inline uint32_t frameless_prologue(uint32_t shape) { return (shape >> 16) & 0x7fff; }

inline uint32_t frame_shape_x64(const uint8_t* code, size_t size) {
  if (!code || size == 0) return 0;
  auto at = [&](size_t i) { return i < size ? code[i] : uint8_t{0}; };
  // A frame record made anywhere in the first bytes: `mov rbp, rsp` (48 8B EC, 48 89 E5) or
  // `lea rbp, [rsp + disp]` (48 8D 6C 24 d8, 48 8D AC 24 d32). A match inside another instruction's
  // bytes only costs this method its improvement.
  const size_t scan = size < 192 ? size : 192;
  for (size_t i = 0; i + 3 <= scan; ++i) {
    if (code[i] != 0x48) continue;
    const uint8_t a = at(i + 1), b = at(i + 2), c = at(i + 3);
    if ((a == 0x8B && b == 0xEC) || (a == 0x89 && b == 0xE5)) return 0;
    if (a == 0x8D && (b == 0x6C || b == 0xAC) && c == 0x24) return 0;
  }
  size_t i = 0;
  uint32_t depth = 0;
  if (at(0) == 0x55) return 0;  // push rbp: a record (found above unless its form is unknown)
  for (;;) {
    const uint8_t op = at(i);
    if (op >= 0x50 && op <= 0x57 && i < size) {  // push r64 (rbp excluded above as the first)
      if (op == 0x55) return 0;
      depth += 8;
      i += 1;
    } else if (op == 0x41 && at(i + 1) >= 0x50 && at(i + 1) <= 0x57) {  // push r8-r15
      depth += 8;
      i += 2;
    } else {
      break;
    }
  }
  if (at(i) == 0x48 && at(i + 1) == 0x83 && at(i + 2) == 0xEC) {  // sub rsp, imm8
    depth += at(i + 3);
    i += 4;
  } else if (at(i) == 0x48 && at(i + 1) == 0x81 && at(i + 2) == 0xEC) {  // sub rsp, imm32
    uint32_t imm = 0;
    if (i + 7 > size) return 0;
    std::memcpy(&imm, code + i + 3, 4);
    if (imm >= 0x8000) return 0;  // a frame that large is probed first: not this shape
    depth += imm;
    i += 7;
  }
  if (i > size || depth > 0x7fff || (depth & 7)) return 0;
  return kFrameless | static_cast<uint32_t>(i) << 16 | depth;
}

// The shape of the body at [start, start + size) in this process, as the runtime reports it. Its first
// bytes are copied with process_vm_readv on our own pid: an address that is not mapped (or a refused
// call) reads as "has a record", never as a fault.
inline uint32_t frame_shape(uint64_t start, uint64_t size) {
#if defined(__x86_64__)
  uint8_t code[192];
  const size_t want = size < sizeof code ? static_cast<size_t>(size) : sizeof code;
  iovec local{code, want};
  iovec remote{reinterpret_cast<void*>(start), want};
  const ssize_t got = want ? ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) : 0;
  return got > 0 ? frame_shape_x64(code, static_cast<size_t>(got)) : 0;
#else
  (void)start;  // arm64: not read from prologues (the chain is taken as it is)
  (void)size;
  return 0;
#endif
}

}  // namespace mlpd::coreclr
