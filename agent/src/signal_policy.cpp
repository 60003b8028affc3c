// `dumpsignal=NAME`: which signals the agent may take, and who owns the others.
#include <signal.h>

#include "mlpd/agent/options.h"

namespace mlpd::agent {

int dump_signal_from_name(std::string_view name, std::string& why, std::string* canonical) {
  // Who owns the signals we do not take (Mono 6.8: mini-posix.c mono_runtime_posix_install_handlers,
  // utils/mono-threads-posix-signals.c, the sampler's signal; System.Console's console-unix.c).
  struct Sig {
    std::string_view name;
    int number;
    std::string_view owner;  // empty: the agent may take it
  };
  static constexpr Sig kSignals[] = {
      {"USR1", SIGUSR1, {}},
      {"USR2", SIGUSR2, {}},
      {"HUP", SIGHUP, {}},
      {"KILL", SIGKILL, "cannot be caught"},
      {"STOP", SIGSTOP, "cannot be caught"},
      {"SEGV", SIGSEGV, "Mono's (null references, crashes)"},
      {"BUS", SIGBUS, "Mono's (crashes)"},
      {"ILL", SIGILL, "Mono's (crashes)"},
      {"FPE", SIGFPE, "Mono's (division by zero)"},
      {"ABRT", SIGABRT, "Mono's (crash reports)"},
      {"SYS", SIGSYS, "Mono's (crashes)"},
      {"TRAP", SIGTRAP, "the debugger's"},
      {"QUIT", SIGQUIT, "Mono's (thread dump)"},
      {"PWR", SIGPWR, "Mono's (GC thread suspend)"},
      {"XCPU", SIGXCPU, "Mono's (GC thread restart)"},
      {"PROF", SIGPROF, "the sampler's"},
      {"CHLD", SIGCHLD, "Mono's (child processes)"},
      {"PIPE", SIGPIPE, "Mono's (ignored)"},
      {"INT", SIGINT, "the program's (Console.CancelKeyPress) and the terminal's"},
      {"TERM", SIGTERM, "the program's termination signal"},
      {"WINCH", SIGWINCH, "System.Console's"},
      {"CONT", SIGCONT, "System.Console's and job control's"},
      {"TSTP", SIGTSTP, "job control's"},
      {"TTIN", SIGTTIN, "job control's"},
      {"TTOU", SIGTTOU, "job control's"},
      {"ALRM", SIGALRM, "the program's (timers)"},
      {"VTALRM", SIGVTALRM, "the program's (timers)"},
      {"URG", SIGURG, "the program's (sockets)"},
      {"IO", SIGIO, "the program's (asynchronous I/O)"},
      {"POLL", SIGPOLL, "the program's (asynchronous I/O)"},
      {"XFSZ", SIGXFSZ, "the kernel's (file size limit)"},
      {"STKFLT", SIGSTKFLT, "unused by Linux"},
  };
  std::string upper;
  for (const char c : name) upper += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  std::string_view n = upper;
  if (n.substr(0, 3) == "SIG") n.remove_prefix(3);
  for (const Sig& s : kSignals) {
    if (s.name != n) continue;
    if (s.owner.empty()) {
      if (canonical) *canonical = "SIG" + std::string(s.name);
      return s.number;
    }
    why = "SIG" + std::string(s.name) + " is " + std::string(s.owner) + "; use USR1, USR2 or HUP";
    return 0;
  }
  if (n.substr(0, 2) == "RT")
    why = "real-time signals are Mono's (thread abort, sampling); use USR1, USR2 or HUP";
  else
    why = "not a signal name: use USR1, USR2 or HUP";
  return 0;
}

}  // namespace mlpd::agent
