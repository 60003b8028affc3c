// Mono's side of perf's files (perf_output.cpp): the JIT callbacks' entries, with Mono's types (the
// public perf_output.h names none).
#pragma once

#include <mono/metadata/profiler.h>

#include <cstdint>
#include <string>

#include "mlpd/hooks/perf_output.h"

namespace mlpd::hooks::perf {

// Callbacks (metadata_callbacks.cpp): a method's code, a code buffer (trampoline, helper). No-ops when off.
// `name`: the method's full name when the caller has it (nullptr: made here).
void method_jitted(MonoMethod* method, uint64_t start, uint64_t size, const std::string* name);
void code_buffer(const void* buffer, uint64_t size, MonoProfilerCodeBufferType type, const void* data);

}  // namespace mlpd::hooks::perf
