// Mono's attach entry points (runtime-hooks/src/mono/attach_entry.cpp), what runs without the managed
// agent and without a runtime: the first command and its answer file, Mono's listener ended
// (mlpd_attach_release), the control socket's requests (served from the runtime's directory only),
// parking (the wake signal, the park file, the finalizer callback that restarts the agent) and the
// exit. Each case runs in a forked child: these touch process-wide state (signal handlers, the
// entry's statics, sockets), with the runtime's directory a temporary one (attach_entry_seams.h).
#include "mlpd_catch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "attach_entry_seams.h"
#include "child_exit.h"
#include "emulated.h"
#include "temp_dir.h"


extern "C" int mlpd_attach_command(const char* command, const char* answer_path);
extern "C" void mlpd_attach_release();
extern "C" void mlpd_attach_set_restart(void (*fn)());
extern "C" void mlpd_attach_exiting();
extern "C" void mlpd_attach_serve();

namespace {

namespace seams = mlpd::mono::attach_seams;

// In the child: a failed expectation names its line on stderr and is the child's exit status.
#define EXPECT_CHILD(cond)                                                      \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "attach_entry_test:%d: failed: %s\n", __LINE__, #cond); \
      _exit(__LINE__ % 250 + 1); /* no destructors: a thread may still run */   \
    }                                                                           \
  } while (0)

