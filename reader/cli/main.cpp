// mlpd: reads, verifies and reports mlpd files (Mono log profiler format 3.0, data version 17).
#include <cstdio>
#include <cstring>
#include <string_view>

#include "args.h"
#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"report", mlpd::cli::cmd_report, "where the time and memory went: samples, calls, allocations, GC, ..."},
    {"top", mlpd::cli::cmd_top, "live view of a file a running program is writing (flush=MS)"},
    {"export", mlpd::cli::cmd_export, "write the profile as a flame graph or for other tools (--help lists the formats)"},
    {"push", mlpd::cli::cmd_push, "send files' profiles to a Pyroscope-compatible server (continuous profiling)"},
    {"diff", mlpd::cli::cmd_diff, "differential flame graph of two profiles (growth red, shrinkage blue)"},
    {"verify", mlpd::cli::cmd_verify, "check files against the format; exit 1 if any problem"},
    {"dump", mlpd::cli::cmd_dump, "print the header and every event, one per line"},
    {"heapshots", mlpd::cli::cmd_heapshots, "list the heapshots per class, or what changed between two"},
    {"heapshot", mlpd::cli::cmd_heapshot, "ask a running profiled program for a heapshot (command port)"},
    {"attach", mlpd::cli::cmd_attach, "profile a running Mono process (PID) from now on; --for SECONDS then detach"},
    {"detach", mlpd::cli::cmd_detach, "stop profiling a process `mlpd attach` profiles; it runs on"},
    {"send", mlpd::cli::cmd_send, "send commands to a running profiled program's command port"},
};

void usage(FILE* out) {
  // The layout help2man expects: Usage, description, sections of "  -x, --long  text" lines.
  std::fprintf(out,
               "Usage: mlpd COMMAND [OPTIONS] [ARGS]\n"
               "  or:  mlpd --help | --version\n"
               "\n"
               "Reads mlpd files (Mono log profiler format 3.0, data version 17), plain or gzip,\n"
               "from files or standard input (-); talks to a running agent's command port.\n\nCommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s  %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nOptions:\n"
               "  -h, --help             print this help and exit\n"
               "      --version          print the version and exit\n"
               "      --max-memory=SIZE  stop reading files with an error once the reader's heap\n"
               "                         grows beyond SIZE (K, M, G suffixes; 0: no limit; default 1G)\n"
               "  -j, --jobs N           report, export, diff, heapshots: read on N threads\n"
               "                         (default: one per core; 1: one thread; the result is the same)\n"
               "\n'mlpd COMMAND --help' describes a command.\n"
               "\nProfiling: the agent, libmlpd.so, runs inside the Mono program:\n"
               "LD_PRELOAD=libmlpd.so MLPD_OPTIONS=OPTIONS mono PROGRAM.exe, or\n"
               "mono --profile=mlpd:OPTIONS PROGRAM.exe; MLPD_OPTIONS=help lists the options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("mlpd " MLPD_VERSION " (format 3.0, data version 17)\n");
    return 0;
  }
  // --max-memory (args.h), taken out before the command parses its own arguments.
  argc = mlpd::cli::take_max_memory(argc, argv);
  if (argc < 0) return 2;
  for (const Command& c : kCommands) {
    if (cmd == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "mlpd: unknown command '%s' (try 'mlpd --help')\n", argv[1]);
  return 2;
}
