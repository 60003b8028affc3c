// --from T / --to T of report and export: seconds from the start ("90", "1.5") or a wall-clock time
// of day "HH:MM:SS[.fff]" (local time, on the day of the file header's start time).
#pragma once

#include <string>
#include <string_view>

#include "mlpd/profile.h"

namespace mlpd::cli {

// Parses T into `out`; false with a message for anything else.
bool parse_window_bound(std::string_view t, profile::WindowBound& out, std::string& error);

}  // namespace mlpd::cli
