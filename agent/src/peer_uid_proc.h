// The owner of a loopback TCP peer's socket from /proc/net/tcp and /proc/net/tcp6: the command port's
// way to tell who connected where the kernel's sock_diag netlink is not there (a kernel without
// INET_DIAG; qemu-user, which has no NETLINK_SOCK_DIAG: the arm64 tests). Slower (a scan of every TCP
// socket), the same answer. Command server thread only.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace mlpd::agent {

// `local` and `peer` are the accepted connection's ends (getsockname, getpeername). The peer's socket
// is the line whose local address is `peer` and remote address `local`. True with its uid; false with
// `why` when there is no such line or it is in a state with no owner (TIME_WAIT, SYN_RECV, LISTEN, or a
// time-wait entry: timer 3, as a peer that closed at once leaves in FIN_WAIT2).
// `dir` is where tcp and tcp6 are (tests give another).
bool peer_uid_proc_net(const sockaddr_storage& local, const sockaddr_storage& peer, uint32_t& uid, std::string& why,
                       const char* dir = "/proc/net");

}  // namespace mlpd::agent
