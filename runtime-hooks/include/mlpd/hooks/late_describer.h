// Attach: methods compiled before the attach had no jit_done of ours, and the helper thread that
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

}  // namespace mlpd::hooks
