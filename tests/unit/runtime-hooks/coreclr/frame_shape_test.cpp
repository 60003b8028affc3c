// frame_shape_x64 (runtime-hooks/src/coreclr/frame_shape.h) on prologues the .NET 10 JIT emitted
// (DOTNET_JitDisasm on tests/programs/crossrt.cs and tests/programs/dotnet/FramelessShape.cs), and the
// code map's answers for frameless bodies (code_map.h).
#include <cstdint>
#include <vector>

#include "coreclr/code_map.h"
#include "coreclr/frame_shape.h"
#include "mlpd_catch.h"

using mlpd::coreclr::CodeMap;
using mlpd::coreclr::frame_shape_x64;
using mlpd::coreclr::frameless_depth_of;
using mlpd::coreclr::frameless_prologue;
using mlpd::coreclr::kFrameless;

namespace {
uint32_t shape(std::vector<uint8_t> code) { return frame_shape_x64(code.data(), code.size()); }
}  // namespace

TEST_CASE("frame shape: bodies with a frame record", "[coreclr]") {
  // Tier 0: push rbp; sub rsp, 176; lea rbp, [rsp+0xB0]
  CHECK(shape({0x55, 0x48, 0x81, 0xEC, 0xB0, 0, 0, 0, 0x48, 0x8D, 0xAC, 0x24, 0xB0, 0, 0, 0, 0xC3}) == 0);
  // Tier 1 leaf with a loop: push rbp; mov rbp, rsp; xor eax, eax
  CHECK(shape({0x55, 0x48, 0x8B, 0xEC, 0x33, 0xC0, 0xC3}) == 0);
  // push rbp; push r15; push r14; push rbx; sub rsp, 24; lea rbp, [rsp+0x30]
  CHECK(shape({0x55, 0x41, 0x57, 0x41, 0x56, 0x53, 0x48, 0x83, 0xEC, 0x18, 0x48, 0x8D, 0x6C, 0x24, 0x30, 0xC3}) == 0);
  // OSR: mov rax, [rbp]; push rax; mov rbp, rsp
  CHECK(shape({0x48, 0x8B, 0x45, 0x00, 0x50, 0x48, 0x8B, 0xEC, 0xC3}) == 0);
  // OSR: mov rax, [rbp]; push rax; sub rsp, 48; mov [rsp+0xE8], r15; lea rbp, [rsp+0x30]
  CHECK(shape({0x48, 0x8B, 0x45, 0x00, 0x50, 0x48, 0x83, 0xEC, 0x30, 0x4C, 0x89, 0xBC, 0x24, 0xE8, 0, 0, 0, 0x48, 0x8D,
               0x6C, 0x24, 0x30}) == 0);
  // mov rbp, rsp in its other encoding (48 89 E5)
  CHECK(shape({0x53, 0x48, 0x89, 0xE5, 0xC3}) == 0);
  // A large frame (probed first) is not read: taken as having a record.
  CHECK(shape({0x53, 0x48, 0x81, 0xEC, 0x00, 0x00, 0x01, 0x00, 0xC3}) == 0);
  CHECK(frame_shape_x64(nullptr, 16) == 0);
  CHECK(shape({}) == 0);
}

TEST_CASE("frame shape: rsp based frames", "[coreclr]") {
  // MakeItem / crossrt's Make at tier 1: push rbx; mov rbx, rdi; mov rdi, imm64; call ...
  const uint32_t make = shape({0x53, 0x48, 0x8B, 0xDF, 0x48, 0xBF, 1, 2, 3, 4, 5, 6, 7, 8, 0xE8, 0, 0, 0, 0});
  CHECK(make == (kFrameless | 1u << 16 | 8));
  CHECK(frameless_depth_of(make) == 8);
  CHECK(frameless_prologue(make) == 1);
  // Wrap at tier 1: push rax; call Work
  CHECK(shape({0x50, 0xE8, 0, 0, 0, 0, 0x48, 0xFF, 0xC0, 0x59, 0xC3}) == (kFrameless | 1u << 16 | 8));
  // push rbx; push r14; sub rsp, 24: 40 bytes below the return address, a 7-byte prologue
  CHECK(shape({0x53, 0x41, 0x56, 0x48, 0x83, 0xEC, 0x18, 0xE8, 0, 0, 0, 0}) == (kFrameless | 7u << 16 | 40));
  // sub rsp, imm32
  CHECK(shape({0x48, 0x81, 0xEC, 0x08, 0x01, 0, 0, 0xE8, 0, 0, 0, 0}) == (kFrameless | 7u << 16 | 0x108));
  // A leaf with no stack of its own: mov eax, [rdi+8]; ret
  CHECK(shape({0x8B, 0x47, 0x08, 0xC3}) == kFrameless);
  // rbp pushed after another register: not a shape the JIT makes; taken as having a record.
  CHECK(shape({0x53, 0x55, 0xE8, 0, 0, 0, 0}) == 0);
  // A cut prologue: sub rsp, imm32 with its immediate past the end.
  CHECK(shape({0x50, 0x48, 0x81, 0xEC, 0x08}) == 0);
}

TEST_CASE("code map: frameless depth by address", "[coreclr]") {
  static CodeMap m;
  m.add(0x1000, 0x40, 10, kFrameless | 3u << 16 | 24);
  m.add(0x2000, 0x40, 20, 0);
  CHECK(m.frameless_depth(0x1010, false) == 24);
  CHECK(m.frameless_depth(0x1010, true) == 24);
  CHECK(m.frameless_depth(0x1001, true) == -1);   // a leaf still in the prologue
  CHECK(m.frameless_depth(0x1001, false) == 24);  // a return address: past the prologue
  CHECK(m.frameless_depth(0x2010, false) == -1);  // a frame record
  CHECK(m.frameless_depth(0x3000, false) == -1);  // no method
  uint32_t s = 7;
  CHECK(m.find(0x1020, s) == 10);
  CHECK(s == (kFrameless | 3u << 16 | 24));
  CHECK(m.find(0x1020, s) == 10);  // again, from the cache of addresses
  CHECK(s == (kFrameless | 3u << 16 | 24));
  CHECK(m.find(0x2020, s) == 20);
  CHECK(s == 0);
  CHECK(m.find(0x5000, s) == 0);
  CHECK(s == 0);
}
