// What `mlpd attach PID` / `mlpd detach PID` (reader/cli/attach_dotnet.cpp) and the agent attached to a
// .NET process (runtime-hooks/src/coreclr/attach_entry.cpp) agree on; written once here. No runtime
// header, nothing but constants.
//  * The runtime loads the profiler whose class id the AttachProfiler command names: mlpd's.
//  * The command's client data, handed to InitializeForAttach, is text, one `name=value` per line:
//      answer=PATH    where the agent writes its answer ("OK" or "ERR", then its lines), in a 0700
//                     directory the trigger made for it; created there by the agent (O_EXCL)
//      options=TEXT   MLPD_OPTIONS's syntax
//  * While attached the agent serves an abstract Unix socket, kControlPrefix + the process id: one
//    line ("detach") per connection, the answer as above; both sides check the other (SO_PEERCRED).
#pragma once

#include <cstddef>

namespace mlpd::runtime::attach_protocol {

inline constexpr char kMlpdClsidText[] = "{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}";  // CORECLR_PROFILER
inline constexpr char kAnswerLine[] = "answer=";
inline constexpr char kOptionsLine[] = "options=";
inline constexpr char kControlPrefix[] = "mlpd-control-";
inline constexpr size_t kMaxRequest = 16384;

}  // namespace mlpd::runtime::attach_protocol
