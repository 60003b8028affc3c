// Attach: methods compiled before the attach had no jit_done of ours (and, with or without attach,
// AOT-compiled methods never have one), and the helper thread that
// drains the samples cannot call Mono. A thread attached to the runtime (the managed agent starts
// one, MlpdAttach.cs) serves here: the drain hands it the sampled methods not yet described and
// waits for it, bounded (sampling.h, set_describe_methods). The serving thread is the attach control
// thread (agent/src/attach_control.cpp), between its other work.
#pragma once

namespace mlpd::hooks {

// The serving thread: waits up to `wait_ms` for a request of the drain and serves it.
void serve_descriptions(int wait_ms);
// Ends serve_descriptions() and takes the drain's hand-over out (detach).
void stop_describer();
// The drain's hand-over goes to serve_descriptions() from now on (install, when late).
void start_describer();
// Preload (issue 33): AOT-compiled methods send no jit_done, so the samples' AOT frames are
// described the same way, by the runtime's finalizer thread: the hand-over wakes it
// (mono_gc_finalize_notify, as heapshot requests do) and its gc_finalized callback serves through
// describer_finalized(). Before the runtime is initialised nothing is waited for.
void start_preload_describer();
// The finalizer's gc_finalized callback: serves a pending request of the preload describer, if any.
void describer_finalized();

}  // namespace mlpd::hooks
