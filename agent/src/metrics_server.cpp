// The metrics endpoint's sockets and its small HTTP/1.x reader (metrics_server.h; docs/fleet.md).
#include "mlpd/agent/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "errno_text.h"
#include "mlpd/agent/command_server.h"

namespace mlpd::agent {

namespace {

constexpr size_t kAcceptsPerRound = 16;
constexpr int64_t kAcceptPauseMs = 1000;
constexpr size_t kReadChunk = 4096;

bool is_token_char(char c) { return c >= 'A' && c <= 'Z'; }

}  // namespace

int tcp_listen(const std::string& address, uint16_t port, uint16_t& bound_port, bool& ipv6, std::string& error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
    ipv6 = false;
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
    ipv6 = true;
  } else {
    error = "'" + address + "' is not a numeric IPv4 or IPv6 address";
    return -1;
  }
  const std::string where = (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = "cannot create a socket for " + where + ": " + errno_text(errno);
    return -1;
  }
  const int one = 1;
  // A restarted program gets its port back while old connections linger in TIME_WAIT.
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
    const int e = errno;
    ::close(fd);
    error = "cannot listen on " + where + ": " + errno_text(e);
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  bound_port = port;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) == 0) {
    bound_port = ntohs(ipv6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return fd;
}

bool peer_permitted(int fd, const PeerRules& rules, std::string& why) {
  if (rules.allow_any_user) return true;
  uint32_t uid = 0;
  std::string unknown;
  if (!peer_uid(fd, uid, unknown)) {
    why = "permission denied: " + unknown + " (the agent option port-allow=any lets anyone in)";
    return false;
  }
  if (uid == 0 || uid == ::geteuid()) return true;
  if (std::find(rules.allowed_uids.begin(), rules.allowed_uids.end(), uid) != rules.allowed_uids.end()) return true;
  why = "permission denied: uid " + std::to_string(uid) +
        " may not use this port (option port-allow=UID:UID... or port-allow=any)";
  return false;
}

HttpAnswer examine_request(const std::string& in, bool more_possible) {
  HttpAnswer a;
  const auto fail = [&](int status, const char* reason, std::string text) {
    a.status = status;
    a.reason = reason;
    a.text = std::move(text) + "\n";
    return a;
  };
  // The request line as far as it has come: METHOD SP TARGET SP HTTP/1.x. Anything else is refused
  // as soon as it shows, so a client sending other bytes (TLS, a command-port line) is not kept.
  const std::string_view s(in);
  size_t i = 0;
  while (i < s.size() && i < 16 && is_token_char(s[i])) ++i;
  if (i < s.size() && (s[i] != ' ' || i == 0)) return fail(400, "Bad Request", "not an HTTP request");
  if (i == 16 && (i >= s.size() || s[i] != ' ')) return fail(400, "Bad Request", "not an HTTP request");
  const size_t line_end = s.find('\n');
  if (line_end != std::string_view::npos) {
    std::string_view line = s.substr(0, line_end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0 || line.size() != sp2 + 1 + 8)
      return fail(400, "Bad Request", "not an HTTP/1.x request");
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    // The end of the headers: an empty line.
    const bool complete = s.find("\r\n\r\n") != std::string_view::npos || s.find("\n\n") != std::string_view::npos;
    if (!complete) {
      if (s.size() > kMaxMetricsRequest) return fail(431, "Request Header Fields Too Large", "request too large");
      if (!more_possible) return fail(400, "Bad Request", "incomplete request");
      return a;
    }
    if (s.find("\r\n\r\n") > kMaxMetricsRequest && s.find("\n\n") > kMaxMetricsRequest)
      return fail(431, "Request Header Fields Too Large", "request too large");
    std::string_view path = target.substr(0, target.find('?'));
    if (path != "/metrics") return fail(404, "Not Found", "not found: the metrics are at /metrics");
    if (method != "GET" && method != "HEAD") {
      a = fail(405, "Method Not Allowed", "only GET and HEAD");
      return a;
    }
    a.status = 200;
    a.reason = "OK";
    a.body_is_metrics = true;
    a.head = method == "HEAD";
    return a;
  }
  if (s.size() > kMaxMetricsRequest) return fail(431, "Request Header Fields Too Large", "request too large");
  if (!more_possible) return fail(400, "Bad Request", "incomplete request");
  return a;
}

MetricsServer::MetricsServer(PeerRules rules, std::function<std::string()> render)
    : rules_(std::move(rules)), render_(std::move(render)) {
  for (auto& s : slots_) s.store(-1, std::memory_order_relaxed);
}

MetricsServer::~MetricsServer() { stop(); }

bool MetricsServer::start(const std::string& address, uint16_t port, std::string& error) {
  const int fd = tcp_listen(address, port, port_, ipv6_, error);
  if (fd < 0) return false;
  address_ = address;
  listen_fd_ = fd;
  slots_[0].store(fd, std::memory_order_relaxed);
  return true;
}

std::string MetricsServer::endpoint() const {
  return (ipv6_ ? "[" + address_ + "]" : address_) + ":" + std::to_string(port_);
}

void MetricsServer::add_pollfds(std::vector<pollfd>& fds, int64_t now_ms) {
  listen_polled_ = listen_fd_ >= 0 && now_ms >= accept_pause_until_;
  if (listen_polled_) fds.push_back({listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) fds.push_back({c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
  polled_clients_ = clients_.size();
}

void MetricsServer::close_client(Client& c) {
  if (c.fd < 0) return;
  slots_[c.slot].store(-1, std::memory_order_relaxed);
  ::close(c.fd);
  c.fd = -1;
}

void MetricsServer::service(const pollfd* fds, size_t count, int64_t now_ms) {
  size_t i = 0;
  bool accept = false;
  if (listen_polled_ && count > 0) {
    accept = fds[0].revents & POLLIN;
    i = 1;
  }
  for (size_t k = 0; k < clients_.size(); ++k) {
    Client& c = clients_[k];
    const short re = (k < polled_clients_ && i + k < count) ? fds[i + k].revents : 0;
    bool keep = !(re & (POLLERR | POLLNVAL));
    if (keep && !c.answering && (re & (POLLIN | POLLHUP))) keep = read_client(c, now_ms);
    if (keep && c.answering && (re & POLLOUT)) keep = write_client(c);
    if (keep && c.answering && c.sent == c.out.size()) keep = false;  // answered: Connection: close
    if (keep && !c.answering && now_ms - c.since_ms >= kMetricsReadTimeoutMs) {
      ++refused_;
      HttpAnswer a;
      a.status = 408;
      a.reason = "Request Timeout";
      a.text = "request not complete in time\n";
      answer(c, a, now_ms);
      (void)write_client(c);
      keep = false;  // no more time for it, whatever it takes of the answer
    }
    if (keep && c.answering && now_ms - c.since_ms >= kMetricsWriteTimeoutMs) keep = false;
    if (!keep) close_client(c);
  }
  std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
  polled_clients_ = 0;
  if (accept) accept_all(now_ms);
}

void MetricsServer::answer(Client& c, const HttpAnswer& a, int64_t now_ms) {
  std::string body;
  if (a.body_is_metrics) {
    ++scrapes_;
    body = render_ ? render_() : std::string();
  } else {
    body = a.text;
  }
  std::string& out = c.out;
  out = "HTTP/1.1 " + std::to_string(a.status) + " " + a.reason + "\r\n";
  out += a.body_is_metrics ? "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                           : "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  if (a.status == 405) out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (!a.head) out += body;
  c.sent = 0;
  c.answering = true;
  c.since_ms = now_ms;
  c.in.clear();
  c.in.shrink_to_fit();
}

bool MetricsServer::read_client(Client& c, int64_t now_ms) {
  char buf[kReadChunk];
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n > 0) c.in.append(buf, static_cast<size_t>(n));
  const HttpAnswer a = examine_request(c.in, n > 0);
  if (a.status == 0) return true;
  if (a.status != 200) ++refused_;
  answer(c, a, now_ms);
  if (!write_client(c)) return false;
  return c.sent < c.out.size();
}

bool MetricsServer::write_client(Client& c) {
  // Never blocks (MSG_DONTWAIT), never raises SIGPIPE in the host (MSG_NOSIGNAL).
  const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) {
    c.sent += static_cast<size_t>(n);
    return true;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

void MetricsServer::accept_all(int64_t now_ms) {
  for (size_t i = 0; i < kAcceptsPerRound; ++i) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the pending connection stays and keeps the listener readable; poll it
      // again later rather than spin.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_pause_until_ = now_ms + kAcceptPauseMs;
      return;
    }
    if (clients_.size() >= kMaxMetricsClients) {
      // Full: the oldest connection still sending its request makes room (a scraper's request
      // arrives at once; connections that trickle bytes or send nothing are the ones to go).
      Client* oldest = nullptr;
      for (Client& c : clients_)
        if (!c.answering && (!oldest || c.since_ms < oldest->since_ms)) oldest = &c;
      if (oldest) {
        ++refused_;
        close_client(*oldest);
        std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
      }
    }
    std::string why;
    const bool full = clients_.size() >= kMaxMetricsClients;
    if (full || !peer_permitted(fd, rules_, why)) {
      ++refused_;
      const std::string text = (full ? std::string("too many connections") : why) + "\n";
      const std::string reply = std::string(full ? "HTTP/1.1 503 Service Unavailable" : "HTTP/1.1 403 Forbidden") +
                                "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                                std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text;
      (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      // What the client already sent is read first: closing with unread data would reset the
      // connection and could destroy the answer before the client reads it.
      char drain[512];
      (void)!::recv(fd, drain, sizeof drain, MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    size_t slot = 1;
    while (slot < slots_.size() && slots_[slot].load(std::memory_order_relaxed) >= 0) ++slot;
    slots_[slot].store(fd, std::memory_order_relaxed);
    Client c;
    c.fd = fd;
    c.slot = slot;
    c.since_ms = now_ms;
    clients_.push_back(std::move(c));
  }
}

void MetricsServer::stop() {
  if (forgotten_) return;  // fork child: the descriptors are closed, the rest is the parent's
  for (Client& c : clients_) close_client(c);
  clients_.clear();
  if (listen_fd_ >= 0) {
    slots_[0].store(-1, std::memory_order_relaxed);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void MetricsServer::forget_after_fork() {
  // The fork child's copy of the descriptors: the helper thread (the only user) does not exist here.
  for (auto& s : slots_) {
    const int fd = s.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) ::close(fd);
  }
  listen_fd_ = -1;
  forgotten_ = true;
}

}  // namespace mlpd::agent
