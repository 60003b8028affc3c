// Our own managed stack walker for backtraces (alloc, monitor, throw, GC handle events): the same frames
// mono_stack_walk_no_il reports, for a few hundred instructions instead of ~10,000 per event.
//
// How (details and the safety argument in docs/design.md, "Backtraces"):
// * JIT'd code ranges come from the jit_done callback (code_added); each method's frame layout is read
//   from its prologue (Mono's amd64 backend emits either `push rbp; mov rbp,rsp` or `sub rsp,N` followed
//   by register saves to [rsp+k]). IP -> method lookups go through a per-thread direct-mapped cache.
// * The native frames between this walker and the innermost managed frame (Mono's allocator, the
//   profiler dispatch) and those above the outermost managed frame (mono_jit_runtime_invoke ... main or
//   start_thread) are not unwound per event: their shape is learned once with libunwind ("signatures":
//   return-address slots and their expected values, relative to a stack position) and afterwards only
//   checked, slot by slot. Where the thread's MonoJitTlsData is known, an allocation's walk may start
//   at the thread's last LMF, and the top follows the LMF as Mono's walk does (it ends at the thread's
//   first LMF, or goes on at the managed frame a record names): no top chain is needed then.
// * Whenever anything is not exactly as learned (unknown IP, a frame layout we cannot read, generic shared
//   code, a stack outside the thread's bounds, another managed segment above native frames), the event
//   uses mono_stack_walk_no_il. The first backtraces and the first uses of every learned signature are
//   cross-checked against mono_stack_walk_no_il; any difference switches our walker off for good.
#pragma once

#include <mono/metadata/appdomain.h>
#include <mono/metadata/object.h>

#include <cstdint>
#include <string>

namespace mlpd::hooks::walker {

// `use_ours` false (MLPD_WALKER=mono) keeps every backtrace on mono_stack_walk_no_il; `check_all`
// (MLPD_WALKER=check, for tests) compares every backtrace of ours with Mono's, not only the first ones.
// `verbose` lets the walker say once why it switched itself off.
void init(bool use_ours, bool check_all, bool verbose);

// From jit_done (after the method is described): `m` was compiled to [start, start + size) in `domain`.
// `jit_method` is the method Mono's JIT info names for that code; when it differs from `m`, and for
// every generic instance, frames in it are left to Mono.
void code_added(MonoMethod* m, const MonoJitInfo* ji, MonoMethod* jit_method, MonoDomain* domain, uint64_t start,
                uint64_t size);

// From domain_unloading: the ranges JIT'd in `domain` are forgotten (that memory will be reused, possibly
// for code we never hear of, such as trampolines).
void domain_unloading(MonoDomain* domain);

// From method_free (a dynamic method's code is released): its ranges are forgotten.
void method_freed(MonoMethod* m);

// The calling thread's managed frames, innermost first, at most `max` -- exactly what
// mono_stack_walk_no_il would give (it is used whenever ours is unsure). Not while the world is stopped.
// `alloc`: an allocation's backtrace, which may start from the thread's last managed-to-native
// transition when no learned native chain leads to managed code (not during exception handling, where
// Mono's walk starts from the throw's context).
uint32_t collect(MonoMethod** frames, uint32_t max, bool alloc = false);

// One line for `verbose`: how many backtraces our walker made and how many went to Mono.
std::string summary();

}  // namespace mlpd::hooks::walker
