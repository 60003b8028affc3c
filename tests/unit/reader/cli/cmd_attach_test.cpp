// mlpd attach and mlpd detach (reader/cli/cmd_attach.cpp) driven in-process: the usage errors, the
// refusals made from what /proc says of the target before anything is sent (gone, neither Mono nor
// .NET, --attach=disable, not profiled), and a .NET target (a child with a library named
// libcoreclr.so loaded) attached through a stand-in runtime's diagnostics socket: the options sent
// with a relative output= made the caller's, and output= added when not given.
#include "mlpd_catch.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/attach_proc.h"
#include "../../../../reader/cli/commands.h"
#include "cli_run.h"
#include "mlpd/runtime/attach_protocol.h"
#include "temp_dir.h"

using namespace mlpd::cli;
using namespace mlpd::test;
using mlpd_test::contains;
namespace fs = std::filesystem;

namespace {

struct Proc {
  pid_t pid = -1;
  Proc(const std::string& exe, const std::string& argv0, std::vector<std::string> env) {
    std::vector<char*> e;
    for (std::string& s : env) e.push_back(s.data());
    e.push_back(nullptr);
    std::string a0 = argv0, a1 = "30";
    char* argv[] = {a0.data(), a1.data(), nullptr};
    pid = ::fork();
    if (pid == 0) {
      ::execve(exe.c_str(), argv, e.data());
      ::_exit(127);
    }
    REQUIRE(pid > 0);
    for (int i = 0; i < 200 && attach_proc::proc_words(pid, "cmdline") != std::vector<std::string>{argv0, "30"}; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its libraries mapped
  }
  ~Proc() {
    if (pid > 0) {  // never kill(-1, ...)
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

std::string sleep_exe() { return fs::exists("/bin/sleep") ? "/bin/sleep" : "/usr/bin/sleep"; }

// A shared library this process has loaded (zlib), to be copied under another name.
std::string some_library() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find('/');
    if (at != std::string::npos && line.find("libz.so") != std::string::npos) return line.substr(at);
  }
  return {};
}

// The runtime's diagnostics socket for `pid` in `dir`: one request kept, answered OK with `answer`.
struct FakeRuntime {
  std::string path, request;
  int fd = -1;
  std::thread thread;
  FakeRuntime(const TempDir& dir, pid_t pid, const std::string& answer) {
    const std::string stat = attach_proc::read_file("/proc/" + std::to_string(pid) + "/stat");
    std::string rest = stat.substr(stat.rfind(')') + 2);
    for (int field = 3; field < 22; ++field) rest = rest.substr(rest.find(' ') + 1);
    path = dir.file("dotnet-diagnostic-" + std::to_string(pid) + "-" + rest.substr(0, rest.find(' ')) + "-socket");
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    thread = std::thread([this, answer] {
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buf[65536];
      for (;;) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
        if (request.size() >= 16 &&
            request.size() >= static_cast<size_t>(static_cast<uint8_t>(request[14]) | static_cast<uint8_t>(request[15]) << 8))
          break;
      }
      const std::string key = mlpd::runtime::attach_protocol::kAnswerLine;
      const size_t at = request.find(key);
      if (at != std::string::npos)
        std::ofstream(request.substr(at + key.size(), request.find('\n', at) - at - key.size())) << answer;
      std::string reply("DOTNET_IPC_V1", 14);
      reply += std::string{24, 0, static_cast<char>(0xFF), 0, 0, 0, 0, 0, 0, 0};
      (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~FakeRuntime() {
    ::shutdown(fd, SHUT_RDWR);
    thread.join();
    ::close(fd);
    ::unlink(path.c_str());
  }
  // The options line of the request.
  std::string options() const {
    const std::string key = mlpd::runtime::attach_protocol::kOptionsLine;
    const size_t at = request.find(key);
    return at == std::string::npos ? std::string() : request.substr(at + key.size(), request.find('\n', at) - at - key.size());
  }
};

// The agent where `mlpd attach` looks for it first: MLPD_INSTALL_LIBDIR beside the executable, which
// the unit tests define as ../cmd_attach_test_lib (tests/unit/CMakeLists.txt). Removed at the end.
struct FakeAgentInstall {
  fs::path dir;
  FakeAgentInstall() {
    dir = fs::canonical("/proc/self/exe").parent_path() / ".." / "cmd_attach_test_lib";
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
    std::ofstream(dir / "libmlpd.so") << "not loaded by this test";
    fs::permissions(dir / "libmlpd.so", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                            fs::perms::others_read);
  }
  ~FakeAgentInstall() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("attach/detach: usage errors", "[cli][attach]") {
  struct Case {
    int (*cmd)(int, char**);
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {cmd_attach, {}, "give the process id first"},
      {cmd_attach, {"x12"}, "give the process id first"},
      {cmd_attach, {"0"}, "give the process id first"},
      {cmd_attach, {"12", "cpu", "extra"}, "unexpected 'extra' (OPTIONS is one word: a,b=c,...)"},
      {cmd_attach, {"--for", "soon", "12"}, "--for takes a number of seconds, not 'soon'"},
      {cmd_detach, {"12", "13"}, "give one process id"},
      {cmd_detach, {}, "give one process id"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    const CliRun r = run_cli(c.cmd, "attach", c.args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, contains(c.message));
  }
}

TEST_CASE("attach/detach: refused from /proc before anything is sent", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  TempDir dir;
  {
    Proc gone(sleep_exe(), "sleep", {});
    const pid_t pid = gone.pid;
    REQUIRE(pid > 0);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    gone.pid = -1;
    const CliRun r = run_cli(cmd_attach, "attach", {std::to_string(pid)});
    CHECK(r.rc == 1);
    CHECK(r.err == "mlpd: no process " + std::to_string(pid) + "\n");
  }
  Proc plain(sleep_exe(), "sleep", {});
  const CliRun neither = run_cli(cmd_attach, "attach", {std::to_string(plain.pid), "cpu"});
  CHECK(neither.rc == 1);
  CHECK(neither.err == "mlpd: process " + std::to_string(plain.pid) + " is neither a Mono nor a .NET (CoreCLR) process\n");

  const std::string mono = dir.file("mono-sgen");
  fs::copy_file(sleep_exe(), mono);
  fs::permissions(mono, fs::perms::owner_all);
  Proc disabled(mono, "mono-sgen", {"MONO_ENV_OPTIONS=--attach=disable"});
  const CliRun off = run_cli(cmd_attach, "attach", {std::to_string(disabled.pid)});
  CHECK(off.rc == 1);
  CHECK(off.err == "mlpd: process " + std::to_string(disabled.pid) + " runs with --attach=disable\n");
  const CliRun not_profiled = run_cli(cmd_detach, "detach", {std::to_string(disabled.pid)});
  CHECK(not_profiled.rc == 1);
  CHECK(not_profiled.err == "mlpd: process " + std::to_string(disabled.pid) + " is not being profiled\n");
}

TEST_CASE("attach: a .NET target gets the options with output= made the caller's", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  TempDir dir;
  const std::string lib = some_library();
  REQUIRE_FALSE(lib.empty());
  fs::copy_file(lib, dir.file("libcoreclr.so"));
  Proc dotnet(sleep_exe(), "sleep", {"LD_PRELOAD=" + dir.file("libcoreclr.so"), "TMPDIR=" + dir.path.string()});
  REQUIRE(attach_proc::read_file("/proc/" + std::to_string(dotnet.pid) + "/maps").find("/libcoreclr.so") !=
          std::string::npos);
  const std::string cwd = fs::current_path().string();

  const CliRun not_profiled = run_cli(cmd_detach, "detach", {std::to_string(dotnet.pid)});
  CHECK(not_profiled.rc == 1);
  CHECK(not_profiled.err == "mlpd: process " + std::to_string(dotnet.pid) + " is not being profiled\n");

  FakeAgentInstall agent;
  {
    FakeRuntime runtime(dir, dotnet.pid, "OK\nmlpd: profiling into " + cwd + "/run.mlpd\n");
    const CliRun r = run_cli(cmd_attach, "attach", {std::to_string(dotnet.pid), "cpu,output=run.mlpd"});
    CHECK(r.rc == 0);
    CHECK(r.out == "mlpd: profiling into " + cwd + "/run.mlpd\n");
    ::usleep(10000);
    CHECK(runtime.options() == "cpu,output=" + cwd + "/run.mlpd");
    CHECK_THAT(runtime.request, contains("l\0i\0b\0m\0l\0p\0d\0.\0s\0o\0"));  // the agent's path, UTF-16
  }
  {
    FakeRuntime runtime(dir, dotnet.pid, "OK\nmlpd: profiling\n");
    const CliRun r = run_cli(cmd_attach, "attach", {std::to_string(dotnet.pid), "alloc-sample,output=/abs/x.mlpd"});
    CHECK(r.rc == 0);
    ::usleep(10000);
    CHECK(runtime.options() == "alloc-sample,output=/abs/x.mlpd");
  }
  {
    FakeRuntime runtime(dir, dotnet.pid, "OK\nmlpd: profiling\n");
    const CliRun r = run_cli(cmd_attach, "attach", {std::to_string(dotnet.pid)});
    CHECK(r.rc == 0);
    ::usleep(10000);
    CHECK(runtime.options() == "output=" + cwd + "/mlpd.%p.%t.mlpd");
  }
}
