// The metrics endpoint without a runtime: Prometheus' text forms (PromText), the HTTP request reader
// (examine_request) and the server on real loopback sockets driven by a poll loop in the test.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mlpd/agent/metrics_server.h"
#include "mlpd/agent/prometheus_text.h"

using namespace mlpd::agent;

TEST_CASE("prometheus text: values, escapes, families", "[metrics]") {
  CHECK(prom_double(0.5) == "0.5");
  CHECK(prom_double(1e-7) == "1e-07");
  CHECK(prom_double(3.0) == "3");
  CHECK(prom_double(0.1 + 0.2) == "0.30000000000000004");  // reads back as the same double
  CHECK(prom_double(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(prom_double(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(prom_double(std::nan("")) == "NaN");
  CHECK(prom_le(0.0001) == "0.0001");
  CHECK(prom_le(2.5) == "2.5");
  CHECK(prom_le(1.0) == "1");
  CHECK(prom_le(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(prom_escape_label("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(prom_escape_help("x\\y\nz\"") == "x\\\\y\\nz\"");

  PromText p;
  p.family("x_total", "counter", "Things.\nMore");
  p.sample("x_total", {{"kind", "a\"b"}, {"k2", "v"}}, uint64_t{18446744073709551615u});
  p.sample("x_total", {}, 2.5);
  CHECK(p.text() ==
        "# HELP x_total Things.\\nMore\n"
        "# TYPE x_total counter\n"
        "x_total{kind=\"a\\\"b\",k2=\"v\"} 18446744073709551615\n"
        "x_total 2.5\n");
}

TEST_CASE("metrics requests: what is answered how", "[metrics]") {
  CHECK(examine_request("", true).status == 0);
  CHECK(examine_request("GE", true).status == 0);
  CHECK(examine_request("GET /metrics HTTP/1.1\r\nHost: x\r\n", true).status == 0);
  HttpAnswer a = examine_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true);
  CHECK(a.status == 200);
  CHECK(a.body_is_metrics);
  CHECK_FALSE(a.head);
  CHECK(examine_request("GET /metrics?x=1 HTTP/1.0\n\n", true).status == 200);
  CHECK(examine_request("HEAD /metrics HTTP/1.1\r\n\r\n", true).head);
  CHECK(examine_request("GET / HTTP/1.1\r\n\r\n", true).status == 404);
  CHECK(examine_request("POST /metrics HTTP/1.1\r\n\r\n", true).status == 405);
  // Not HTTP: refused at the first bytes that show it.
  CHECK(examine_request("\x16\x03\x01", true).status == 400);  // a TLS client hello
  CHECK(examine_request("heapshot\n", true).status == 400);
  CHECK(examine_request("get /metrics HTTP/1.1\r\n\r\n", true).status == 400);
  CHECK(examine_request("GET /metrics SMTP/1.1\r\n\r\n", true).status == 400);
  CHECK(examine_request("AAAAAAAAAAAAAAAAAAAAAAAA", true).status == 400);
  // Incomplete at EOF.
  CHECK(examine_request("GET /metrics HTTP/1.1\r\n", false).status == 400);
  // Too large: headers that never end.
  std::string big = "GET /metrics HTTP/1.1\r\n";
  while (big.size() <= kMaxMetricsRequest) big += "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
  CHECK(examine_request(big, true).status == 431);
  CHECK(examine_request(big + "\r\n", true).status == 431);
  std::string long_line = "GET /" + std::string(kMaxMetricsRequest + 10, 'a');
  CHECK(examine_request(long_line, true).status == 431);
}

namespace {

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Drives the server (as the helper's loop does) until `fd` has been answered and closed.
std::string exchange(MetricsServer& s, int fd, int64_t clock_offset = 0, int max_rounds = 200) {
  std::string got;
  std::vector<pollfd> fds;
  for (int i = 0; i < max_rounds; ++i) {
    fds.clear();
    s.add_pollfds(fds, now_ms() + clock_offset);
    ::poll(fds.data(), fds.size(), 10);
    s.service(fds.data(), fds.size(), now_ms() + clock_offset);
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    if (n == 0) break;
  }
  return got;
}

}  // namespace

TEST_CASE("metrics server: scrape, limits, slow clients", "[metrics]") {
  int renders = 0;
  MetricsServer s(PeerRules{}, [&] {
    ++renders;
    return std::string("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n");
  });
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  REQUIRE(s.port() != 0);

  SECTION("a scrape") {
    const int fd = connect_to(s.port());
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
    const std::string got = exchange(s, fd);
    CHECK(got.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(got.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != std::string::npos);
    CHECK(got.find("\r\n\r\n# HELP a_total A.\n") != std::string::npos);
    CHECK(renders == 1);
    CHECK(s.scrapes() == 1);
    ::close(fd);
  }
  SECTION("not HTTP") {
    const int fd = connect_to(s.port());
    REQUIRE(::send(fd, "\x16\x03\x01\x02", 4, 0) == 4);
    CHECK(exchange(s, fd).rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(renders == 0);
    ::close(fd);
  }
  SECTION("a request that never ends is timed out") {
    const int fd = connect_to(s.port());
    REQUIRE(::send(fd, "GET /metrics HTTP/1.1\r\n", 23, 0) == 23);
    std::string got = exchange(s, fd, 0, 5);
    CHECK(got.empty());
    got = exchange(s, fd, kMetricsReadTimeoutMs + 1);
    CHECK(got.rfind("HTTP/1.1 408 ", 0) == 0);
    CHECK(s.clients() == 0);
    ::close(fd);
  }
  SECTION("more connections than places: the oldest silent one goes, a scrape still works") {
    std::vector<int> silent;
    for (size_t i = 0; i < kMaxMetricsClients + 8; ++i) {
      silent.push_back(connect_to(s.port()));
      exchange(s, silent.back(), 0, 2);
    }
    CHECK(s.clients() <= kMaxMetricsClients);
    const int fd = connect_to(s.port());
    const std::string req = "GET /metrics HTTP/1.0\r\n\r\n";
    REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
    CHECK(exchange(s, fd).rfind("HTTP/1.1 200 OK", 0) == 0);
    CHECK(s.clients() <= kMaxMetricsClients);
    for (int f : silent) ::close(f);
    ::close(fd);
  }
  s.stop();
}

TEST_CASE("metrics server: a port in use is one line", "[metrics]") {
  MetricsServer a(PeerRules{}, [] { return std::string(); });
  std::string error;
  REQUIRE(a.start("127.0.0.1", 0, error));
  MetricsServer b(PeerRules{}, [] { return std::string(); });
  CHECK_FALSE(b.start("127.0.0.1", a.port(), error));
  CHECK(error == "cannot listen on 127.0.0.1:" + std::to_string(a.port()) + ": Address already in use");
}
