// Reading a file into the profile model for the report/export/diff commands: progress on a
// terminal, problems on standard error as 'mlpd verify' words them.
#pragma once

#include <string>

#include "mlpd/profile.h"

namespace mlpd::cli {

// Returns false when the file could not be opened (message printed); `had_problems` tells whether
// the file has problems (printed, and what could be read is in `p`).
bool load_profile(const char* command, const std::string& path, profile::Profile& p, profile::Listener* listener,
                  bool& had_problems);

}  // namespace mlpd::cli
