// mlpd: reads, verifies and reports mlpd files (Mono log profiler format 3.0, data version 17).
#include <cstdio>
#include <cstring>
#include <string_view>

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
    {"diff", mlpd::cli::cmd_diff, "differential flame graph of two profiles (growth red, shrinkage blue)"},
    {"verify", mlpd::cli::cmd_verify, "check files against the format; exit 1 if any problem"},
    {"dump", mlpd::cli::cmd_dump, "print the header and every event, one per line"},
    {"heapshots", mlpd::cli::cmd_heapshots, "list the heapshots per class, or what changed between two"},
    {"heapshot", mlpd::cli::cmd_heapshot, "ask a running profiled program for a heapshot (command port)"},
    {"send", mlpd::cli::cmd_send, "send commands to a running profiled program's command port"},
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: mlpd COMMAND [OPTIONS] [ARGS]\n"
               "\n"
               "Reads mlpd files (Mono log profiler format 3.0, data version 17), plain or gzip,\n"
               "from files or standard input (-); talks to a running agent's command port.\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'mlpd COMMAND --help' describes a command.\n");
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
  for (const Command& c : kCommands) {
    if (cmd == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "mlpd: unknown command '%s' (try 'mlpd --help')\n", argv[1]);
  return 2;
}
