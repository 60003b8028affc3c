// CoreCLR's attach entry (runtime-hooks/src/coreclr/attach_entry.cpp) against a stand-in runtime (a
// fake ICorProfilerInfo12): InitializeForAttach's request parsed, the agent started late, its answer
// file written (OK or ERR and the agent's lines, never over a file that exists), the control socket
// served (an unknown command answered, `detach` taking the agent out and asking the runtime to let
// go, a runtime that refuses said), ProfilerAttachComplete's catch-up, and attaching again. The
// attach starts the whole agent (process-wide handlers, the one ClrRuntime of the process) and a
// control thread, so each case runs in a child process (agent/child_run.h); the detach is asked the
// way `mlpd detach` asks (reader/cli/attach_dotnet.cpp), and the files written are read back.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../../../../reader/cli/attach_dotnet.h"
#include "agent/child_run.h"
#include "coreclr/profiler.h"
#include "coreclr/start.h"
#include "mlpd/agent/agent.h"
#include "mlpd/runtime/attach_protocol.h"
#include "mlpd_catch.h"
#include "temp_dir.h"

using namespace mlpd;
using namespace mlpd::coreclr;
using mlpd::test::ChildResult;
using mlpd::test::Profile;
using mlpd::test::read_profile;
using mlpd::test::run_child;
namespace protocol = mlpd::runtime::attach_protocol;

