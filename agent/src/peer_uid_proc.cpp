#include "peer_uid_proc.h"

#include <netinet/in.h>

#include <cstdio>
#include <cstring>

namespace mlpd::agent {

namespace {

// An address as IPv6 (IPv4 as ::ffff:a.b.c.d) and a port in host order.
struct End {
  unsigned char addr[16];
  uint16_t port;
  bool operator==(const End& o) const { return port == o.port && std::memcmp(addr, o.addr, 16) == 0; }
};

bool from_sockaddr(const sockaddr_storage& s, End& e) {
  std::memset(&e, 0, sizeof e);
  if (s.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(s);
    e.addr[10] = e.addr[11] = 0xff;
    std::memcpy(e.addr + 12, &a.sin_addr, 4);
    e.port = ntohs(a.sin_port);
    return true;
  }
  if (s.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(s);
    std::memcpy(e.addr, &a.sin6_addr, 16);
    e.port = ntohs(a.sin6_port);
    return true;
  }
  return false;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "0100007F:1F90" (tcp) or 32 hex digits and a port (tcp6): the kernel prints each 32-bit word of the
// address as the number its bytes make on this machine (%08X), the port as a number (%04X).
bool parse_end(const char* s, size_t n, End& e) {
  std::memset(&e, 0, sizeof e);
  const size_t words = n == 13 ? 1 : n == 37 ? 4 : 0;
  if (words == 0 || s[words * 8] != ':') return false;
  for (size_t w = 0; w < words; ++w) {
    uint32_t v = 0;
    for (size_t i = 0; i < 8; ++i) {
      const int d = hex(s[w * 8 + i]);
      if (d < 0) return false;
      v = v << 4 | static_cast<uint32_t>(d);
    }
    std::memcpy(e.addr + (words == 1 ? 12 : w * 4), &v, 4);
  }
  if (words == 1) e.addr[10] = e.addr[11] = 0xff;
  uint32_t port = 0;
  for (size_t i = words * 8 + 1; i < n; ++i) {
    const int d = hex(s[i]);
    if (d < 0) return false;
    port = port << 4 | static_cast<uint32_t>(d);
  }
  e.port = static_cast<uint16_t>(port);
  return true;
}

// The next blank-separated field of `line` from `*p`.
bool field(const char*& p, const char*& start, size_t& n) {
  while (*p == ' ' || *p == '\t') ++p;
  start = p;
  while (*p && *p != ' ' && *p != '\t' && *p != '\n') ++p;
  n = static_cast<size_t>(p - start);
  return n > 0;
}

}  // namespace

bool peer_uid_proc_net(const sockaddr_storage& local, const sockaddr_storage& peer, uint32_t& uid, std::string& why,
                       const char* dir) {
  End want_local, want_remote;  // the peer socket's ends
  if (!from_sockaddr(peer, want_local) || !from_sockaddr(local, want_remote)) {
    why = "cannot identify the connecting user: not a TCP/IP connection";
    return false;
  }
  why = "cannot identify the connecting user (not a connection from this host, or already closed)";
  bool opened = false;
  for (const char* name : {"tcp", "tcp6"}) {
    char path[256];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = std::fopen(path, "re");
    if (!f) continue;
    opened = true;
    char line[512];
    bool found = false, owned = false;
    uint32_t found_uid = 0;
    std::fgets(line, sizeof line, f);  // the column names
    while (!found && std::fgets(line, sizeof line, f)) {
      // sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
      const char* p = line;
      const char *s[8];
      size_t n[8];
      int k = 0;
      while (k < 8 && field(p, s[k], n[k])) ++k;
      if (k < 8) continue;
      End l, r;
      if (!parse_end(s[1], n[1], l) || !parse_end(s[2], n[2], r) || !(l == want_local) || !(r == want_remote)) continue;
      found = true;
      const int st = n[3] == 2 && hex(s[3][0]) >= 0 && hex(s[3][1]) >= 0 ? hex(s[3][0]) * 16 + hex(s[3][1]) : -1;
      owned = st != 3 && st != 6 && st != 10 && st != 12 && st >= 0;  // SYN_RECV, TIME_WAIT, LISTEN, NEW_SYN_RECV
      // A time-wait entry (its state the substate: FIN_WAIT2 of a peer that closed at once) has timer 3
      // and uid 0: no owner to tell.
      if (n[5] >= 3 && s[5][0] == '0' && s[5][1] == '3' && s[5][2] == ':') owned = false;
      unsigned long v = 0;
      for (size_t i = 0; i < n[7]; ++i) {
        if (s[7][i] < '0' || s[7][i] > '9' || v > 0xffffffffUL / 10) {
          owned = false;
          break;
        }
        v = v * 10 + static_cast<unsigned long>(s[7][i] - '0');
      }
      found_uid = static_cast<uint32_t>(v);
    }
    std::fclose(f);
    if (found) {
      if (!owned) return false;
      uid = found_uid;
      return true;
    }
  }
  if (!opened) why = "cannot identify the connecting user: neither sock_diag nor /proc/net/tcp is there";
  return false;
}

}  // namespace mlpd::agent
