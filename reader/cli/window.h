// The options report, export and diff share. --from T / --to T of report and export: seconds from
// the start ("90", "1.5") or a wall-clock time of day "HH:MM:SS[.fff]" (local time, on the day of
// the file header's start time). --what W of export and diff: profile::parse_what's names.
#pragma once

#include <string>
#include <string_view>

#include "args.h"
#include "mlpd/profile.h"

namespace mlpd::cli {

// Parses T into `out`; false with a message for anything else.
bool parse_window_bound(std::string_view t, profile::WindowBound& out, std::string& error);

// The option `name` (--from or --to) for parse_command(), filling `out`.
Option window_option(const char* name, profile::WindowBound& out);
// --what for parse_command(): sets `out` and `given`.
Option what_option(profile::What& out, bool& given);

}  // namespace mlpd::cli
