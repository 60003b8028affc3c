// Mono 6.8's layout readers (runtime-hooks/src/mono/v6_8/layouts.h) on blobs recorded from Mono
// 6.8.0.105 (Debian 6.8.0.105+dfsg-3.3+deb12u1, x86-64) on the project's machine: the agent's
// code_added, patched for one run, copied with process_vm_readv the MonoMethod (40 bytes),
// MonoGenericInst (8), MonoJitInfo (head, clauses and MonoGenericJitInfo) and location list of every
// method jit_done named while a small program ran (shared generic Box<T>.Make, `this` context;
// G.Pair<A,B>, method context; string:FastAllocateString, a managed-to-native wrapper).
#include "mlpd_catch.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mono/v6_8/layouts.h"

using namespace mlpd::hooks::mono_v6_8;

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Box<object>.Make (the shared method, jit_method == m) at 0x40e295f0, 164 bytes.
const std::string kMakeMethod = "8600000002000006884d5322e1550000d0365322e15500003a560544457f00000010ffff00000000";
const std::string kMakeClassInst = "6f00000001004000";      // Box<T_REF>: open
const std::string kClosedClassInst = "1200000001000000";    // Box<string>: closed
const std::string kMakeJi =
    "90bd4922e15500000000000000000000f095e2400000000009000000a40000000000050000000000000000000000000000"
    "475322e155000030f25022e1550000020000000000000038f25022e15500000000000004010000";
const std::string kMakeLocs = "01000000070000000000000000000000080000000000000004000000000000000800000000000000";
// G.Pair<A_REF, B_REF> at 0x40e29b50, 392 bytes.
const std::string kPairJi =
    "20605322e155000080f25022e1550000509be240000000000b0000008801000000000500000000000000000000000000"
    "d08e5222e1550000e0f95022e15500000200000000000000e8f95022e15500003000000004010000";
const std::string kPairLocs = "010000000a0000000000000000000000120000000000000004000000300000001200000000000000";
const std::string kPairMethodInst = "7100000002004000";  // <A_REF, B_REF>: open
// string:FastAllocateString, compiled as a managed-to-native wrapper (MONO_WRAPPER_MANAGED_TO_NATIVE, 6).
const std::string kFastAllocateString = "1000000000000000e80b4a22e155000070155b22e1550000d0155b22e15500001901000000000000";
// A runtime-invoke wrapper's JIT info with one clause and no generic JIT info (120 bytes recorded).
const std::string kInvokeJi =
    "b8d44d22e15500000000000000000000c08be2400000000005000000600100000100040000000000000000000000000010e64f22"
    "e155000000000000c8ffffff198ce24000000000628ce24000000000628ce24000000000";

template <size_t N>
void fill(uint8_t (&to)[N], const std::vector<uint8_t>& from, size_t at = 0) {
  REQUIRE(from.size() >= at + N);
  std::copy(from.begin() + static_cast<long>(at), from.begin() + static_cast<long>(at + N), to);
}

}  // namespace

TEST_CASE("v6_8: a MonoMethod's wrapper type") {
  CHECK(wrapper_type(from_hex(kFastAllocateString).data()) == 6);
  CHECK(wrapper_type(from_hex(kMakeMethod).data()) == 0);
}

TEST_CASE("v6_8: a MonoGenericInst's is_open") {
  CHECK(open_instantiation(from_hex(kMakeClassInst).data()));
  CHECK(open_instantiation(from_hex(kPairMethodInst).data()));
  CHECK_FALSE(open_instantiation(from_hex(kClosedClassInst).data()));
  CHECK_FALSE(open_instantiation(nullptr));
}

TEST_CASE("v6_8: MonoJitInfo's head") {
  uint8_t head[kJiHead];
  fill(head, from_hex(kMakeJi));
  JitInfoHead h = parse_jit_info_head(head);
  CHECK(h.method == 0x55e12249bd90);
  CHECK(h.code_start == 0x40e295f0);
  CHECK(h.code_size == 164);
  CHECK(h.clauses == 0);
  CHECK(h.has_generic_jit_info);
  fill(head, from_hex(kInvokeJi));
  h = parse_jit_info_head(head);
  CHECK(h.method == 0x55e1224dd4b8);
  CHECK(h.code_start == 0x40e28bc0);
  CHECK(h.code_size == 352);
  CHECK(h.clauses == 1);
  CHECK_FALSE(h.has_generic_jit_info);
  // The clause's try_start, try_end and handler_start lie inside the code.
  const std::vector<uint8_t> ji = from_hex(kInvokeJi);
  const size_t clause = clause_address(0, 0);
  for (size_t k = 0; k < 3; ++k) {
    uint64_t a;
    std::memcpy(&a, ji.data() + clause + 8 * k, 8);
    CHECK((a >= h.code_start && a <= h.code_start + static_cast<uint64_t>(h.code_size)));
  }
  CHECK(generic_jit_info_address(0x1000, 2) == 0x1000 + kJiHead + 2 * kClauseSize);
}

TEST_CASE("v6_8: MonoGenericJitInfo and where a shared frame keeps its context") {
  uint8_t gi[kGenericJiSize];
  fill(gi, from_hex(kMakeJi), generic_jit_info_address(0, 0));
  GenericJitInfo g = parse_generic_jit_info(gi);
  CHECK(g.nlocs == 2);
  CHECK(g.locations == 0x55e12250f238);
  CHECK(g.this_reg == 4);
  CHECK(g.this_offset == 0);
  CHECK(g.has_this);
  CHECK_FALSE(g.this_in_reg);
  ContextSlot slot;
  // `this`: in a register (rdi, 7) until code offset 8, then at [rsp + 0] to the end.
  REQUIRE(context_slot(g, from_hex(kMakeLocs).data(), 164, slot));
  CHECK(slot.reg == 4);
  CHECK(slot.offset == 0);
  CHECK(slot.from == 8);

  fill(gi, from_hex(kPairJi), generic_jit_info_address(0, 0));
  g = parse_generic_jit_info(gi);
  CHECK(g.nlocs == 2);
  CHECK(g.this_offset == 0x30);
  // The method runtime generic context: in r10 until 0x12, then at [rsp + 0x30].
  REQUIRE(context_slot(g, from_hex(kPairLocs).data(), 392, slot));
  CHECK(slot.reg == 4);
  CHECK(slot.offset == 0x30);
  CHECK(slot.from == 0x12);

  // Only the register entry: the context is never in a stack slot.
  GenericJitInfo one = g;
  one.nlocs = 1;
  std::vector<uint8_t> reg_only = from_hex(kPairLocs);
  reg_only[16] = 0;  // its `to` 0: up to the end, in a register
  CHECK_FALSE(context_slot(one, reg_only.data(), 392, slot));
  // No location list: this_reg/this_offset, unless the context is in the register itself.
  GenericJitInfo none = g;
  none.nlocs = 0;
  REQUIRE(context_slot(none, nullptr, 392, slot));
  CHECK((slot.reg == 4 && slot.offset == 0x30 && slot.from == 0));
  none.this_in_reg = true;
  CHECK_FALSE(context_slot(none, nullptr, 392, slot));
  GenericJitInfo no_this = g;
  no_this.has_this = false;
  CHECK_FALSE(context_slot(no_this, from_hex(kPairLocs).data(), 392, slot));
  GenericJitInfo too_many = g;
  too_many.nlocs = kMaxLocs + 1;
  CHECK_FALSE(context_slot(too_many, from_hex(kPairLocs).data(), 392, slot));
}
