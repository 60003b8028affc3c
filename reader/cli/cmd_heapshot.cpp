// mlpd heapshot [--host H] --port N [--command CMD] [--timeout S]: asks a running agent for a heapshot.
#include "commands.h"
#include "port_client.h"

namespace mlpd::cli {

namespace {

constexpr const char* kCmd = "heapshot";
constexpr const char* kHelp =
    "usage: mlpd heapshot [--host HOST] --port PORT [--command CMD] [--timeout SECONDS]\n"
    "\n"
    "Asks a program profiled with the mlpd agent (options port=PORT or heapshot=ondemand) for a\n"
    "heapshot through its command port, waits until the heapshot is written and prints the answer:\n"
    "  OK heapshot N     the file now holds heapshot N (counted from 1)\n"
    "  ERR ...           why not (e.g. no heapshot support, timed out)\n"
    "The port is in the agent's stderr line 'mlpd: command port ADDRESS:PORT' and in the file header\n"
    "('mlpd dump FILE | head -1').\n"
    "\n"
    "options:\n"
    "  --host HOST       address or name of the agent's host (default 127.0.0.1)\n"
    "  --port PORT       the command port\n"
    "  --command CMD     send CMD instead of 'heapshot' (any command of 'mlpd send')\n"
    "  --timeout S       give up after S seconds (default 40; the agent gives up a heapshot after 30)\n"
    "\n"
    "exit status: 0 OK, 1 ERR answer or no connection/answer, 2 usage error\n";

}  // namespace

int cmd_heapshot(int argc, char** argv) {
  PortRequest r;
  r.commands = {"heapshot"};
  if (const int rc = parse_port_args(argc, argv, kCmd, kHelp, true, false, r); rc >= 0) return rc;
  return run_port_request(kCmd, r);
}

}  // namespace mlpd::cli
