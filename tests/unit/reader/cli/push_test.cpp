// mlpd push (reader/cli/cmd_push.cpp) driven in-process against an HTTP server on a loopback port
// standing for Pyroscope's ingest API: one POST per kind of profile the file holds, to URL/ingest with
// the series name, the file's time span and format=pprof; the pprof part gzipped; the token and the
// tenant as headers; a server's refusal, and the usage errors.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../../../reader/cli/commands.h"
#include "cli_run.h"
#include "event_gen.h"
#include "temp_dir.h"

using namespace mlpd;
using namespace mlpd::test;
using mlpd_test::contains;

#if MLPD_TEST_PUSH_CURL

namespace {

struct Request {
  std::string head;  // request line and headers
  std::string body;
};

// Answers every request with `status` and `answer`, one request per connection, until destroyed.
class FakeIngest {
 public:
  FakeIngest(int status, std::string answer) : status_(status), answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    REQUIRE(::listen(listen_fd_, 4) == 0);
    thread_ = std::thread([this] {
      for (int fd; (fd = ::accept(listen_fd_, nullptr, nullptr)) >= 0;) {
        serve(fd);
        ::close(fd);
      }
    });
  }
  ~FakeIngest() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  std::string url;

 private:
  void serve(int fd) {
    std::string in;
    char buf[65536];
    size_t head_end = std::string::npos;
    size_t want = 0;
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
      if (head_end == std::string::npos && (head_end = in.find("\r\n\r\n")) != std::string::npos) {
        const size_t cl = in.find("Content-Length: ");
        want = cl == std::string::npos ? 0 : std::strtoul(in.c_str() + cl + 16, nullptr, 10);
      }
      if (head_end != std::string::npos && in.size() >= head_end + 4 + want) break;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back({in.substr(0, head_end), in.substr(head_end + 4, want)});
    }
    const std::string out = "HTTP/1.1 " + std::to_string(status_) + " X\r\nContent-Length: " +
                            std::to_string(answer_.size()) + "\r\nConnection: close\r\n\r\n" + answer_;
    (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }

  int status_;
  std::string answer_;
  int listen_fd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Request> requests_;
};

Event ev(EventKind k, uint64_t t, uint64_t method = 0) {
  Event e;
  e.kind = k;
  e.time = t;
  e.method = method;
  return e;
}

// CPU samples (A;B x3) and calls (A [B]).
std::vector<uint8_t> file_bytes() {
  std::vector<Event> s;
  for (uint64_t m : {0x1000u, 0x2000u}) {
    Event j = ev(EventKind::method_jit, 1, m);
    j.ptr = m * 16;
    j.size = 0x100;
    j.name = m == 0x1000 ? "N:A ()" : "N:B ()";
    s.push_back(j);
  }
  for (int i = 0; i < 3; ++i) {
    Event h = ev(EventKind::sample_hit, 2'000'000'000ull + 1'000'000ull * static_cast<uint64_t>(i));
    h.ptr = 0x99;
    h.ips = {0x20010};
    h.frames = {0x2000, 0x1000};
    s.push_back(h);
  }
  std::vector<Event> calls = {ev(EventKind::method_enter, 1000, 0x1000), ev(EventKind::method_enter, 1100, 0x2000),
                              ev(EventKind::method_leave, 1400, 0x2000), ev(EventKind::method_leave, 2000, 0x1000)};
  return build_file({{0x99, 0, s}, {0x77, 0, calls}});
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("push: one POST per kind to URL/ingest, named by the labels, the pprof gzipped", "[cli][push]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  const std::string token = dir.write("token", {'s', '3', 'c', '\n'});
  FakeIngest server(200, "");
  const CliRun r = run_cli(cli::cmd_push, "push",
                           {"--label", "service_name=shop", "--label", "env=prod", "--token-file", token, "--tenant",
                            "team1", server.url + "/", path});
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  const std::vector<Request> reqs = server.requests();
  REQUIRE(reqs.size() == 2);  // cpu, then calls
  // The file's span in Unix seconds: startup_ms 1700000000000 is startup_ns 123456789012345; the
  // first event (time 1) is 123456.789... s before, the last (2.002 s) 123454.787... s before.
  const std::string query = "name=shop%7Bpid%3D4242%2Cenv%3Dprod%7D&from=1699876543&until=1699876545";
  for (const Request& q : reqs) {
    INFO(q.head);
    CHECK(q.head.rfind("POST /ingest?" + query + "&format=pprof&spyName=mlpd HTTP/1.1\r\n", 0) == 0);
    CHECK_THAT(q.head, contains("\r\nAuthorization: Bearer s3c\r\n"));
    CHECK_THAT(q.head, contains("\r\nX-Scope-OrgID: team1\r\n"));
    CHECK_THAT(q.head, contains("Content-Type: multipart/form-data; boundary="));
    CHECK_THAT(q.head, !contains("Expect: 100-continue"));
    // The profile part: gzip data (RFC 1952's magic) named as Pyroscope's clients name it.
    const size_t part = q.body.find("name=\"profile\"; filename=\"profile.pprof\"");
    REQUIRE(part != std::string::npos);
    const size_t data = q.body.find("\r\n\r\n", part);
    REQUIRE(data != std::string::npos);
    CHECK(static_cast<unsigned char>(q.body[data + 4]) == 0x1f);
    CHECK(static_cast<unsigned char>(q.body[data + 5]) == 0x8b);
    CHECK(count(q.body, "name=\"sample_type_config\"") == 1);
  }
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], contains(path + ": cpu: 3 samples, ") && contains(" bytes sent as shop{pid=4242,env=prod}"));
  CHECK_THAT(lines[1], contains(path + ": calls: ") && contains(" bytes sent as shop{pid=4242,env=prod}"));
}

TEST_CASE("push: the server's refusal stops the push with its answer on one line", "[cli][push]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  FakeIngest server(500, "boom\nat ingest");
  const CliRun r = run_cli(cli::cmd_push, "push", {server.url + "/ingest", path});
  CHECK(r.rc == 1);
  CHECK(server.requests().size() == 1);
  CHECK_THAT(r.err, contains("mlpd push: " + path + ": cpu profile to " + server.url +
                             "/ingest: the server answered 500: boom at ingest (0 profiles sent before; nothing more sent)"));
  CHECK(r.out.empty());
}

TEST_CASE("push: usage errors (URL, files, labels, timeout, token file)", "[cli][push]") {
  TempDir dir;
  const std::string path = dir.write("a.mlpd", file_bytes());
  const std::string empty_token = dir.write("empty", {'\n', 'x'});
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{}, "no URL given"},
      {{"http://h"}, "no FILE given"},
      {{"ftp://h", path}, "bad URL 'ftp://h': expected http://HOST[:PORT][/PATH] or https://..."},
      {{"http://h/x?y=1", path}, "(no query)"},
      {{"--label", "k", "http://h", path}, "bad --label 'k': expected K=V"},
      {{"--label", "1k=v", "http://h", path}, "the name must be letters, digits and '_'"},
      {{"--label", "k=a b", "http://h", path}, "the value must be printable"},
      {{"--timeout", "0", "http://h", path}, "bad --timeout '0': expected seconds from 1 to 3600"},
      {{"--token-file", empty_token, "http://h", path}, "holds no token (its first line is empty)"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    const CliRun r = run_cli(cli::cmd_push, "push", c.args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, contains(c.message));
  }
}

#else

TEST_CASE("push: built without libcurl, the command says it is not available", "[cli][push]") {
  const CliRun r = run_cli(cli::cmd_push, "push", {"http://h", "a.mlpd"});
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, contains("built without libcurl"));
}

#endif
