// The command port's peer check: the uid that owns the other end of an accepted loopback TCP
// connection, from the kernel's sock_diag netlink (peer_uid_proc.cpp: the /proc/net fallback).
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "errno_text.h"
#include "mlpd/agent/command_server.h"
#include "peer_uid_proc.h"

namespace mlpd::agent {

namespace {

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
    why = "cannot identify the connecting user: " + errno_text(errno);
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
    why = "cannot identify the connecting user: sock_diag: " + errno_text(err);
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
    why = "cannot identify the connecting user: sock_diag: " + errno_text(err);
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

}  // namespace mlpd::agent
