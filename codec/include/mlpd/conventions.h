// What the agent writes and the reader recognizes beyond the format itself (format.h): names the two
// sides agree on by convention, spelled once here. The agent names its counters and native frames
// with them; the reader's report and names find them by them.
#pragma once

#include <string_view>

#include "mlpd/format.h"

namespace mlpd::conventions {

// ---- Native frames (sample_usym names) ----
// The profiler's own functions: "[mlpd] " then the symbol ("[mlpd] mlpd::hooks::on_allocation()").
inline constexpr std::string_view kOwnFramePrefix = "[mlpd] ";
// Code that no symbol covers: "?? (MODULE+0xOFFSET)", the module's file name and the offset in it.
inline constexpr std::string_view kUnnamedNativePrefix = "?? (";
// A stack cut short ends with this frame at its root (format::kTruncatedName, the method the agent
// describes once for it).
inline constexpr std::string_view kTruncatedFrame = format::kTruncatedName;

// ---- Counters (profiler section) ----
// The process's CPU time, in 100 ns units (as Mono's own counters).
inline constexpr std::string_view kProcessCpuUser = "CPU time (user)";
inline constexpr std::string_view kProcessCpuSystem = "CPU time (system)";
// One pair per thread: the prefix, then "NAME [TID]".
inline constexpr std::string_view kThreadCpuUserPrefix = "Thread CPU time (user): ";
inline constexpr std::string_view kThreadCpuSystemPrefix = "Thread CPU time (system): ";
// The sampling rate asked for and the rate the samples came at, in Hz.
inline constexpr std::string_view kSampleRateAsked = "Sample rate asked (Hz)";
inline constexpr std::string_view kSampleRateDelivered = "Sample rate delivered (Hz)";
// One counter per AOT-compiled image the runtime loaded (value 1): its methods ran without
// enter/leave events, which the report's calls section says (issue 33).
inline constexpr std::string_view kAotImageCounterPrefix = "AOT image loaded: ";

}  // namespace mlpd::conventions
