// The TCP command port: protocol (CommandSession) and sockets (CommandServer). docs/command-port.md.
#include "mlpd/agent/command_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>

#include "mlpd/agent/options.h"
#include "mlpd/event_names.h"
#include "peer_uid_proc.h"

namespace mlpd::agent {

namespace {

// The event names come from the one vocabulary (mlpd/event_names.h) the options use.
std::string help_answer() {
  std::string names;
  for (const format::EventBitName& e : format::kEventBitNames) names.append(e.option).append(" ");
  return "OK commands: heapshot | flush | stats | events [+NAME|-NAME ...] | pause | resume | dump [FILE] | help "
         "(one per line; NAME as in the agent options: " + names + "alloc legacy calls)";
}
constexpr size_t kAcceptsPerRound = 16;        // connections taken per poll round (the rest wait)
constexpr int64_t kStalledOutputMs = 10 * 1000;  // answers backed up and none taken for this long: closed
constexpr int64_t kAcceptPauseMs = 1000;       // out of descriptors: stop polling the listener a while

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The first word of `s` (trimmed), and in `rest` what follows it, trimmed.
std::string_view first_word(std::string_view s, std::string_view& rest) {
  s = trim(s);
  size_t i = 0;
  while (i < s.size() && !is_space(s[i])) ++i;
  rest = trim(s.substr(i));
  return s.substr(0, i);
}

std::string error_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // GNU: returns the message
}

// inet_diag's TCP states (include/net/tcp_states.h) that belong to a full socket, which keeps its
// owner's uid even once closed by its process. A TIME_WAIT entry (whose idiag_state is its substate,
// FIN_WAIT2 or TIME_WAIT, and whose timer is 3) reports uid 0 for lack of an owner.
constexpr uint8_t kTcpSynRecv = 3, kTcpTimeWait = 6, kTcpListen = 10, kTcpNewSynRecv = 12;
constexpr uint8_t kDiagTimerTimeWait = 3;

}  // namespace

bool peer_uid(int fd, uint32_t& uid, std::string& why) {
  sockaddr_storage local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) {
    why = "cannot identify the connecting user: " + error_text(errno);
    return false;
  }
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  inet_diag_sockid& id = msg.req.id;  // the peer's socket: its local end is our peer, and the reverse
  id.idiag_cookie[0] = id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (local.ss_family == AF_INET && peer.ss_family == AF_INET) {
    const auto& l = reinterpret_cast<const sockaddr_in&>(local);
    const auto& p = reinterpret_cast<const sockaddr_in&>(peer);
    msg.req.sdiag_family = AF_INET;
    id.idiag_src[0] = p.sin_addr.s_addr;
    id.idiag_sport = p.sin_port;
    id.idiag_dst[0] = l.sin_addr.s_addr;
    id.idiag_dport = l.sin_port;
  } else if (local.ss_family == AF_INET6 && peer.ss_family == AF_INET6) {
    const auto& l = reinterpret_cast<const sockaddr_in6&>(local);
    const auto& p = reinterpret_cast<const sockaddr_in6&>(peer);
    if (IN6_IS_ADDR_V4MAPPED(&l.sin6_addr) && IN6_IS_ADDR_V4MAPPED(&p.sin6_addr)) {
      msg.req.sdiag_family = AF_INET;  // an IPv4 client of a dual-stack listener
      std::memcpy(&id.idiag_src[0], &p.sin6_addr.s6_addr[12], 4);
      std::memcpy(&id.idiag_dst[0], &l.sin6_addr.s6_addr[12], 4);
    } else {
      msg.req.sdiag_family = AF_INET6;
      std::memcpy(id.idiag_src, &p.sin6_addr, 16);
      std::memcpy(id.idiag_dst, &l.sin6_addr, 16);
    }
    id.idiag_sport = p.sin6_port;
    id.idiag_dport = l.sin6_port;
  } else {
    why = "cannot identify the connecting user: not a TCP/IP connection";
    return false;
  }
  const int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) {
    const int err = errno;
    // No sock_diag (a kernel without INET_DIAG, qemu-user): the same answer from /proc/net/tcp{,6}.
    if (err == EPROTONOSUPPORT || err == EAFNOSUPPORT) return peer_uid_proc_net(local, peer, uid, why);
    why = "cannot identify the connecting user: sock_diag: " + error_text(err);
    return false;
  }
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t n;
  do {
    n = ::sendto(nl, &msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  } while (n < 0 && errno == EINTR);
  alignas(nlmsghdr) char buf[8192];
  if (n == static_cast<ssize_t>(sizeof msg)) {
    do {
      n = ::recv(nl, buf, sizeof buf, 0);  // the kernel answers at once (exact lookup, no dump)
    } while (n < 0 && errno == EINTR);
  } else {
    n = -1;
  }
  const int err = errno;
  ::close(nl);
  if (n < 0) {
    why = "cannot identify the connecting user: sock_diag: " + error_text(err);
    return false;
  }
  why = "cannot identify the connecting user (not a connection from this host, or already closed)";
  auto len = static_cast<uint32_t>(n);
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
    const auto* r = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
    if (r->id.idiag_sport != id.idiag_sport || r->id.idiag_dport != id.idiag_dport) continue;
    const uint8_t st = r->idiag_state;
    if (st == kTcpTimeWait || st == kTcpSynRecv || st == kTcpListen || st == kTcpNewSynRecv ||
        r->idiag_timer == kDiagTimerTimeWait)
      return false;  // no owner to tell
    uid = r->idiag_uid;
    return true;
  }
  return false;
}

