// The mlpd CLI's subcommands, one file each. Every command gets its own arguments (argv[0] is the
// subcommand name), prints its own --help, and returns the process exit status: 0 success,
// 1 the input is invalid (or a check failed), 2 bad usage.
#pragma once

namespace mlpd::cli {

int cmd_verify(int argc, char** argv);
int cmd_dump(int argc, char** argv);
int cmd_heapshots(int argc, char** argv);
int cmd_heapshot(int argc, char** argv);
int cmd_send(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_top(int argc, char** argv);
int cmd_export(int argc, char** argv);
int cmd_diff(int argc, char** argv);
int cmd_attach(int argc, char** argv);
int cmd_detach(int argc, char** argv);
int cmd_push(int argc, char** argv);

}  // namespace mlpd::cli
