// `calls` on .NET (docs/dotnet.md, "Exact calls"): the runtime's fast-path enter/leave/tail-call
// hooks (ICorProfilerInfo3::SetEnterLeaveFunctionHooks3), entered through our own assembly stubs
// (clr_calls.S: the JIT's register contract on Linux x64), writing each call into the calling
// thread's log as Mono's side does (rt::write_method), kept on the thread's shadow stack
// (capture/call_stack.h) so that every leave has its enter; frames unwound by an exception are closed
// with Mono's exceptional leave. The hooks get our file method id directly: the runtime asks our
// FunctionIDMapper2 once per compiled function (which describes the method first and may say not to
// hook it), and passes what it returned to the hooks.
#pragma once

#include <cstdint>
#include <string>

#include "coreclr/profiling_api.h"

namespace mlpd::coreclr::calls {

// What the mapper asks of the runtime per function, at compilation (before its code runs): `hook`
// whether to put hooks into it (false: none, the method runs without enter/leave events), and the
// return value the file's method id the hooks receive (the method described before it returns).
using MapFn = uint64_t (*)(void* ctx, FunctionID function, bool& hook);

// Sets the mapper and the hooks (only at the runtime's Initialize: the runtime takes them there).
// `calldepth` and `calls_min_ns` as on Mono (0: calls-min off). False with a one-line reason.
bool install(ProfilerInfo* info, MapFn map, void* ctx, uint32_t calldepth, uint64_t calls_min_ns,
             std::string& error);
// Whether the hooks were installed (calls on).
bool installed();
// Recording on or off (stop(): every hook returns at once from then on).
void set_active(bool on);

// calldepth now (pause sets 0: the instrumentation stays, nothing is recorded; leaves of frames
// recorded before are still written).
uint32_t depth();
void set_depth(uint32_t depth);

// The exception's second pass: the runtime unwinds `function`'s frame (ExceptionUnwindFunctionEnter),
// then either leaves it (ExceptionUnwindFunctionLeave: its frame is closed with an exceptional leave)
// or a catch clause in it runs (ExceptionCatcherEnter: the frame goes on).
void unwind_function_enter(FunctionID function);
void unwind_function_leave();
void catcher_enter();

// A dynamic method (DynamicMethodJITCompilationStarted .. Finished) being compiled on this thread:
// never hooked, should the runtime ever ask (.NET 10 does not call the mapper for them): it gives a
// collected one's FunctionID to later dynamic methods, so a hook value could name the wrong one.
void dynamic_compile(FunctionID function);  // 0: none
bool compiling_dynamic(FunctionID function);

}  // namespace mlpd::coreclr::calls

// The hooks' C++ halves, called by the stubs (clr_calls.S) with the mapper's value in the first
// argument register. Not for anyone else (hidden: the stubs call them directly, no PLT).
extern "C" {
#pragma GCC visibility push(hidden)
void mlpd_clr_on_enter(uint64_t method);
void mlpd_clr_on_leave(uint64_t method);
void mlpd_clr_on_enter_min(uint64_t method);
void mlpd_clr_on_leave_min(uint64_t method);
void mlpd_clr_on_tailcall(uint64_t method);
// The stubs the runtime calls (clr_calls.S).
void mlpd_clr_enter_stub();
void mlpd_clr_leave_stub();
void mlpd_clr_enter_min_stub();
void mlpd_clr_leave_min_stub();
void mlpd_clr_tailcall_stub();
#pragma GCC visibility pop
}
