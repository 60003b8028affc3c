// The command port's client (reader/cli/port_client.cpp) through `mlpd send` (cmd_send.cpp), driven
// in-process against a server on a loopback port standing for the agent's (docs/command-port.md):
// the lines sent, the answers printed in order, the status of OK and ERR answers, a server that closes
// early or never answers, a refused connection, and the usage errors of the options.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "cli_run.h"

using namespace mlpd::test;
using mlpd_test::contains;

namespace {

// A one-connection server on 127.0.0.1 (a free port): `serve` gets the connection's fd; what the
// client sent is kept in `received`.
class FakeAgent {
 public:
  explicit FakeAgent(std::function<void(int fd, FakeAgent&)> serve) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = std::to_string(ntohs(a.sin_port));
    REQUIRE(::listen(listen_fd_, 1) == 0);
    thread_ = std::thread([this, serve] {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      serve(fd, *this);
      ::close(fd);
    });
  }
  ~FakeAgent() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }
  // Reads one line (without its newline); false at the end of the connection.
  bool read_line(int fd, std::string& line) {
    line.clear();
    char c;
    while (::recv(fd, &c, 1, 0) == 1) {
      received.push_back(c);
      if (c == '\n') return true;
      line.push_back(c);
    }
    return false;
  }
  static void send_text(int fd, const std::string& s) { (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

  std::string port;
  std::string received;

 private:
  int listen_fd_ = -1;
  std::thread thread_;
};

// Answers each line: "ERR unknown command" for "bad", else "OK " + the line.
void answer_all(int fd, FakeAgent& agent) {
  std::string line;
  while (agent.read_line(fd, line)) FakeAgent::send_text(fd, line == "bad" ? "ERR unknown command\r\n" : "OK " + line + "\n");
}

}  // namespace

TEST_CASE("send: one line per command, every answer printed in order, status 0 when all are OK", "[cli][port]") {
  std::string received;
  CliRun r;
  {
    FakeAgent agent(answer_all);
    r = run_cli(mlpd::cli::cmd_send, "send", {"--port", agent.port, "heapshot", "--", "pause now"});
    ::usleep(10000);
    received = agent.received;
  }
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(received == "heapshot\npause now\n");
  CHECK(r.out == "OK heapshot\nOK pause now\n");
}

TEST_CASE("send: an ERR answer (CRLF ended) is printed and makes the status 1", "[cli][port]") {
  FakeAgent agent(answer_all);
  const CliRun r = run_cli(mlpd::cli::cmd_send, "send", {"--host", "127.0.0.1", "--port", agent.port, "bad", "resume"});
  CHECK(r.rc == 1);
  CHECK(r.out == "ERR unknown command\nOK resume\n");
}

TEST_CASE("send: a server that closes before every answer came, or never answers", "[cli][port]") {
  {
    FakeAgent agent([](int fd, FakeAgent& a) {  // both lines read (a close with unread data resets), one answered
      std::string first, second;
      if (a.read_line(fd, first) && a.read_line(fd, second)) FakeAgent::send_text(fd, "OK " + first + "\n");
    });
    const CliRun r = run_cli(mlpd::cli::cmd_send, "send", {"--port", agent.port, "one", "two"});
    CHECK(r.rc == 1);
    CHECK(r.out == "OK one\n");
    CHECK_THAT(r.err, contains("mlpd send: 127.0.0.1:" + agent.port + " closed the connection after 1 of 2 answers"));
  }
  {
    std::atomic<bool> done{false};
    FakeAgent agent([&done](int, FakeAgent&) {
      while (!done) ::usleep(10000);
    });
    const CliRun r = run_cli(mlpd::cli::cmd_send, "send", {"--port", agent.port, "--timeout", "0.3", "heapshot"});
    done = true;
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, contains("mlpd send: no answer from 127.0.0.1:" + agent.port + " within 0.3 s"));
  }
}

TEST_CASE("send: a port nobody listens on is a connection error naming the address", "[cli][port]") {
  // A port just free: bound, then closed without listening.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const std::string port = std::to_string(ntohs(a.sin_port));
  ::close(fd);
  const CliRun r = run_cli(mlpd::cli::cmd_send, "send", {"--port", port, "--timeout", "5", "heapshot"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, contains("mlpd send: cannot connect to 127.0.0.1:" + port + ": "));
  const CliRun ipv6 = run_cli(mlpd::cli::cmd_send, "send", {"--host", "::1", "--port", port, "--timeout", "5", "x"});
  CHECK(ipv6.rc == 1);
  CHECK_THAT(ipv6.err, contains("cannot connect to [::1]:" + port + ": "));
}

TEST_CASE("send: usage errors of the options and commands", "[cli][port]") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"heapshot"}, "--port is required"},
      {{"--port", "1234"}, "no COMMAND given"},
      {{"--port", "0", "x"}, "--port needs a port number from 1 to 65535, not '0'"},
      {{"--port", "65536", "x"}, "not '65536'"},
      {{"--port", "+80", "x"}, "not '+80'"},
      {{"--port", "80", "--timeout", "0", "x"}, "--timeout needs a number of seconds (more than 0), not '0'"},
      {{"--port", "80", "--host", "", "x"}, "--host needs a host name or address"},
      {{"--port", "80", "a\nb"}, "a COMMAND cannot contain a newline"},
      {{"--port", "80", " \t"}, "a COMMAND cannot be blank"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    const CliRun r = run_cli(mlpd::cli::cmd_send, "send", c.args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, contains(c.message));
    CHECK(r.out.empty());
  }
}