// Runs `body` in a forked child and requires it to exit 0 (within a minute: a hung child is killed).
template <class F>
void in_child(F body) {
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int rc = body();
    mlpd::test::child_exit(rc);  // a coverage build writes its counts first
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t r = 0;
  while ((r = waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (r == 0) {
    kill(child, SIGKILL);  // our own child (child > 0 checked above)
    waitpid(child, &status, 0);
    FAIL("the child did not finish within 60 s");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool exists(const std::string& path) {
  struct stat st{};
  return lstat(path.c_str(), &st) == 0;
}

// A listening Unix socket at `path`, or -1.
int listen_at(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 4) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A blocking accept()'s errno on a listener that was shut down: EINVAL (Mono's receiver then ends).
int accept_errno(int fd) {
  const int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (c >= 0) {
    close(c);
    return 0;
  }
  return errno;
}

// Whether a client can connect to the Unix socket at `path`.
bool connects(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// Sends `line` to the Unix socket at `path`; false if it could not connect.
bool send_line(const std::string& path, const std::string& line) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  return ok;
}

// Waits (bounded, generously) for `cond`.
template <class C>
bool wait_for(C cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The fake Mono functions of parking.
std::atomic<int> g_notifies{0};
std::atomic<int> g_restarts{0};
void (*g_finalized_cb)(void*) = nullptr;
int g_finalized_sets = 0;
int g_handle_dummy = 0;

void* fake_create(void*) { return &g_handle_dummy; }
void fake_set_finalized(void* handle, void (*cb)(void*)) {
  if (handle == &g_handle_dummy) g_finalized_cb = cb;
  ++g_finalized_sets;
}
void fake_notify() { g_notifies.fetch_add(1); }
void fake_restart() { g_restarts.fetch_add(1); }

}  // namespace

TEST_CASE("mono attach entry: the first command is answered in the file it names, never an existing one",
          "[hooks][attach]") {
  mlpd::test::TempDir dir("mono_attach");
  in_child([&]() -> int {
    seams::use_runtime_dir(dir.path.string());
    const std::string a1 = dir.file("answer1");
    EXPECT_CHILD(mlpd_attach_command("frobnicate", a1.c_str()) == 1);
    EXPECT_CHILD(slurp(a1) == "ERR\nmlpd: unknown attach command\n");
    // Not profiled: detach is refused, with the reason.
    const std::string a2 = dir.file("answer2");
    EXPECT_CHILD(mlpd_attach_command("detach", a2.c_str()) == 1);
    EXPECT_CHILD(slurp(a2) == "ERR\nmlpd: this process is not being profiled\n");
    // An answer file that exists is left alone (O_EXCL: never through a file or link put there).
    const std::string a3 = dir.file("answer3");
    std::ofstream(a3) << "mine";
    EXPECT_CHILD(mlpd_attach_command("frobnicate", a3.c_str()) == 1);
    EXPECT_CHILD(slurp(a3) == "mine");
    // No answer file named: still run, nothing written.
    EXPECT_CHILD(mlpd_attach_command(nullptr, nullptr) == 1);
    const std::string a4 = dir.file("answer4");
    EXPECT_CHILD(mlpd_attach_command(("attach output=" + dir.file("out.mlpd")).c_str(), a4.c_str()) == 1);
    // attach in a process that is not Mono's: the agent refuses, as it says nothing in a process that is
    // not its runtime's (agent.cpp start_impl); the refusal is the answer.
    EXPECT_CHILD(slurp(a4) == "ERR\n\n");
    return 0;
  });
}

TEST_CASE("mono attach entry: release ends Mono's listener of this process only", "[hooks][attach]") {
  mlpd::test::TempDir dir("mono_attach");
  in_child([&]() -> int {
    seams::use_runtime_dir(dir.path.string());
    const std::string mono_path = dir.file(".mono-" + std::to_string(getpid())), other_path = dir.file(".mono-1");
    const int mono_fd = listen_at(mono_path);
    const int other_fd = listen_at(other_path);
    EXPECT_CHILD(mono_fd >= 0);
    EXPECT_CHILD(other_fd >= 0);
    mlpd_attach_release();
    EXPECT_CHILD(!connects(mono_path));  // shut down: nobody can connect any more ...
    EXPECT_CHILD(accept_errno(mono_fd) == EINVAL);  // ... and Mono's receiver's accept() fails: it ends
    EXPECT_CHILD(connects(other_path));  // another process's listener (or another socket) is left alone
    mlpd_attach_release();  // again: harmless
    close(mono_fd);
    close(other_fd);
    return 0;
  });
}

TEST_CASE("mono attach entry: the control socket serves requests from the runtime's directory, then parks",
          "[hooks][attach]") {
  mlpd::test::TempDir dir("mono_attach");
  mlpd::test::TempDir elsewhere("mono_attach_else");
  in_child([&]() -> int {
    const std::string d = dir.path.string();
    const std::string pid = std::to_string(getpid());
    const std::string control = d + "/.mlpd-" + pid, park_file = d + "/.mlpd-park-" + pid;
    seams::use_runtime_dir(d);
    seams::use_park_functions(fake_create, fake_set_finalized, fake_notify);
    mlpd_attach_set_restart(fake_restart);
    std::atomic<bool> served{false};
    std::thread control_thread([&] {
      mlpd_attach_serve();
      served.store(true);
    });
    EXPECT_CHILD(wait_for([&] { return exists(control); }));
    struct stat st{};
    EXPECT_CHILD(lstat(control.c_str(), &st) == 0);
    EXPECT_CHILD((st.st_mode & 077) == 0);  // made under umask 077: nobody else may connect

    // A request file outside the runtime's directory is not read (nor removed).
    const std::string outside = elsewhere.file(".mlpd-request-1");
    std::ofstream(outside) << "lib\n" << d << "/.mlpd-answer-0\nfrobnicate";
    EXPECT_CHILD(send_line(control, outside + "\n"));
    // One whose answer file is outside it: removed unread, no answer written.
    const std::string bad_answer = elsewhere.file("answer");
    const std::string req2 = d + "/.mlpd-request-2";
    std::ofstream(req2) << "lib\n" << bad_answer << "\nfrobnicate";
    EXPECT_CHILD(send_line(control, req2 + "\n"));
    EXPECT_CHILD(wait_for([&] { return !exists(req2); }));
    // A good one: run, answered, and (not profiling afterwards) the control thread parks and ends.
    const std::string req3 = d + "/.mlpd-request-3", answer3 = d + "/.mlpd-answer-3";
    std::ofstream(req3) << "/x/libmlpd.so\n" << answer3 << "\nfrobnicate";
    EXPECT_CHILD(send_line(control, req3 + "\n"));
    EXPECT_CHILD(wait_for([&] { return served.load(); }));
    control_thread.join();
    EXPECT_CHILD(slurp(answer3) == "ERR\nmlpd: unknown attach command\n");
    EXPECT_CHILD(!exists(req3));
    EXPECT_CHILD(exists(outside));
    EXPECT_CHILD(!exists(d + "/.mlpd-answer-0"));
    EXPECT_CHILD(!exists(bad_answer));
    EXPECT_CHILD(!exists(control));  // the socket is gone with the thread

    // Parked: the park file names the wake signal, whose handler is ours; the finalizer callback is set.
    const std::string text = slurp(park_file);
    EXPECT_CHILD(!text.empty() && text.back() == '\n');
    const int sig = std::atoi(text.c_str());
    EXPECT_CHILD(sig > SIGRTMIN + 2 && sig <= SIGRTMAX);
    EXPECT_CHILD(lstat(park_file.c_str(), &st) == 0 && (st.st_mode & 0777) == 0600);
    struct sigaction cur{};
    EXPECT_CHILD(sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN);
    EXPECT_CHILD(g_finalized_cb != nullptr);

    // A finalizer pass without the wake signal: nothing.
    g_finalized_cb(nullptr);
    EXPECT_CHILD(g_restarts.load() == 0);
    // `mlpd attach` sends the signal: the finalizer is woken, its next pass restarts the agent once.
    // Not under qemu-user (unit_tests.arm64): it keeps the highest real-time signals for itself, so the
    // guest's raise() of the one parking chose fails there (the handler is checked above).
    if (!mlpd::test::running_emulated()) {
      EXPECT_CHILD(raise(sig) == 0);
      EXPECT_CHILD(g_notifies.load() == 1);
      g_finalized_cb(nullptr);
      EXPECT_CHILD(g_restarts.load() == 1);
      g_finalized_cb(nullptr);
      EXPECT_CHILD(g_restarts.load() == 1);
    }

    // The process exits: what parking put in is taken out.
    mlpd_attach_exiting();
    EXPECT_CHILD(!exists(park_file));
    EXPECT_CHILD(sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler == SIG_DFL);
    EXPECT_CHILD(g_finalized_cb == nullptr);
    // Exiting: a control thread started now ends at once, and parks nothing.
    mlpd_attach_serve();
    EXPECT_CHILD(!exists(park_file));
    EXPECT_CHILD(!exists(control));
    return 0;
  });
}
