// What a runtime's room gives the sampling capture (sample_capture.cpp) and asks of it. The capture
// owns the pool, the signal handlers' work, the CPU-time charging and the drain; a runtime adds only
// what it alone knows: an async-signal-safe walk of its managed frames (if it has one), its own
// sampler thread's signals (if it has one), which of its methods are described, and whether it was
// attached late. Mono's room: mono/sampler.cpp; .NET gives none of these (sampling.h's
// start_late_sampling does all, and the helper unwinds JIT'd frames from the stack copy).
#pragma once

#include <cstdint>
#include <string>

#include "mlpd/capture/sampling.h"
#include "mlpd/rt/meta_log.h"
#include "sample_pool.h"

namespace mlpd::hooks {

// Maps the pool (config.pool records) and arms the handlers: signals from now on are recorded into
// `meta`'s samples. Nothing signals yet (the runtime's sampler, cpu_timers or late_sampler.cpp
// does). False with a one-line reason.
bool start_sample_pool(const SamplingConfig& config, rt::MetaLog* meta, std::string& error);

// The runtime's walk of the interrupted thread's managed frames, called in the signal handler with
// its ucontext when the thread is managed: fills r->methods/code/nframes (at most
// sampling_detail::g_pool->maxframes; r->truncated when deeper), r->leaf_offset and
// r->leaf_code_start for the innermost frame. Async-signal-safe. nullptr (default): no walk.
using HandlerWalk = void (*)(const void* context, sampling_detail::Record* r);
void set_handler_walk(HandlerWalk walk);

// The runtime's sampler thread signalled this thread (Mono's sample-hit callback): `ip` interrupted,
// `context` its ucontext_t. The thread is managed.
void sample_hit(const void* ip, const void* context);
// The runtime has a sampler thread of its own (named so in the statistics); nullptr: it has none.
void set_runtime_sampler(const char* name);
// The mode and rate changed at run time (after the runtime's sampler accepted them).
void set_sample_rate(uint8_t mode, uint32_t freq);

// The drain's questions (sample_drain.cpp). `known`: whether a method a managed frame names was
// described in the file (nullptr, the default: every method is). `late`: attached after start-up
// (threads started before are named from /proc, native IPs in no module asked of the describer).
void set_method_known(bool (*known)(uint64_t method));
void set_attached_late(bool late);

// Frame records that skip a frame (the helper's unwind through JIT'd code, native_unwind.cpp). .NET's
// on-stack replacement: a method's OSR body runs over its tier-0 frame, and the OSR frame's record
// holds the tier-0 frame's saved frame pointer (the caller's) with a return address into the tier-0
// body, so the chain passes over the tier-0 frame's own record, the one that returns into the caller.
// `other_body(ip, ret)`: whether the return address `ret` lies in another code body of the method
// whose code holds `ip` (the frame's own address: the leaf's ip, or a return address). `is_code(a)`:
// whether `a` is an address in code the runtime knows. Helper thread, under the loader's lock: no
// dlopen, no runtime call. nullptr (default): frame records are followed as they are.
// `frameless_depth(ip, leaf)`: for a frame whose code makes no frame record (a small optimised method:
// rbp stays its caller's, so the record chain skips its caller), the bytes from its stack pointer to
// its return address at `ip` (the leaf's ip, or a return address minus one); -1 when it makes a record
// or the depth at `ip` is not known (the record is followed).
struct ReplacedFrames {
  bool (*other_body)(uint64_t ip, uint64_t ret) = nullptr;
  bool (*is_code)(uint64_t address) = nullptr;
  int (*frameless_depth)(uint64_t ip, bool leaf) = nullptr;
};
void set_replaced_frames(const ReplacedFrames& check);

}  // namespace mlpd::hooks
