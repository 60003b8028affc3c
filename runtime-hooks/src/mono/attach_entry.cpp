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
// cannot start its listener again (its `started` flag is never cleared: a second SIGQUIT prints a
// thread dump instead), so later commands (detach, attach again) come through our own socket,
// /tmp/mono-USER/.mlpd-PID (0600, in the runtime's 0700 directory), served by the control thread,
// which also describes the methods the samples name (late_describer.h).
//
// The control thread serves while profiling runs. Once detached (or refused) it parks the agent and
// ends: socket removed, no thread of ours left. Parked, two things of ours stay so that `mlpd attach`
// can wake it: a handler on a free real-time signal (named in /tmp/mono-USER/.mlpd-park-PID, 0600)
// that only sets a flag and wakes the runtime's finalizer thread (mono_gc_finalize_notify, a
// sem_post, as Mono's own SIGQUIT handler does), and a gc_finalized callback on a profiler handle of
// ours, raised on that thread after each finalizer pass, which returns at once unless the flag is set;
// then it calls the managed agent back (MlpdAttach.StartControl: a new mlpd-control thread), whose
// start takes both out again before it opens the socket.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <dlfcn.h>

#include "mlpd/agent/agent.h"
#include "attach_entry_seams.h"
#include "mlpd/hooks/late_describer.h"
#include "mono/mono_runtime.h"

namespace {

std::string g_dir;           // the runtime's directory: /tmp/mono-USER
std::string g_socket_path;   // Mono's listener: DIR/.mono-PID
std::string g_control_path;  // ours: DIR/.mlpd-PID
int g_listen_fd = -1;        // Mono's listening socket
std::string g_park_path;     // ours while parked: DIR/.mlpd-park-PID, the wake signal's number
std::atomic<bool> g_exiting{false};
bool g_found = false;

// Parking (top of this file). g_restart: the managed agent's StartControl (a new control thread).
using RestartFn = void (*)();
RestartFn g_restart = nullptr;
std::atomic<bool> g_parked{false};
std::atomic<bool> g_wake{false};
int g_park_signal = 0;
void* g_park_handle = nullptr;  // our profiler handle for the gc_finalized callback (created once)
using SetFinalizedFn = void (*)(void*, void (*)(void*));
SetFinalizedFn g_set_finalized = nullptr;
void (*g_finalize_notify)() = nullptr;

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

std::string g_dir_for_tests;  // attach_seams::use_runtime_dir (empty: the runtime's)

void find_listener() {
  if (g_found) return;
  g_found = true;
  if (!g_dir_for_tests.empty()) {
    g_dir = g_dir_for_tests;
  } else {
    passwd pw{};
    passwd* found = nullptr;
    char buf[1024];
    if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) != 0 || !found) return;
    g_dir = std::string("/tmp/mono-") + found->pw_name;
  }
  g_socket_path = g_dir + "/.mono-" + std::to_string(getpid());
  g_control_path = g_dir + "/.mlpd-" + std::to_string(getpid());
  g_park_path = g_dir + "/.mlpd-park-" + std::to_string(getpid());
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
    ok = mlpd::agent::start_attached(c.size() > 7 ? std::string_view(c).substr(7) : std::string_view(),
                                     mlpd::mono::runtime(), message);
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

// `ino`: the socket file's inode (only that file is removed when the thread ends).
int open_control(ino_t& ino) {
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
  struct stat st{};
  if (!ok || lstat(g_control_path.c_str(), &st) != 0) {
    ::close(fd);
    return -1;
  }
  ino = st.st_ino;
  return fd;
}

// One connection: a line naming the request file; the answer goes to its answer file.
// Returns whether a command was run.
bool serve_connection(int listen_fd) {
  const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return false;
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
  if (nl == std::string::npos || !read_request(line.substr(0, nl), answer_path, command)) return false;
  run(command, answer_path);
  return true;
}

// Parked: the wake signal's handler. Async-signal-safe: two atomic stores and a sem_post.
void on_park_signal(int) {
  const int saved = errno;
  if (g_parked.load(std::memory_order_acquire) && g_finalize_notify) {
    g_wake.store(true, std::memory_order_release);
    g_finalize_notify();
  }
  errno = saved;
}

// Parked: after each finalizer pass, on the runtime's finalizer thread (a managed thread, so the
// managed agent can be called back and start a thread).
void on_finalized(void*) {
  if (!g_wake.exchange(false, std::memory_order_acq_rel)) return;
  if (!g_parked.exchange(false, std::memory_order_acq_rel) || g_exiting.load()) return;
  if (g_restart) g_restart();
}

