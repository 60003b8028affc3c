// Reading a file into the profile model for the report/export/diff commands: progress on a
// terminal, problems on standard error as 'mlpd verify' words them.
#pragma once

#include <string>
#include <vector>

#include "mlpd/profile.h"

namespace mlpd::cli {

// Returns false when the file could not be opened (message printed); `had_problems` tells whether
// the file has problems (printed, and what could be read is in `p`).
// `jobs`: BuildOptions::jobs (standard input is read by one thread: it cannot be read again).
bool load_profile(const char* command, const std::string& path, profile::Profile& p, profile::Listener* listener,
                  bool& had_problems, unsigned jobs = 1);
// Several files of one run (rotated files, in order) as one profile, with the time window of
// `options` (its listener and progress are set here).
bool load_profiles(const char* command, const std::vector<std::string>& paths, profile::Profile& p,
                   profile::Listener* listener, profile::BuildOptions options, bool& had_problems);
// One file that a running agent is writing (--follow, follow.h): returns once the writer has exited
// and everything it wrote is read; a file cut inside a buffer by a writer that is gone is a problem,
// with a line saying so.
bool load_profile_follow(const char* command, const std::string& path, profile::Profile& p,
                         profile::Listener* listener, profile::BuildOptions options, bool& had_problems);

}  // namespace mlpd::cli
