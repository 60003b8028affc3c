// `mlpd attach PID` into a .NET process (docs/attach.md, ".NET"): the runtime's diagnostics server
// thread calls InitializeForAttach with the trigger's request (attach_request.h); the agent starts late
// with its options and answers in the file the trigger named. Then ProfilerAttachComplete: the
// catch-up (modules, compiled methods, threads). While attached, a thread of ours ("mlpd-control")
// serves the control socket: `detach` writes the last data, closes the file, takes the agent out
// (agent::detach) and asks the runtime to detach the profiler (RequestProfilerDetach); the thread
// then ends. The library stays loaded (-z nodelete: the program's threads still hold thread-exit
// hooks of ours), and a later attach starts it again with the same runtime object.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "coreclr/attach_request.h"
#include "coreclr/clr_runtime.h"
#include "coreclr/profiler.h"
#include "coreclr/start.h"
#include "mlpd/agent/agent.h"

namespace mlpd::coreclr {

namespace {

std::atomic<int> g_listen_fd{-1};
constexpr int kDetachWaitMs = 5000;

void write_answer(const std::string& path, bool ok, const std::string& message) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = std::string(ok ? "OK\n" : "ERR\n") + message + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

bool write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The control socket: abstract (nothing on disk to plant or leave behind), reachable by this
// process's user and root only (SO_PEERCRED on every connection).
int open_control() {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = std::string(runtime::attach_protocol::kControlPrefix) + std::to_string(::getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One command per connection ("detach"); true when the agent was detached (the thread ends).
bool serve(int fd) {
  ucred peer{};
  socklen_t plen = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0 || (peer.uid != ::geteuid() && peer.uid != 0))
    return false;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 64) {
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line += c;
  }
  if (line != "detach") {
    write_all(fd, "ERR\nmlpd: unknown command '" + line.substr(0, 40) + "' (this agent takes: detach)\n");
    return false;
  }
  std::string message;
  bool ok = agent::detach(message);
  if (ok) {
    // No more commands: the socket goes before the answer, so that an attach right after this detach
    // opens its own.
    ::close(g_listen_fd.exchange(-1));
    std::string error;
    ClrRuntime* r = ClrRuntime::instance();
    if (!r || !r->request_detach(error)) {
      // The file is closed and nothing of ours runs but this thread; the runtime keeps the profiler
      // loaded with every callback returning at once.
      message += "\nmlpd: " + (error.empty() ? std::string("no runtime") : error) + "; the agent stays loaded, idle";
    } else {
      // The runtime lets go once no thread is inside a callback of ours (it checks after the time
      // it was told to expect, ClrRuntime::request_detach's, then every few minutes): waited for,
      // bounded, so that `mlpd detach` returning means the process can be attached again.
      for (int waited = 0; initialized() && waited < kDetachWaitMs; waited += 10) ::usleep(10000);
      if (initialized()) message += "\nmlpd: the runtime has not finished the detach yet (a thread still in a callback)";
    }
  }
  write_all(fd, std::string(ok ? "OK\n" : "ERR\n") + message + "\n");
  return ok;
}

void* control_main(void*) {
  const int listen_fd = g_listen_fd.load();
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;
    }
    const bool detached = serve(fd);  // closed the listening socket
    ::close(fd);
    if (detached) return nullptr;
  }
  ::close(g_listen_fd.exchange(-1));
  return nullptr;
}

bool start_control(std::string& error) {
  if (g_listen_fd.load() >= 0) return true;  // still serving (an attach right after a detach)
  const int fd = open_control();
  if (fd < 0) return error = std::string("cannot open the control socket: ") + std::strerror(errno), false;
  g_listen_fd.store(fd);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Created with every signal blocked (the thread inherits the mask): the program's signals are
  // never delivered to it, not even before it runs.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  const int rc = pthread_create(&t, &attr, control_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    ::close(fd);
    g_listen_fd.store(-1);
    return error = std::string("cannot start the control thread: ") + std::strerror(rc), false;
  }
  pthread_setname_np(t, "mlpd-control");
  return true;
}

}  // namespace

bool attach_agent(ProfilerInfo* info, const RuntimeInfo& about, const void* data, UINT size) {
  AttachRequest request;
  std::string error;
  if (!parse_attach_request(data, size, request, error)) {
    const std::string line = "mlpd: " + error + "; not attaching\n";
    (void)!::write(2, line.data(), line.size());
    return false;
  }
  ClrRuntime* runtime = runtime_for(info, about);
  if (!runtime) {
    write_answer(request.answer, false, "mlpd: out of memory");
    return false;
  }
  std::string message;
  bool ok = agent::start_attached(request.options, *runtime, message);
  if (ok && !start_control(error)) {
    std::string ignored;
    agent::detach(ignored);
    message = "mlpd: " + error + "; not attaching";
    ok = false;
  }
  write_answer(request.answer, ok, message);
  return ok;
}

void attach_complete() {
  if (ClrRuntime* r = ClrRuntime::instance(); r && agent::profiling()) r->catch_up();
}

}  // namespace mlpd::coreclr
