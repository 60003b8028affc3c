// The native side of `mlpd attach` (docs/attach.md). Mono's attach listener loads the managed agent
// (managed/MlpdAttach.cs) on its "Attach receiver" thread; the agent loads this library by its
// absolute path and calls mlpd_attach_command, then, after an attach, runs mlpd_attach_serve on a
// background thread of its own (the describer, late_describer.h).
//
// The receiver thread trap: once Mono 6.8/6.12 has started the listener, the process no longer exits
// when Main returns: after the foreground threads, mono_thread_manage aborts every other thread it
// knows and waits for it, and the receiver sits in accept(), which the abort does not end. The managed
// agent hooks AppDomain.ProcessExit (raised just before that wait) to mlpd_attach_exiting, which shuts
// the listening socket down (accept() fails, the receiver returns) and ends our describer thread (a
// background managed thread of ours, in native code).
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "mlpd/agent/agent.h"
#include "mlpd/hooks/late_describer.h"

namespace {

std::string g_socket_path;  // Mono's listener: /tmp/mono-USER/.mono-PID
int g_listen_fd = -1;
bool g_guard_installed = false;

bool is_listener(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) return false;
  addr.sun_path[sizeof addr.sun_path - 1] = 0;
  if (g_socket_path != addr.sun_path) return false;
  int listening = 0;
  socklen_t l = sizeof listening;
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening;
}

void find_listener() {
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) != 0 || !found) return;
  g_socket_path = std::string("/tmp/mono-") + found->pw_name + "/.mono-" + std::to_string(getpid());
  DIR* fds = opendir("/proc/self/fd");
  if (!fds) return;
  while (dirent* e = readdir(fds)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != dirfd(fds) && is_listener(fd)) {
      g_listen_fd = fd;
      break;
    }
  }
  closedir(fds);
}

void install_guard() {
  if (g_guard_installed) return;
  find_listener();
  g_guard_installed = true;
}

// The answer for `mlpd attach`: a file it named, created here (never one that exists, never through
// a link), "OK" or "ERR" then the lines.
void answer(const char* path, bool ok, const std::string& message) {
  if (!path || !*path) return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string text = std::string(ok ? "OK\n" : "ERR\n") + message + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

}  // namespace

// "attach OPTIONS" or "detach". Returns 0 when done, 1 when refused (the reason is in the answer).
extern "C" __attribute__((visibility("default"))) int mlpd_attach_command(const char* command, const char* answer_path) {
  install_guard();
  const std::string c = command ? command : "";
  std::string message;
  bool ok = false;
  if (c == "probe") {
    ok = true;
  } else if (c.rfind("attach", 0) == 0) {
    ok = mlpd::agent::start_attached(c.size() > 7 ? std::string_view(c).substr(7) : std::string_view(), message);
  } else if (c == "detach") {
    ok = mlpd::agent::detach(message);
  } else {
    message = "mlpd: unknown attach command";
  }
  answer(answer_path, ok, message);
  return ok ? 0 : 1;
}

// AppDomain.ProcessExit (the managed agent's handler): let the runtime's shutdown end the receiver and
// the describer.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_exiting() {
  mlpd::hooks::stop_describer();
  if (g_listen_fd >= 0 && is_listener(g_listen_fd)) shutdown(g_listen_fd, SHUT_RDWR);
}

// The describer's thread (a background thread of the managed agent): returns at detach.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_serve() { mlpd::hooks::serve_descriptions(); }