namespace {

// The stand-in runtime: what the agent asked of it.
std::atomic<int> g_masks{0}, g_detach_requests{0}, g_enumerations{0};
std::atomic<DWORD> g_last_low{0};
HRESULT g_detach_hr = kS_OK;

HRESULT info_set_mask2(ProfilerInfo*, DWORD low, DWORD) {
  g_masks.fetch_add(1);
  g_last_low.store(low);
  return kS_OK;
}
HRESULT info_request_detach(ProfilerInfo*, DWORD expected_ms) {
  g_detach_requests.fetch_add(1);
  return expected_ms > 0 ? g_detach_hr : kE_FAIL;
}
HRESULT info_enum(ProfilerInfo*, void**) {  // nothing loaded, compiled or running to catch up with
  g_enumerations.fetch_add(1);
  return kE_FAIL;
}

InfoTable12 make_info() {
  InfoTable12 t{};
  t.SetEventMask2 = &info_set_mask2;
  t.RequestProfilerDetach = &info_request_detach;
  t.EnumModules = &info_enum;
  t.EnumJITedFunctions2 = &info_enum;
  t.EnumThreads = &info_enum;
  return t;
}
const InfoTable12 g_table = make_info();
ProfilerInfo g_info{&g_table};

RuntimeInfo about() {
  RuntimeInfo r;
  r.major = 10;
  r.info_level = 12;
  r.version = "10.0.0-fake";
  return r;
}

std::string request(const std::string& answer, const std::string& options) {
  return std::string(protocol::kAnswerLine) + answer + "\n" + protocol::kOptionsLine + options + "\n";
}
bool attach(const std::string& data) {
  return attach_agent(&g_info, about(), data.data(), static_cast<UINT>(data.size()));
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void say_line(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDERR_FILENO, l.data(), l.size());
}

// One command to this process's control socket; its answer (empty: no connection).
std::string ask_control(const std::string& line) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = std::string(protocol::kControlPrefix) + std::to_string(::getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  std::string text;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0 &&
      ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
    char buf[512];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  ::close(fd);
  return text;
}

// The control socket's name taken by someone else (here: this process, before the attach).
int take_control_name() {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = std::string(protocol::kControlPrefix) + std::to_string(::getpid());
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE("coreclr attach entry: attach, answer, control socket, detach, attach again", "[coreclr][attach]") {
  test::TempDir dir("mlpd_clr_attach");
  const std::string a = dir.file("a.mlpd"), b = dir.file("b.mlpd");
  const ChildResult c = run_child([&] {
    // `mlpd detach`'s lines go to stdout: not the test's.
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ::dup2(null, STDOUT_FILENO);
    // Not a request: one line on stderr, nothing started, no answer to write.
    const char junk[] = "answer=relative/path\noptions=\n";
    if (attach_agent(&g_info, about(), junk, sizeof junk - 1) || agent::profiling()) return 10;
    // Refused by the runtime after an attach (.NET gives an attached profiler no enter/leave hooks):
    // the answer says so, and the process can be attached again.
    if (attach(request(dir.file("answer-refused"), "output=" + a + ",calls"))) return 11;
    if (std::filesystem::exists(a)) return 12;
    // The control socket's name is taken: the agent is taken out again, the answer says why.
    const int squatter = take_control_name();
    if (squatter < 0) return 13;
    const bool squatted = attach(request(dir.file("answer-squatted"), "output=" + a));
    ::close(squatter);
    if (squatted || agent::profiling()) return 14;
    // Attached.
    if (!attach(request(dir.file("answer-1"), "output=" + a)) || !agent::profiling()) return 15;
    if (g_masks.load() == 0) return 16;  // the runtime was given the event mask
    attach_complete();  // ProfilerAttachComplete: the catch-up asks what runs already
    if (g_enumerations.load() != 3) return 17;
    // An answer file that exists is never written over.
    { std::ofstream(dir.file("answer-taken")) << "mine\n"; }
    if (attach(request(dir.file("answer-taken"), "output=" + b))) return 18;  // profiled already
    // The control socket: a command it does not know, then `detach`, as `mlpd detach` asks it.
    say_line("control: " + ask_control("status\n"));
    std::string answer;
    const int rc = cli::attach_dotnet::detach(::getpid(), &answer);
    say_line("detach " + std::to_string(rc) + ": " + answer);
    if (rc != 0 || agent::profiling() || g_detach_requests.load() != 1) return 19;
    // The socket went with the agent.
    answer.clear();
    if (cli::attach_dotnet::detach(::getpid(), &answer) != 1) return 20;
    // Attached again (the same runtime object); this time the runtime refuses to let go.
    if (!attach(request(dir.file("answer-2"), "output=" + b)) || !agent::profiling()) return 21;
    g_detach_hr = kE_FAIL;
    answer.clear();
    const int rc2 = cli::attach_dotnet::detach(::getpid(), &answer);
    say_line("detach " + std::to_string(rc2) + ": " + answer);
    if (rc2 != 0 || agent::profiling() || g_detach_requests.load() != 2) return 22;
    if ((g_last_low.load()) != 0) return 23;  // every callback off: the agent stays loaded, idle
    return 0;
  });
  INFO(c.describe() << "\n" << c.err);
  REQUIRE(c.exited(0));
  const std::vector<std::string> lines = c.err_lines();
  REQUIRE(lines.size() == 7);
  CHECK_THAT(lines[0], mlpd_test::contains("answer path is not absolute"));
  CHECK_THAT(lines[0], mlpd_test::contains("; not attaching"));
  CHECK(lines[1] == "control: ERR");
  CHECK(lines[2] == "mlpd: unknown command 'status' (this agent takes: detach)");
  CHECK(lines[3] == "detach 0: mlpd: detached; wrote " + a);
  CHECK_THAT(lines[4], mlpd_test::contains("has no attached mlpd agent to detach"));  // `mlpd detach`'s line
  CHECK(lines[5] == "detach 0: mlpd: detached; wrote " + b);
  CHECK(lines[6] == "mlpd: the runtime refused the detach (0x80004005); the agent stays loaded, idle");

  CHECK_THAT(slurp(dir.file("answer-refused")), mlpd_test::contains("ERR\n"));
  CHECK_THAT(slurp(dir.file("answer-refused")), mlpd_test::contains("calls (.NET gives a profiler attached"));
  const std::string squatted = slurp(dir.file("answer-squatted"));
  CHECK(squatted.rfind("ERR\nmlpd: cannot open the control socket: ", 0) == 0);
  CHECK_THAT(squatted, mlpd_test::contains("; not attaching\n"));
  CHECK(slurp(dir.file("answer-1")) == "OK\nmlpd: profiling into " + a + "\n");
  CHECK(slurp(dir.file("answer-taken")) == "mine\n");
  CHECK(slurp(dir.file("answer-2")) == "OK\nmlpd: profiling into " + b + "\n");

  for (const std::string& f : {a, b}) {
    INFO(f);
    const Profile p = read_profile(f);
    for (const std::string& pr : p.problems) INFO(pr);
    REQUIRE(p.clean());
    CHECK(p.header.pid == c.pid);
    // The runtime's one domain, described at install (and, after an earlier session, once more in the
    // metadata that session left to seed the file).
    CHECK(p.count(EventKind::domain_load) >= 1);
  }
}
