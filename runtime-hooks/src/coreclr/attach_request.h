// The request `mlpd attach PID` hands a .NET process's runtime for the profiler (the AttachProfiler
// command's client data, given to InitializeForAttach; its lines: mlpd/runtime/attach_protocol.h).
#pragma once

#include <cstddef>
#include <string>

#include "mlpd/runtime/attach_protocol.h"

namespace mlpd::coreclr {

struct AttachRequest {
  std::string answer;   // absolute path, or empty: no answer wanted
  std::string options;
};

// False with `error` (one line) for data that is not such a request: too long, a NUL inside, an
// unknown or repeated name, a relative answer path or one with "..".
bool parse_attach_request(const void* data, size_t size, AttachRequest& out, std::string& error);

}  // namespace mlpd::coreclr
