// Argument parsing shared by the CLI's subcommands: flags, options with a value, `--help`/`-h`, `--`
// and file names, with the same one-line messages everywhere.
#pragma once

#include <functional>
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

// One option of a subcommand: a flag (`flag` set), or an option with a value (`take` set), given as
// `NAME VALUE` (or `NAME=VALUE` when `joined`). `take` returns "" or the usage error to print.
struct Option {
  const char* name;                 // "--top"
  const char* alias = nullptr;      // "-o" beside "--output"
  bool* flag = nullptr;
  std::function<std::string(const std::string& value)> take;
  bool joined = false;
  // An option with two values (`NAME V1 V2`, `heapshots --diff A B`): take2 instead of take.
  std::function<std::string(const std::string& first, const std::string& second)> take2 = {};
  // A missing value is given to take/take2 as "" (whose message then says what is wrong) instead of
  // the usage error "NAME needs a value".
  bool missing_empty = false;
};

// --jobs N (report, export, diff): the profile model built by N worker threads (profile.h,
// BuildOptions::jobs); `jobs` starts as default_jobs(), the number of cores.
unsigned default_jobs();
Option jobs_option(unsigned& jobs);

// Prints "mlpd COMMAND: MESSAGE (try 'mlpd COMMAND --help')" on stderr; returns 2.
int usage_error(const char* command, const std::string& message);

// `mlpd`'s own option, anywhere after the command: --max-memory=SIZE / --max-memory SIZE (the reader's
// memory budget, mlpd/budget.h: process_budget() set), taken out of argv[1..argc) up to a `--` (which
// stays, with what follows it). Returns the new argc, or -1 after one line on stderr for a bad SIZE.
int take_max_memory(int argc, char** argv);

// parse_command's walk over the arguments, printing nothing: files collected, flags set, values taken,
// up to the first usage error (its message in `error`) or --help/-h. A `survey` only reads what the
// options it knows are given: --help (noted in `help`) and unknown options are passed over, and the
// walk goes on to the end -- for a command that is another one by an option's value (`export --what
// retained`), to know which before that one parses the arguments for real.
struct ArgumentWalk {
  enum class End { done, help, error } end = End::done;
  std::string error;
  bool help = false;
};
ArgumentWalk walk_arguments(int argc, char** argv, const std::vector<Option>& options, std::vector<std::string>& files,
                            bool survey = false);
// Goes over the arguments in order: `--` ends the options, `--help`/`-h` prints `help` (returns 0),
// an option fills its flag or takes its value, "-", "" and words not starting with '-' are files, and
// anything else is an unknown option. Returns -1 when the command should go on, 0 after --help, 2
// after a usage error (printed; the first one met). The number of files is the command's to check.
int parse_command(int argc, char** argv, const char* command, const std::string& help,
                  const std::vector<Option>& options, std::vector<std::string>& files);

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