// The wake signal: the highest real-time signal nobody handles (the runtime takes its own from the
// lowest; the late sampler, stopped by now, looks the same way and gets it back at unpark).
int free_signal() {
  for (int s = SIGRTMAX; s > SIGRTMIN + 2; --s) {
    struct sigaction cur{};
    if (sigaction(s, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) return s;
  }
  return 0;
}

// Takes out what parking put in: the callback, the signal handler (if still ours), the park file.
void unpark() {
  g_parked.store(false, std::memory_order_release);
  if (g_park_handle && g_set_finalized) g_set_finalized(g_park_handle, nullptr);
  if (g_park_signal) {
    struct sigaction cur{};
    if (sigaction(g_park_signal, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == &on_park_signal) {
      struct sigaction dfl{};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(g_park_signal, &dfl, nullptr);
    }
    g_park_signal = 0;
  }
  if (!g_park_path.empty()) ::unlink(g_park_path.c_str());
}

// Detached (or refused): what lets `mlpd attach` wake us, with no thread of ours left. Without it
// (no free signal, no callback to the managed agent) nothing is left and the process cannot be
// attached again; `mlpd attach` then says so.
void park() {
  if (!g_restart || g_exiting.load() || g_park_path.empty()) return;
  if (!g_park_handle) {
    using CreateFn = void* (*)(void*);
    auto create = reinterpret_cast<CreateFn>(dlsym(RTLD_DEFAULT, "mono_profiler_create"));
    g_set_finalized = reinterpret_cast<SetFinalizedFn>(dlsym(RTLD_DEFAULT, "mono_profiler_set_gc_finalized_callback"));
    g_finalize_notify = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "mono_gc_finalize_notify"));
    if (!create || !g_set_finalized || !g_finalize_notify) return;
    g_park_handle = create(nullptr);
    if (!g_park_handle) return;
  }
  const int sig = free_signal();
  if (!sig) return;
  struct sigaction sa{};
  sa.sa_handler = on_park_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, nullptr) != 0) return;
  g_park_signal = sig;
  g_set_finalized(g_park_handle, on_finalized);
  g_parked.store(true, std::memory_order_release);
  ::unlink(g_park_path.c_str());
  const int fd = ::open(g_park_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    unpark();
    return;
  }
  const std::string text = std::to_string(sig) + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) unpark();
}

}  // namespace

void mlpd::mono::attach_seams::use_runtime_dir(const std::string& dir) {
  g_dir_for_tests = dir;
  g_found = false;
  g_listen_fd = -1;
}

void mlpd::mono::attach_seams::use_park_functions(void* (*create)(void*), void (*set_finalized)(void*, void (*)(void*)),
                                                  void (*notify)()) {
  g_set_finalized = set_finalized;
  g_finalize_notify = notify;
  g_park_handle = create(nullptr);
}

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

// The managed agent's StartControl: called (on the finalizer thread) when a parked agent is woken.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_set_restart(RestartFn fn) { g_restart = fn; }

// AppDomain.ProcessExit (the managed agent's handler): the control thread ends (the runtime's
// shutdown waits for every thread it knows); a parked agent is taken out.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_exiting() {
  g_exiting.store(true);
  mlpd::hooks::stop_describer();
  mlpd_attach_release();
  unpark();
  // Here, not when the control thread ends: the runtime's exit need not wait for a background thread.
  if (!g_control_path.empty()) ::unlink(g_control_path.c_str());
}

// The control thread (a background managed thread of the managed agent): serves while profiling
// runs, then parks the agent and returns (top of this file); returns at the exit too.
extern "C" __attribute__((visibility("default"))) void mlpd_attach_serve() {
  find_listener();
  unpark();
  ino_t ino = 0;
  const int fd = open_control(ino);
  // Started by a wake (or after a refused first attach): the command comes next; if none comes
  // within kCommandWaitMs (the caller died), parked again.
  constexpr int kCommandWaitMs = 10000;
  int idle_ms = 0;
  while (!g_exiting.load()) {
    const bool on = mlpd::agent::profiling();
    if (!on && (idle_ms >= kCommandWaitMs || fd < 0)) break;
    if (on) mlpd::hooks::serve_descriptions(50);
    if (fd < 0) continue;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, on ? 0 : 50) > 0 && serve_connection(fd)) {
      if (!mlpd::agent::profiling()) break;  // detached, or the attach was refused
      idle_ms = 0;
    } else if (!on) {
      idle_ms += 50;
    }
  }
  // Parked first, then the socket closed: a caller that finds the socket gone finds the park file.
  // A caller whose connection was queued and never served sees its request unread and tries again
  // (cmd_attach.cpp); a wake may already have started the next control thread, whose socket is
  // left alone.
  park();
  if (fd >= 0) {
    struct stat now{};
    const bool same = lstat(g_control_path.c_str(), &now) == 0 && now.st_ino == ino;
    ::close(fd);
    if (same) ::unlink(g_control_path.c_str());
  }
}
