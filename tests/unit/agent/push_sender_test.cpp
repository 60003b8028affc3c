// push='s sending thread (agent/src/push_sender.h) against a small HTTP server of the test's own on
// loopback: each queued profile POSTed once to the ingest URL with its query, as a multipart form
// (the pprof bytes as "profile", the sample types as "sample_type_config"), the token as a bearer
// header; the server's answers counted (2xx sent, others failed, no retries), a server that is not
// there counted as failed, and finish() returning in bounded time. Where libcurl cannot be loaded the
// sender drops everything (one line) and these tests only say so.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../../agent/src/push_sender.h"

using namespace mlpd;

namespace {

// Answers every request on 127.0.0.1:<port> with `status`, keeping each request (headers and body)
// whole. One connection at a time, as the sender makes them.
class Server {
 public:
  explicit Server(int status) : status_(status) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    REQUIRE(::listen(fd_, 8) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~Server() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/ingest"; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      size_t need = std::string::npos;  // headers + body, once the headers are in
      char buf[4096];
      bool chunked = false;  // then the body ends with the last chunk
      while (req.size() < need && !(chunked && req.ends_with("\r\n0\r\n\r\n"))) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
        const size_t end = req.find("\r\n\r\n");
        if (need == std::string::npos && end != std::string::npos) {
          const size_t cl = req.find("Content-Length: ");
          chunked = req.find("Transfer-Encoding: chunked") < end;
          need = chunked ? SIZE_MAX
                         : end + 4 + (cl != std::string::npos && cl < end ? std::strtoul(req.c_str() + cl + 16, nullptr, 10) : 0);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req);
      }
      const std::string answer = "HTTP/1.1 " + std::to_string(status_) + " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      (void)!::write(c, answer.data(), answer.size());
      ::close(c);
    }
  }

  int status_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

// Without libcurl (a root without libcurl4, or built without its headers) the sender says so in one line
// and drops what it is given, counted or not (whether the thread found out before the send): nothing
// sent, nothing failed, nothing waiting. Nothing to test there.
bool no_curl(const agent::PushStats& st) {
  if (st.sent + st.failed != 0 || st.queued != 0) return false;
  WARN("libcurl is not available here: push= is not tested");
  return true;
}

// Waits until the sender has dealt with `n` profiles (sent or failed), at most 20 s.
agent::PushStats wait_for(const agent::PushSender& s, uint64_t n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  agent::PushStats st = s.stats();
  while (st.sent + st.failed < n && st.dropped_queue == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    st = s.stats();
  }
  return st;
}

}  // namespace

TEST_CASE("push sender: each profile POSTed once as the ingest API's form, with the token", "[agent][push]") {
  Server server(200);
  agent::PushSender sender(server.url(), "s3cret", false);
  std::string error;
  REQUIRE(sender.start(error));
  const std::string body1("\x1f\x8b pprof one \0 with a NUL", 24);
  sender.send("name=app.cpu&from=10&until=20&format=pprof", body1, 7);
  sender.send("name=app.cpu&from=20&until=30&format=pprof", "pprof two", 5);
  const agent::PushStats st = wait_for(sender, 2);
  if (no_curl(st)) return;
  CHECK(st.sent == 2);
  CHECK(st.failed == 0);
  CHECK(st.samples_sent == 12);
  CHECK(st.bytes_sent == body1.size() + 9);
  CHECK(st.last_status == 200);
  CHECK(sender.finish());

  const std::vector<std::string> reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  const std::string& r = reqs[0];
  CHECK(r.rfind("POST /ingest?name=app.cpu&from=10&until=20&format=pprof HTTP/1.1\r\n", 0) == 0);
  CHECK(r.find("Authorization: Bearer s3cret\r\n") != std::string::npos);
  CHECK(r.find("User-Agent: mlpd-agent\r\n") != std::string::npos);
  CHECK(r.find("Content-Type: multipart/form-data; boundary=") != std::string::npos);
  CHECK(r.find("name=\"profile\"; filename=\"profile.pprof\"") != std::string::npos);
  CHECK(r.find(body1) != std::string::npos);  // the bytes as given, NUL and all
  CHECK(r.find("name=\"sample_type_config\"") != std::string::npos);
  CHECK(r.find("\"display-name\":\"cpu\"") != std::string::npos);
  CHECK(reqs[1].rfind("POST /ingest?name=app.cpu&from=20&until=30&format=pprof HTTP/1.1\r\n", 0) == 0);
  CHECK(reqs[1].find("pprof two") != std::string::npos);
}

TEST_CASE("push sender: answers not 2xx and a server not there are failures, not retried", "[agent][push]") {
  SECTION("500") {
    Server server(500);
    agent::PushSender sender(server.url(), "", false);
    std::string error;
    REQUIRE(sender.start(error));
    sender.send("name=a", "x", 1);
    const agent::PushStats st = wait_for(sender, 1);
    if (no_curl(st)) return;
    CHECK(st.failed == 1);
    CHECK(st.sent == 0);
    CHECK(st.samples_sent == 0);
    CHECK(st.last_status == 500);
    CHECK(sender.finish());
    const std::vector<std::string> reqs = server.requests();
    REQUIRE(reqs.size() == 1);  // not sent again
    CHECK(reqs[0].find("Authorization:") == std::string::npos);  // no token, no header
  }
  SECTION("no server") {
    int port;
    {
      Server gone(200);
      port = std::atoi(gone.url().substr(gone.url().rfind(':') + 1).c_str());
    }  // closed: connections to it are refused
    agent::PushSender sender("http://127.0.0.1:" + std::to_string(port) + "/ingest", "", false);
    std::string error;
    REQUIRE(sender.start(error));
    sender.send("name=a", "x", 1);
    const agent::PushStats st = wait_for(sender, 1);
    if (no_curl(st)) return;
    CHECK(st.failed == 1);
    CHECK(st.last_status == 0);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(sender.finish());
    // The last request failed: the exit gives the server no more time.
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(agent::PushSender::kFinishMs + 500));
  }
}

TEST_CASE("push sender: nothing is queued before start or after finish", "[agent][push]") {
  Server server(200);
  agent::PushSender sender(server.url(), "", false);
  sender.send("name=early", "x", 1);  // not started: dropped silently, not counted
  CHECK(sender.stats().queued == 0);
  std::string error;
  REQUIRE(sender.start(error));
  CHECK(sender.finish());
  sender.send("name=late", "x", 1);
  const agent::PushStats st = sender.stats();
  CHECK(st.sent == 0);
  CHECK(st.queued == 0);
  CHECK(server.requests().empty());
}