std::string quote_client_text(std::string_view text, size_t max) {
  std::string out = "'";
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= max) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7F || c == '\'' || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  return out;
}

// --- CommandSession

void CommandSession::answer(std::string_view line) {
  out_.append(line);
  out_ += '\n';
}

void CommandSession::feed(const char* data, size_t size, int64_t now_ms) {
  if (input_closed_ || size == 0) return;
  last_progress_ = now_ms;
  in_.append(data, size);
  run_lines(now_ms);
}

void CommandSession::input_closed(int64_t now_ms) {
  input_closed_ = true;
  run_lines(now_ms);
}

bool CommandSession::wants_input() const {
  return !input_closed_ && !waiting() && out_.size() < kCommandOutputHigh &&
         in_.find('\n') == std::string::npos;
}

void CommandSession::consume(size_t n, int64_t now_ms) {
  out_.erase(0, n);
  if (n > 0) last_progress_ = now_ms;
}

void CommandSession::run_lines(int64_t now_ms) {
  size_t pos = 0;
  while (!waiting() && out_.size() < kCommandOutputHigh && pos < in_.size()) {
    const size_t nl = in_.find('\n', pos);
    if (discarding_) {
      if (nl == std::string::npos) {
        pos = in_.size();
        break;
      }
      discarding_ = false;
      pos = nl + 1;
      continue;
    }
    std::string_view line;
    if (nl == std::string::npos) {
      // No newline yet. Longer than any command can be (the \r of a \r\n may still come): refuse it
      // now and drop the rest of it as it arrives, so an endless line costs no memory.
      if (in_.size() - pos > kMaxCommandLine + 1) {
        answer("ERR line too long");
        discarding_ = true;
        pos = in_.size();
        break;
      }
      if (!input_closed_) break;
      line = std::string_view(in_).substr(pos);  // the last line of a client that sent EOF
      pos = in_.size();
    } else {
      line = std::string_view(in_).substr(pos, nl - pos);
      pos = nl + 1;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxCommandLine) {
      answer("ERR line too long");
      continue;
    }
    run(line, now_ms);
  }
  in_.erase(0, pos);
}

void CommandSession::run(std::string_view line, int64_t now_ms) {
  std::string_view args;
  const std::string_view cmd = first_word(line, args);
  if (cmd.empty()) return;  // a blank line is no command: nothing to answer
  const CommandHandlers& h = *shared_.handlers;
  last_progress_ = now_ms;
  if (cmd == "heapshot" || cmd == "flush" || cmd == "stats" || cmd == "help" || cmd == "events")
    last_command_ = now_ms;  // garbage lines do not keep a client's place when the port is full
  if (cmd == "heapshot") {
    if (!args.empty()) return answer("ERR heapshot takes no arguments");
    if (!h.request_heapshot || !h.heapshots_done) return answer("ERR heapshot: not available in this build");
    const uint64_t ticket = h.request_heapshot();
    if (ticket == 0) return answer("ERR heapshot: not possible now (profiling has stopped)");
    wait_ = Wait::Heapshot;
    wait_target_ = ticket;
    wait_deadline_ = now_ms + h.heapshot_wait_ms;
    return;  // advance() answers
  }
  if (cmd == "flush") {
    if (!args.empty()) return answer("ERR flush takes no arguments");
    shared_.flush_wanted = true;
    wait_ = Wait::Flush;
    wait_target_ = shared_.flush_rounds + 1;
    return;
  }
  if (cmd == "stats") {
    if (!args.empty()) return answer("ERR stats takes no arguments");
    return answer(h.stats ? "OK " + h.stats() : std::string("OK"));
  }
  if (cmd == "dump") {
    if (!h.dump) return answer("ERR dump: only in flight-recorder mode (start the agent with ring=SIZE)");
    return answer(h.dump(std::string(args)));
  }
  if (cmd == "help") return answer(help_answer());
  if (cmd == "events") return events(args);
  if (cmd == "pause" || cmd == "resume") {
    const bool pause = cmd == "pause";
    if (!args.empty()) return answer("ERR " + std::string(cmd) + " takes no arguments");
    const auto& f = pause ? h.pause : h.resume;
    if (!f) return answer("ERR " + std::string(cmd) + ": not available");
    // In effect when answered; doing it twice is no error.
    const bool changed = f();
    return answer(std::string(pause ? "OK paused" : "OK resumed") + (changed ? "" : " (already)"));
  }
  answer("ERR unknown command " + quote_client_text(line) + " (try help)");
}

