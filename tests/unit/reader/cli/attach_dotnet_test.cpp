// Attaching to a .NET process (reader/cli/attach_dotnet.cpp) against a stand-in runtime: a child
// process whose TMPDIR holds a diagnostics socket this test serves (the runtime's IPC, "DOTNET_IPC_V1",
// profiler command set, AttachProfiler); the request decoded field by field, the agent's answer file
// written where the request says, the reply's HRESULT; and detaching through the agent's abstract
// control socket (kControlPrefix + pid), which must be the process's own.
#include "mlpd_catch.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/attach_dotnet.h"
#include "../../../../reader/cli/attach_proc.h"
#include "cli_run.h"
#include "mlpd/runtime/attach_protocol.h"
#include "temp_dir.h"

using namespace mlpd::cli;
using namespace mlpd::test;
using mlpd_test::contains;
namespace protocol = mlpd::runtime::attach_protocol;

namespace {

// A child (sleep) with the given environment, killed and reaped when it goes.
struct Sleeper {
  pid_t pid = -1;
  explicit Sleeper(std::vector<std::string> env) {
    const char* exe = std::filesystem::exists("/bin/sleep") ? "/bin/sleep" : "/usr/bin/sleep";
    std::vector<char*> e;
    for (std::string& s : env) e.push_back(s.data());
    e.push_back(nullptr);
    char a0[] = "sleep", a1[] = "30";
    char* argv[] = {a0, a1, nullptr};
    pid = ::fork();
    if (pid == 0) {
      ::execve(exe, argv, e.data());
      ::_exit(127);
    }
    REQUIRE(pid > 0);
    for (int i = 0; i < 200 && attach_proc::proc_words(pid, "cmdline") != std::vector<std::string>{"sleep", "30"}; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Sleeper() {
    if (pid > 0) {  // never kill(-1, ...): every process of the user
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

uint32_t u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(s[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

// The message's size field (bytes 14-15, little-endian).
size_t size_of(const std::string& msg) {
  return static_cast<size_t>(static_cast<uint8_t>(msg[14]) | static_cast<uint8_t>(msg[15]) << 8);
}

// The runtime's end: one connection on `path`; the request kept; `answer` written to the answer file
// the request names (when not empty); a reply with `hresult` (an error reply when `id` is 0xFF).
class FakeRuntime {
 public:
  FakeRuntime(const std::string& path, std::string answer, int32_t hresult, uint8_t id = 0) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 1) == 0);
    thread_ = std::thread([this, answer, hresult, id] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[65536];
      while (request.size() < 20 || request.size() < size_of(request)) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      const size_t at = request.find(protocol::kAnswerLine);
      if (!answer.empty() && at != std::string::npos) {
        const size_t from = at + std::strlen(protocol::kAnswerLine);
        std::ofstream(request.substr(from, request.find('\n', from) - from)) << answer;
      }
      std::string reply("DOTNET_IPC_V1", 14);
      reply += std::string{24, 0, static_cast<char>(0xFF), static_cast<char>(id), 0, 0};
      for (int i = 0; i < 4; ++i) reply += static_cast<char>(static_cast<uint32_t>(hresult) >> (8 * i));
      (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~FakeRuntime() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  std::string request;

 private:
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
};

std::string socket_path(const TempDir& dir, pid_t pid) {
  const std::string stat = attach_proc::read_file("/proc/" + std::to_string(pid) + "/stat");
  std::string rest = stat.substr(stat.rfind(')') + 2);
  for (int field = 3; field < 22; ++field) rest = rest.substr(rest.find(' ') + 1);
  return dir.file("dotnet-diagnostic-" + std::to_string(pid) + "-" + rest.substr(0, rest.find(' ')) + "-socket");
}

}  // namespace

TEST_CASE("attach_dotnet: the AttachProfiler request through the diagnostics socket, the agent's answer", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  TempDir dir;
  Sleeper target({"TMPDIR=" + dir.path.string() + "/"});
  REQUIRE(target.pid > 0);
  CHECK_FALSE(attach_dotnet::is_coreclr(target.pid));
  std::string why;
  CHECK(attach_dotnet::find_socket(target.pid, ::getuid(), why).empty());
  CHECK_THAT(why, contains("has no .NET diagnostics socket in " + dir.path.string()));

  const std::string path = socket_path(dir, target.pid);
  std::string request, answer;
  CliRun r;
  {
    FakeRuntime runtime(path, "OK\nmlpd: profiling, writing /x/a.mlpd\n", 0);
    CHECK(attach_dotnet::find_socket(target.pid, ::getuid(), why) == path);
    r = run_cli([&](int, char**) { return attach_dotnet::attach(target.pid, ::getuid(), "/lib/libmlpd.so", "cpu,output=/x/a.mlpd", &answer); },
                "attach", {});
    ::usleep(10000);
    request = runtime.request;
  }
  CHECK(r.rc == 0);
  CHECK(r.out == "mlpd: profiling, writing /x/a.mlpd\n");
  CHECK(answer == "mlpd: profiling, writing /x/a.mlpd");
  // The request: header (magic, size, profiler set 3, AttachProfiler 1), timeout, CLSID, the library
  // in UTF-16 with its NUL, then the client data: where to answer, and the options.
  REQUIRE(request.size() > 40);
  CHECK(request.compare(0, 14, std::string("DOTNET_IPC_V1", 14)) == 0);
  CHECK(size_of(request) == request.size());
  CHECK(static_cast<uint8_t>(request[16]) == 3);
  CHECK(static_cast<uint8_t>(request[17]) == 1);
  CHECK(u32(request, 20) == 10000);
  CHECK(static_cast<uint8_t>(request[24]) == 0x9B);  // {9F52A29B-...}: the first field little-endian
  const std::string lib = "/lib/libmlpd.so";
  CHECK(u32(request, 40) == lib.size() + 1);
  for (size_t i = 0; i < lib.size(); ++i) CHECK(request[44 + 2 * i] == lib[i]);
  const size_t data_at = 44 + 2 * (lib.size() + 1);
  const std::string data = request.substr(data_at + 4);
  CHECK(u32(request, data_at) == data.size());
  CHECK(data.rfind(std::string(protocol::kAnswerLine) + dir.path.string() + "/mlpd-attach-", 0) == 0);
  CHECK_THAT(data, contains("/answer\n" + std::string(protocol::kOptionsLine) + "cpu,output=/x/a.mlpd\n"));
  // The answer directory is gone again.
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    CHECK(e.path().filename().string().rfind("mlpd-attach-", 0) != 0);
}

TEST_CASE("attach_dotnet: a refusal's HRESULT named, a file the process turned off diagnostics for", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  TempDir dir;
  Sleeper target({"TMPDIR=" + dir.path.string()});
  REQUIRE(target.pid > 0);
  {
    FakeRuntime runtime(socket_path(dir, target.pid), "", static_cast<int32_t>(0x8013136Au));
    const CliRun r = run_cli([&](int, char**) { return attach_dotnet::attach(target.pid, ::getuid(), "/lib/libmlpd.so", "cpu", nullptr); },
                             "attach", {});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, contains("mlpd: the runtime refused the profiler (0x8013136a: another profiler is loaded in the process)"));
  }
  {  // An error reply is a refusal whatever its code says.
    FakeRuntime runtime(socket_path(dir, target.pid), "", 0, 0xFF);
    const CliRun r = run_cli([&](int, char**) { return attach_dotnet::attach(target.pid, ::getuid(), "/lib/libmlpd.so", "cpu", nullptr); },
                             "attach", {});
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, contains("mlpd: the runtime refused the profiler (0x80004005)"));
  }
  {
    FakeRuntime runtime(socket_path(dir, target.pid), "ERR\nmlpd: cannot open /x/a.mlpd\n", 0);
    const CliRun r = run_cli([&](int, char**) { return attach_dotnet::attach(target.pid, ::getuid(), "/lib/libmlpd.so", "cpu", nullptr); },
                             "attach", {});
    CHECK(r.rc == 1);
    CHECK(r.err == "mlpd: cannot open /x/a.mlpd\n");
  }
  Sleeper off({"TMPDIR=" + dir.path.string(), "DOTNET_EnableDiagnostics=0"});
  std::string why;
  CHECK(attach_dotnet::find_socket(off.pid, ::getuid(), why).empty());
  CHECK_THAT(why, contains("runs with EnableDiagnostics=0"));
}

TEST_CASE("attach_dotnet: detach through the agent's control socket, only the process's own", "[cli][attach]") {
  if (running_emulated()) {
    WARN("under qemu-user /proc shows qemu for each process: not tried");
    return;
  }
  // This process stands for the profiled one: the control socket is ours.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = std::string(protocol::kControlPrefix) + std::to_string(::getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  std::string got;
  std::thread agent([&] {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    char buf[64];
    const ssize_t n = ::recv(c, buf, sizeof buf, 0);
    if (n > 0) got.assign(buf, static_cast<size_t>(n));
    const std::string reply = "OK\nmlpd: detached; wrote /x/a.mlpd\n";
    (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(c);
  });
  std::string answer;
  const CliRun r = run_cli([&](int, char**) { return attach_dotnet::detach(::getpid(), &answer); }, "detach", {});
  agent.join();
  ::close(fd);
  CHECK(r.rc == 0);
  CHECK(got == "detach\n");
  CHECK(r.out == "mlpd: detached; wrote /x/a.mlpd\n");
  CHECK(answer == "mlpd: detached; wrote /x/a.mlpd");

  // No agent: the message says so.
  Sleeper other({});
  const CliRun none = run_cli([&](int, char**) { return attach_dotnet::detach(other.pid, nullptr); }, "detach", {});
  CHECK(none.rc == 1);
  CHECK_THAT(none.err, contains("process " + std::to_string(other.pid) + " has no attached mlpd agent to detach"));
}
