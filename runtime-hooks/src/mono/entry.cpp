// Mono's entry points of libmlpd.so (each calls agent::start with Mono's Runtime, mono_runtime.h).
//  * LD_PRELOAD=libmlpd.so MLPD_OPTIONS=... : the ELF constructor starts the agent before main, so
//    the profiler is installed before the Mono runtime starts (what mono_profiler_create and the
//    enable_* calls require).
//  * mono --profile=mlpd:OPTIONS (or MONO_ENV_OPTIONS): Mono finds mono_profiler_init_mlpd in the
//    main program's scope (a preloaded library is in it) or in libmono-profiler-mlpd.so.
// When both give options, one precedence (choose_options, docs/options.md): the constructor leaves
// the start to mono_profiler_init_mlpd when Mono is going to call it.
// In a process that is not Mono both do nothing.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "mlpd/agent/agent.h"
#include "mlpd/agent/options.h"
#include "mono/mono_runtime.h"

namespace {

bool is_profile_option(std::string_view word) {
  return word == "--profile=mlpd" || word.rfind("--profile=mlpd:", 0) == 0;
}

// Whether Mono will call mono_profiler_init_mlpd: --profile=mlpd[:...] in MONO_ENV_OPTIONS, or among
// Mono's own options on the command line (those before the first word that is not an option: the
// assembly, whose own arguments are the program's). Read from /proc/self/cmdline (no allocation).
bool profile_option_coming() {
  if (const char* e = std::getenv("MONO_ENV_OPTIONS")) {
    const std::string_view v(e);
    for (size_t pos = 0; pos < v.size();) {
      size_t end = v.find(' ', pos);
      if (end == std::string_view::npos) end = v.size();
      if (is_profile_option(v.substr(pos, end - pos))) return true;
      pos = end + 1;
    }
  }
  static char cmdline[65536];
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = 0;
  for (ssize_t r; n < sizeof cmdline - 1 && (r = ::read(fd, cmdline + n, sizeof cmdline - 1 - n)) != 0;) {
    if (r < 0) break;  // EINTR at most; what was read is enough
    n += static_cast<size_t>(r);
  }
  ::close(fd);
  cmdline[n] = 0;
  size_t pos = std::string_view(cmdline, n).find('\0');  // argv[0]: the runtime itself
  while (pos != std::string_view::npos && pos + 1 < n) {
    const std::string_view arg(cmdline + pos + 1);
    if (arg.empty() || arg[0] != '-') break;  // the assembly: what follows is the program's
    if (is_profile_option(arg)) return true;
    pos += 1 + arg.size();
  }
  return false;
}

}  // namespace

__attribute__((constructor)) static void mlpd_preload_constructor() {
  const char* opts = std::getenv("MLPD_OPTIONS");
  // Not Mono (a child such as /bin/sh): nothing at all, not even a look at the command line.
  if (!opts || !mlpd::mono::runtime().present() || profile_option_coming()) return;
  mlpd::agent::start(opts, mlpd::mono::runtime());
}

__attribute__((destructor)) static void mlpd_unload_destructor() { mlpd::agent::shutdown(); }

extern "C" __attribute__((visibility("default"))) void mono_profiler_init_mlpd(const char* desc) {
  const char* env = std::getenv("MLPD_OPTIONS");
  const mlpd::agent::ChosenOptions chosen = mlpd::agent::choose_options(
      env ? std::optional<std::string_view>(env) : std::nullopt,
      mlpd::agent::options_from_profiler_desc(desc ? desc : ""));
  mlpd::agent::start(chosen.text, mlpd::mono::runtime(), chosen.note);
}
