// mlpd send [--host H] --port N [--timeout S] COMMAND...: commands to a running agent's command port.
#include "commands.h"
#include "port_client.h"

namespace mlpd::cli {

namespace {

constexpr const char* kCmd = "send";
constexpr const char* kHelp =
    "usage: mlpd send [--host HOST] --port PORT [--timeout SECONDS] COMMAND...\n"
    "\n"
    "Sends each COMMAND (one argument each; quote commands with spaces) to the command port of a\n"
    "program profiled with the mlpd agent, in order on one connection, and prints one answer line\n"
    "per command ('OK ...' or 'ERR ...'). Commands (docs/command-port.md):\n"
    "  heapshot                  take a heapshot; answered once it is written\n"
    "  flush                     write what is recorded now; answered once written\n"
    "  stats                     bytes and buffers written, events dropped, ...\n"
    "  events                    the events being recorded\n"
    "  'events +NAME -NAME ...'  record more or fewer events from now on (names as in the agent\n"
    "                            options: exception monitor gc gcalloc gcmove gcroot gchandle\n"
    "                            finalization counter jit alloc legacy calls)\n"
    "  help                      the command list\n"
    "\n"
    "options:\n"
    "  --host HOST   address or name of the agent's host (default 127.0.0.1)\n"
    "  --port PORT   the command port\n"
    "  --timeout S   give up after S seconds (default 40)\n"
    "\n"
    "exit status: 0 every answer OK, 1 an ERR answer or no connection/answer, 2 usage error\n";

}  // namespace

int cmd_send(int argc, char** argv) {
  PortRequest r;
  if (const int rc = parse_port_args(argc, argv, kCmd, kHelp, false, true, r); rc >= 0) return rc;
  return run_port_request(kCmd, r);
}

}  // namespace mlpd::cli
