// Argument parsing shared by the CLI's subcommands: boolean flags, `--help`/`-h`, `--` and file names,
// with the same one-line messages everywhere.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "mlpd/budget.h"
#include "mlpd/decoder.h"

namespace mlpd::cli {

struct Flag {
  const char* name;  // e.g. "--json"
  bool* value;       // set to true when the flag is given
};

// Fills `files` and the flags. Returns -1 when the command should go on, otherwise the exit status
// to return at once: 0 after printing `help` (--help), 2 after a one-line usage error on stderr
// (unknown option, or no FILE when `need_file`).
int parse_args(int argc, char** argv, const char* command, const char* help, std::initializer_list<Flag> flags,
               std::vector<std::string>& files, bool need_file = true);

// How a command reads a file: within the process's memory budget (main.cpp sets it from --max-memory).
inline DecodeOptions read_options() {
  DecodeOptions options;
  options.budget = &process_budget();
  return options;
}

}  // namespace mlpd::cli