void CommandSession::events(std::string_view args) {
  const CommandHandlers& h = *shared_.handlers;
  if (!h.event_mask || !h.set_event_mask) return answer("ERR events: not available");
  const bool calls_on_start = h.calls_enabled && h.calls_enabled() && h.call_depth && h.set_call_depth;
  auto describe = [&]() {
    std::string names = event_mask_names(h.event_mask());
    if (calls_on_start && h.call_depth() > 0) names += names.empty() ? "calls" : " calls";
    return "OK events: " + (names.empty() ? std::string("none") : names);
  };
  uint32_t mask = h.event_mask();
  const uint32_t before = mask;
  int calls = 0;  // -1 off, +1 on
  // All words are checked before anything changes: a mistake changes nothing.
  while (!args.empty()) {
    std::string_view rest;
    const std::string_view w = first_word(args, rest);
    args = rest;
    const bool on = w.front() == '+';
    if (!on && w.front() != '-')
      return answer("ERR events: expected +NAME or -NAME, not " + quote_client_text(w) + " (try help)");
    const std::string_view name = w.substr(1);
    if (name == "calls") {
      if (!calls_on_start) {
        // Without instrumentation nothing is recorded anyway: -calls is already true, +calls cannot be.
        if (!on) continue;
        return answer("ERR events: calls can only be switched on when the agent was started with 'calls'");
      }
      calls = on ? 1 : -1;
      continue;
    }
    uint32_t bits = 0;
    if (!event_name_mask(name, shared_.handlers->compat, bits))
      return answer("ERR events: unknown event " + quote_client_text(name) + " (try help)");
    mask = on ? (mask | bits) : (mask & ~bits);
  }
  if (mask != before) h.set_event_mask(mask);
  if (calls < 0 && h.call_depth() > 0) {
    shared_.saved_call_depth = h.call_depth();
    h.set_call_depth(0);  // the instrumentation stays; nothing is recorded at depth 0
  } else if (calls > 0 && h.call_depth() == 0) {
    h.set_call_depth(shared_.saved_call_depth ? shared_.saved_call_depth : h.start_call_depth);
  }
  answer(describe());
}

void CommandSession::advance(int64_t now_ms) {
  const CommandHandlers& h = *shared_.handlers;
  if (wait_ == Wait::Heapshot) {
    if (h.heapshots_done() >= wait_target_) {
      // Taken (in the buffers): OK once a flush round has put it in the file, so a client can read
      // the file as soon as it has its answer.
      heapshot_ticket_ = wait_target_;
      shared_.flush_wanted = true;
      wait_ = Wait::HeapshotFlush;
      wait_target_ = shared_.flush_rounds + 1;
    } else if (now_ms >= wait_deadline_) {
      answer("ERR heapshot timed out");
      wait_ = Wait::None;
    }
  } else if (wait_ == Wait::HeapshotFlush && shared_.flush_rounds >= wait_target_) {
    answer(shared_.flush_ok ? "OK heapshot " + std::to_string(heapshot_ticket_)
                            : std::string("ERR heapshot: the output failed; profiling stopped"));
    wait_ = Wait::None;
  } else if (wait_ == Wait::Flush && shared_.flush_rounds >= wait_target_) {
    answer(shared_.flush_ok ? "OK flush" : "ERR flush: the output failed; profiling stopped");
    wait_ = Wait::None;
  }
  if (wait_ == Wait::None) {
    if (!in_.empty()) run_lines(now_ms);
  }
}

void CommandSession::abort_waiting(std::string_view why) {
  if (wait_ == Wait::None) return;
  wait_ = Wait::None;
  answer(why);
}

// --- CommandServer

CommandServer::CommandServer(CommandHandlers handlers) : handlers_(std::move(handlers)) {
  shared_.handlers = &handlers_;
  for (auto& s : slots_) s.store(-1, std::memory_order_relaxed);
}

CommandServer::~CommandServer() { stop(); }

bool CommandServer::start(const std::string& address, uint16_t port, std::string& error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
    ipv6_ = false;
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
    ipv6_ = true;
  } else {
    error = "'" + address + "' is not a numeric IPv4 or IPv6 address";
    return false;
  }
  address_ = address;
  const std::string where = (ipv6_ ? "[" + address + "]" : address) + ":" + std::to_string(port);
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = "cannot create a socket for " + where + ": " + error_text(errno);
    return false;
  }
  const int one = 1;
  // A restarted program gets its port back while old connections linger in TIME_WAIT.
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, 64) != 0) {
    const int e = errno;
    ::close(fd);
    error = "cannot listen on " + where + ": " + error_text(e);
    return false;
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) == 0) {
    port_ = ntohs(ipv6_ ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  } else {
    port_ = port;
  }
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
  if (handlers_.allow_any_user) return true;
  uint32_t uid = 0;
  std::string unknown;
  if (!peer_uid(fd, uid, unknown)) {
    why = "permission denied: " + unknown + " (the agent option port-allow=any lets anyone in)";
    return false;
  }
  if (uid == 0 || uid == ::geteuid()) return true;
  if (std::find(handlers_.allowed_uids.begin(), handlers_.allowed_uids.end(), uid) != handlers_.allowed_uids.end())
    return true;
  why = "permission denied: uid " + std::to_string(uid) + " may not use this port (option port-allow=UID:UID... or port-allow=any)";
  return false;
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
