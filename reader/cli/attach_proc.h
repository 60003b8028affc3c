// What /proc says of a process `mlpd attach` and `mlpd detach` target (reader/cli/cmd_attach.cpp): is it
// alive, a Mono, profiled already, does it refuse attaching, its pending and caught signals, its start.
#pragma once

#include <string>
#include <vector>

namespace mlpd::cli::attach_proc {

std::string read_file(const std::string& path);  // the whole file; empty when it cannot be read
bool alive(long pid);
std::vector<std::string> proc_words(long pid, const char* file);  // the NUL-separated words of /proc/PID/FILE
bool is_mono(long pid);
bool attach_disabled(long pid);  // `--attach=disable` in the runtime's options or MONO_ENV_OPTIONS
bool profiled(long pid);         // a thread of our agent runs there
bool signal_pending(long pid, int sig);
bool signal_caught(long pid, int sig);
double process_start(long pid);  // seconds since the epoch; 0 when unknown

}  // namespace mlpd::cli::attach_proc
