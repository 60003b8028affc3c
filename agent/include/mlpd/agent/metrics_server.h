// The metrics endpoint (`metrics=PORT`, docs/fleet.md): `GET /metrics` in Prometheus' text format,
// served over HTTP/1.x from the agent's helper thread with poll(), as the command port is. Every
// descriptor is non-blocking and close-on-exec; nothing here blocks, and no client can make it hold
// more than a bounded amount of memory:
//   * a request (line and headers) larger than kMaxMetricsRequest: 431 and closed;
//   * a client that is not speaking HTTP (its first bytes are not `METHOD /path HTTP/1.x`): 400, closed;
//   * a request not complete within kMetricsReadTimeoutMs of the connection: closed (408);
//   * an answer not taken within kMetricsWriteTimeoutMs: closed;
//   * at most kMaxMetricsClients connections; a new one takes the place of the oldest still sending
//     its request (a real scraper's request comes in one packet, so trickling connections lose).
// The same peer rules as the command port (the agent's own user and root unless port-allow= says
// otherwise): others get 403. Each answer closes the connection (`Connection: close`).
// The body is made by `render` on the helper thread when a request is complete.
#pragma once

#include <poll.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mlpd::agent {

inline constexpr size_t kMaxMetricsRequest = 8 * 1024;   // request line and headers
inline constexpr size_t kMaxMetricsClients = 16;
inline constexpr int64_t kMetricsReadTimeoutMs = 5 * 1000;
inline constexpr int64_t kMetricsWriteTimeoutMs = 10 * 1000;

// Who may read the metrics: the command port's rules (command_server.h).
struct PeerRules {
  bool allow_any_user = false;
  std::vector<uint32_t> allowed_uids;
};
// The peer of the TCP connection `fd` may use a port of ours under `rules`; else `why` says why not.
bool peer_permitted(int fd, const PeerRules& rules, std::string& why);

// A listening TCP socket (non-blocking, close-on-exec, SO_REUSEADDR) on `address` (numeric IPv4 or
// IPv6) and `port` (0: any free port): its descriptor, the port bound and whether it is IPv6; -1 with
// one line in `error` naming the address and port.
int tcp_listen(const std::string& address, uint16_t port, uint16_t& bound, bool& ipv6, std::string& error);

// What a complete request asks: the answer's status line and body. Pure (unit tests).
struct HttpAnswer {
  int status = 0;        // 0: the request is not complete yet
  std::string reason;    // "OK", "Not Found", ...
  bool body_is_metrics = false;  // 200 for GET/HEAD /metrics
  bool head = false;     // HEAD: headers only
  std::string text;      // the body of an error answer
};
// Looks at what a client has sent so far (at most kMaxMetricsRequest + one read): status 0 while
// more is needed, else the answer (400 for what is not HTTP, 431 too large, 405, 404, 200).
HttpAnswer examine_request(const std::string& in, bool more_possible);

class MetricsServer {
 public:
  MetricsServer(PeerRules rules, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds `address` (numeric IPv4 or IPv6) on `port` (0: any free port) and listens. False with one
  // line in `error` (naming address and port); nothing stays open.
  bool start(const std::string& address, uint16_t port, std::string& error);
  uint16_t port() const { return port_; }
  std::string endpoint() const;

  void add_pollfds(std::vector<pollfd>& fds, int64_t now_ms);
  // Handles the results of the descriptors add_pollfds() appended; accepts, reads, answers, times
  // out, closes. Bounded work per call.
  void service(const pollfd* fds, size_t count, int64_t now_ms);
  void stop();
  void forget_after_fork();

  size_t clients() const { return clients_.size(); }
  uint64_t scrapes() const { return scrapes_; }
  uint64_t refused() const { return refused_; }

 private:
  struct Client {
    int fd = -1;
    size_t slot = 0;
    int64_t since_ms = 0;  // connected (reading), or answered (writing)
    bool answering = false;
    std::string in;
    std::string out;
    size_t sent = 0;
  };
  void accept_all(int64_t now_ms);
  void close_client(Client& c);
  void answer(Client& c, const HttpAnswer& a, int64_t now_ms);
  // False when the client is to be closed.
  bool read_client(Client& c, int64_t now_ms);
  bool write_client(Client& c);

  PeerRules rules_;
  std::function<std::string()> render_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::string address_;
  bool ipv6_ = false;
  std::vector<Client> clients_;
  size_t polled_clients_ = 0;
  bool listen_polled_ = false;
  int64_t accept_pause_until_ = 0;
  bool forgotten_ = false;
  uint64_t scrapes_ = 0;
  uint64_t refused_ = 0;
  std::array<std::atomic<int>, kMaxMetricsClients + 1> slots_;  // every open descriptor, for the fork child
};

}  // namespace mlpd::agent
