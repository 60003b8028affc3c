// Seams of Mono's attach entry points (attach_entry.cpp) for the unit tests
// (tests/unit/runtime-hooks/mono/attach_entry_test.cpp), which run them in a child process without a
// runtime. The product never calls these.
#pragma once

#include <string>

namespace mlpd::mono::attach_seams {

// The runtime's directory (/tmp/mono-USER) is `dir` instead: Mono's listener, our control socket,
// the request, answer and park files of this process are looked for and made there.
void use_runtime_dir(const std::string& dir);

// The Mono functions parking looks up with dlsym (mono_profiler_create, then
// mono_profiler_set_gc_finalized_callback, mono_gc_finalize_notify) are these: `create` is called
// once, here, for the profiler handle.
void use_park_functions(void* (*create)(void*), void (*set_finalized)(void*, void (*)(void*)), void (*notify)());

}  // namespace mlpd::mono::attach_seams
