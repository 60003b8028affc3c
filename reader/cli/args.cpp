#include "args.h"

#include <cstdio>

namespace mlpd::cli {

int parse_args(int argc, char** argv, const char* command, const char* help, std::initializer_list<Flag> flags,
               std::vector<std::string>& files, bool need_file) {
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (options_done || a == "-" || a.empty() || a[0] != '-') {
      files.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(help, stdout);
      return 0;
    }
    bool known = false;
    for (const Flag& f : flags) {
      if (a == f.name) {
        *f.value = true;
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "mlpd %s: unknown option '%s' (try 'mlpd %s --help')\n", command, a.c_str(), command);
      return 2;
    }
  }
  if (need_file && files.empty()) {
    std::fprintf(stderr, "mlpd %s: no FILE given (try 'mlpd %s --help')\n", command, command);
    return 2;
  }
  return -1;
}

}  // namespace mlpd::cli
