// A client of the agent's TCP command port (docs/command-port.md), shared by `mlpd heapshot` and
// `mlpd send`: options, connection with a deadline, one answer line per command.
#pragma once

#include <string>
#include <vector>

namespace mlpd::cli {

struct PortRequest {
  std::string host = "127.0.0.1";
  std::string port;               // as given (numeric, checked by parse)
  double timeout_s = 40;          // whole exchange; the agent gives up a heapshot after 30 s
  std::vector<std::string> commands;
};

// Parses --host H, --port N, --timeout S (and --command CMD when `command_option`; other words are
// commands when `words_are_commands`). Returns -1 to go on, else the exit status (0 after --help,
// 2 after a one-line usage error).
int parse_port_args(int argc, char** argv, const char* command, const char* help, bool command_option,
                    bool words_are_commands, PortRequest& out);

// Sends the commands (one line each), prints each answer line on stdout. Exit status: 0 when every
// answer is OK, 1 when one is ERR, or on a connection failure / timeout (one line on stderr naming
// the address).
int run_port_request(const char* command, const PortRequest& request);

}  // namespace mlpd::cli
