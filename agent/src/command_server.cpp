// The command port's sockets (CommandServer): the listener (tcp_listen, shared with the metrics
// endpoint: metrics_server.cpp), accepting and refusing connections (the
// peer check: peer_uid.cpp), reading and writing clients from the helper thread's poll loop. The
// protocol is CommandSession (command_session.cpp). docs/command-port.md.
#include "mlpd/agent/command_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "mlpd/agent/metrics_server.h"

namespace mlpd::agent {

namespace {

constexpr size_t kAcceptsPerRound = 16;        // connections taken per poll round (the rest wait)
constexpr int64_t kStalledOutputMs = 10 * 1000;  // answers backed up and none taken for this long: closed
constexpr int64_t kAcceptPauseMs = 1000;       // out of descriptors: stop polling the listener a while

}  // namespace

CommandServer::CommandServer(CommandHandlers handlers) : handlers_(std::move(handlers)) {
  shared_.handlers = &handlers_;
  for (auto& s : slots_) s.store(-1, std::memory_order_relaxed);
}

CommandServer::~CommandServer() { stop(); }

bool CommandServer::start(const std::string& address, uint16_t port, std::string& error) {
  const int fd = tcp_listen(address, port, port_, ipv6_, error);
  if (fd < 0) return false;
  address_ = address;
  listen_fd_ = fd;
  slots_[0].store(fd, std::memory_order_relaxed);
  return true;
}

std::string CommandServer::endpoint() const {
  return (ipv6_ ? "[" + address_ + "]" : address_) + ":" + std::to_string(port_);
}

void CommandServer::add_pollfds(std::vector<pollfd>& fds, int64_t now_ms) {
  listen_polled_ = listen_fd_ >= 0 && now_ms >= accept_pause_until_;
  if (listen_polled_) fds.push_back({listen_fd_, POLLIN, 0});
  for (const Client& c : clients_) {
    short ev = 0;
    if (c.session->wants_input()) ev |= POLLIN;
    if (!c.session->output().empty()) ev |= POLLOUT;
    fds.push_back({c.fd, ev, 0});
  }
  polled_clients_ = clients_.size();
}

void CommandServer::close_client(Client& c) {
  slots_[c.slot].store(-1, std::memory_order_relaxed);
  ::close(c.fd);
  c.fd = -1;
}

void CommandServer::service(const pollfd* fds, size_t count, int64_t now_ms) {
  size_t i = 0;
  bool accept = false;
  if (listen_polled_ && count > 0) {
    accept = fds[0].revents & POLLIN;
    i = 1;
  }
  for (size_t k = 0; k < clients_.size(); ++k) {
    Client& c = clients_[k];
    const short re = (k < polled_clients_ && i + k < count) ? fds[i + k].revents : 0;
    CommandSession& s = *c.session;
    bool keep = !(re & (POLLERR | POLLNVAL));
    if (keep && (re & (POLLIN | POLLHUP))) keep = read_client(c, now_ms);
    // Hung up both ways (reset): answers cannot be delivered, and poll would report it again at once.
    if (keep && (re & POLLHUP) && !s.wants_input()) keep = false;
    // Twice: lines held back by a full output queue run as soon as the queue drains (otherwise they
    // would wait for the next wake-up of the helper, having nothing to poll for).
    for (int pass = 0; pass < 2 && keep; ++pass) {
      s.advance(now_ms);
      if (!s.output().empty()) keep = write_client(c, now_ms);
    }
    if (keep && s.finished()) keep = false;
    if (keep && !s.waiting()) {
      // A client that takes no answers, or does nothing at all, gives its place up.
      const int64_t quiet = now_ms - s.last_progress();
      if (quiet >= kCommandIdleMs || (s.output().size() >= kCommandOutputHigh && quiet >= kStalledOutputMs))
        keep = false;
    }
    if (!keep) close_client(c);
  }
  std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
  polled_clients_ = 0;
  if (accept) accept_all(now_ms);
}

bool CommandServer::read_client(Client& c, int64_t now_ms) {
  CommandSession& s = *c.session;
  if (!s.wants_input()) return true;
  char buf[kCommandReadChunk];
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) {
    s.feed(buf, static_cast<size_t>(n), now_ms);
    return true;
  }
  if (n == 0) {
    s.input_closed(now_ms);
    return true;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

bool CommandServer::write_client(Client& c, int64_t now_ms) {
  CommandSession& s = *c.session;
  // Never blocks (MSG_DONTWAIT), never raises SIGPIPE in the host (MSG_NOSIGNAL).
  const ssize_t n = ::send(c.fd, s.output().data(), s.output().size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) {
    s.consume(static_cast<size_t>(n), now_ms);
    return true;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

void CommandServer::accept_all(int64_t now_ms) {
  for (size_t i = 0; i < kAcceptsPerRound; ++i) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the pending connection stays and keeps the listener readable; poll it
      // again later rather than spin.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_pause_until_ = now_ms + kAcceptPauseMs;
      return;
    }
    size_t slot = 1;
    while (slot < slots_.size() && slots_[slot].load(std::memory_order_relaxed) >= 0) ++slot;
    if (clients_.size() >= kMaxCommandClients || slot >= slots_.size()) {
      // Full: the client without a command for longest (not waiting for an answer) makes room if that
      // has lasted a while. Bytes that never make a command do not count, so connections trickling a
      // byte now and then cannot hold the port.
      Client* idlest = nullptr;
      for (Client& c : clients_) {
        if (c.fd >= 0 && !c.session->waiting() && (!idlest || c.session->last_command() < idlest->session->last_command()))
          idlest = &c;
      }
      if (idlest && now_ms - idlest->session->last_command() >= kCommandEvictIdleMs) {
        static constexpr char kEvicted[] = "ERR closed: idle while the port is full\n";
        (void)!::send(idlest->fd, kEvicted, sizeof kEvicted - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        slot = idlest->slot;
        close_client(*idlest);
        std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
      }
    }
    std::string refusal;
    if (clients_.size() >= kMaxCommandClients || slot >= slots_.size()) refusal = "ERR too many connections\n";
    else if (!permitted(fd, refusal)) refusal = "ERR " + refusal + "\n";
    if (!refusal.empty()) {
      (void)!::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      // What the client already sent is read first: closing with unread data would reset the
      // connection and could destroy the answer before the client reads it.
      char drain[512];
      (void)!::recv(fd, drain, sizeof drain, MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    slots_[slot].store(fd, std::memory_order_relaxed);
    clients_.push_back({fd, slot, std::make_unique<CommandSession>(shared_, now_ms)});
  }
}

bool CommandServer::permitted(int fd, std::string& why) const {
  return peer_permitted(fd, PeerRules{handlers_.allow_any_user, handlers_.allowed_uids}, why);
}

void CommandServer::flush_done(bool ok, int64_t now_ms) {
  shared_.flush_wanted = false;
  ++shared_.flush_rounds;
  shared_.flush_ok = ok;
  for (Client& c : clients_) {
    c.session->advance(now_ms);
    if (!c.session->output().empty() && !write_client(c, now_ms)) close_client(c);
  }
  std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
}

void CommandServer::stop() {
  if (forgotten_) return;  // fork child: the descriptors are closed, the rest is the parent's
  for (Client& c : clients_) {
    c.session->abort_waiting("ERR the profiler is shutting down");
    if (!c.session->output().empty()) (void)write_client(c, 0);
    close_client(c);
  }
  clients_.clear();
  if (listen_fd_ >= 0) {
    slots_[0].store(-1, std::memory_order_relaxed);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void CommandServer::forget_after_fork() {
  // The fork child's copy of the descriptors: the helper thread (the only user) does not exist here,
  // and clients_ may have been half changed at the fork, so only the slots are read.
  for (auto& s : slots_) {
    const int fd = s.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) ::close(fd);
  }
  listen_fd_ = -1;
  forgotten_ = true;
}

}  // namespace mlpd::agent
