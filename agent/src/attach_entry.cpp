// The native side of `mlpd attach` (docs/attach.md). Mono's attach listener loads the managed agent
// (managed/MlpdAttach.cs) on its "Attach receiver" thread; the agent loads this library by its
// absolute path and calls mlpd_attach_command for the first command, then starts the control thread
// (mlpd_attach_serve, a background managed thread named mlpd-control) and ends Mono's receiver
// (mlpd_attach_release).
//
// Why the receiver is ended: Mono 6.8's receiver waits in accept() without telling the runtime it is
// blocked, so every stop-the-world collection waits for it forever (seen here: a program allocating
// after a mere probe, trigger file + SIGQUIT, hangs at its next collection), and its shutdown waits for
// it too. Shutting its listening socket down makes accept() fail and the thread return. The runtime
// cannot start its listener again (a second SIGQUIT prints a thread dump instead), so later commands
// (detach, attach again) come through our own socket, /tmp/mono-USER/.mlpd-PID (0600, in the
// runtime's 0700 directory), served by the control thread, which also describes the methods the
// samples name (late_describer.h). The control thread ends at the program's exit (ProcessExit,
// mlpd_attach_exiting); between a detach and the exit it waits in poll(), nothing else of ours runs.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "mlpd/agent/agent.h"
#include "mlpd/hooks/late_describer.h"

namespace {

std::string g_dir;           // the runtime's directory: /tmp/mono-USER
std::string g_socket_path;   // Mono's listener: DIR/.mono-PID
std::string g_control_path;  // ours: DIR/.mlpd-PID
int g_listen_fd = -1;        // Mono's listening socket
std::atomic<bool> g_exiting{false};
bool g_found = false;

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
  if (g_found) return;
  g_found = true;
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) != 0 || !found) return;
  g_dir = std::string("/tmp/mono-") + found->pw_name;
  g_socket_path = g_dir + "/.mono-" + std::to_string(getpid());
  g_control_path = g_dir + "/.mlpd-" + std::to_string(getpid());
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

// The answer for `mlpd attach`: a file it named, created here (never one that exists, never through
// a link), "OK" or "ERR" then the lines.
void answer(const std::string& path, bool ok, const std::string& message) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::string text = std::string(ok ? "OK\n" : "ERR\n") + message + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

int run(const std::string& c, const std::string& answer_path) {
  std::string message;
  bool ok = false;
  if (c.rfind("attach", 0) == 0) {
    ok = mlpd::agent::start_attached(c.size() > 7 ? std::string_view(c).substr(7) : std::string_view(), message);
  } else if (c == "detach") {
    ok = mlpd::agent::detach(message);
  } else {
    message = "mlpd: unknown attach command";
  }
  answer(answer_path, ok, message);
  return ok ? 0 : 1;
}

// A request file of `mlpd attach`, in the runtime's 0700 directory only: three lines (libmlpd.so's
// path, the answer file, the command). Removed once read.
bool read_request(const std::string& path, std::string& answer_path, std::string& command) {
  if (path.rfind(g_dir + "/.mlpd-request-", 0) != 0 || path.find("/..") != std::string::npos) return false;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  ::unlink(path.c_str());
  const std::string text = ss.str();
  const size_t a = text.find('\n');
  const size_t b = a == std::string::npos ? a : text.find('\n', a + 1);
  if (b == std::string::npos) return false;
  answer_path = text.substr(a + 1, b - a - 1);
  command = text.substr(b + 1);
  return answer_path.rfind(g_dir + "/.mlpd-answer-", 0) == 0;
}

int open_control() {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (g_control_path.empty() || g_control_path.size() >= sizeof a.sun_path) {
    ::close(fd);
    return -1;
  }
  std::memcpy(a.sun_path, g_control_path.c_str(), g_control_path.size() + 1);
  ::unlink(g_control_path.c_str());
  const mode_t old = umask(077);  // 0600 from the start: no window where others could connect
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd, 4) == 0;
  umask(old);
  if (!ok) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One connection: a line naming the request file; the answer goes to its answer file.
void serve_connection(int listen_fd) {
  const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return;
  std::string line;
  char buf[512];
  for (int tries = 0; tries < 20 && line.find('\n') == std::string::npos && line.size() < 1024; ++tries) {
    pollfd p{c, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(c, buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(c);
  const size_t nl = line.find('\n');
  std::string answer_path, command;
  if (nl != std::string::npos && read_request(line.substr(0, nl), answer_path, command)) run(command, answer_path);
}

}  // namespace

// The first command, on Mono's receiver thread. Returns 0 when done, 1 when refused.
extern "C" __attribute__((visibility("default"))) int mlpd_attach_command(const char* command, const char* answer_path) {
  find_listener();
  return run(command ? command : "", answer_path ? answer_path : "");
}

// Mono's receiver ends once its client disconnects (accept() fails): see the top of this file.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_release() {
  find_listener();
  if (g_listen_fd >= 0 && is_listener(g_listen_fd)) shutdown(g_listen_fd, SHUT_RDWR);
}

// AppDomain.ProcessExit (the managed agent's handler): the control thread ends (the runtime's
// shutdown waits for every thread it knows).
extern "C" __attribute__((visibility("default"))) void mlpd_attach_exiting() {
  g_exiting.store(true);
  mlpd::hooks::stop_describer();
  mlpd_attach_release();
  // Here, not when the control thread ends: the runtime's exit need not wait for a background thread.
  if (!g_control_path.empty()) ::unlink(g_control_path.c_str());
}

// The control thread (a background managed thread of the managed agent): returns at the exit.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_serve() {
  find_listener();
  const int fd = open_control();
  while (!g_exiting.load()) {
    mlpd::hooks::serve_descriptions(50);
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) serve_connection(fd);
    }
  }
  if (fd >= 0) {
    ::close(fd);
    ::unlink(g_control_path.c_str());
  }
}
