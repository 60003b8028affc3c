#include "peer_uid_proc.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
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

// The lines of a file read with read(2) into one fixed buffer: no stdio in the host process (no FILE,
// no heap, no lock another thread may hold), EINTR retried. A line is at most kCapacity - 1 bytes; a
// longer one is skipped whole (a row of tcp6 is about 150), never cut into pieces that could look like
// rows. A last line without its newline is a line. A read error ends the file.
class LineReader {
 public:
  static constexpr size_t kCapacity = 1024;

  explicit LineReader(int fd) : fd_(fd) {}

  // The next line, NUL-terminated in the buffer (valid until the next call), or nullptr at the end.
  const char* next() {
    for (;;) {
      if (char* nl = static_cast<char*>(std::memchr(buf_ + start_, '\n', end_ - start_))) {
        char* line = buf_ + start_;
        *nl = '\0';
        start_ = static_cast<size_t>(nl - buf_) + 1;
        if (skipping_) {  // the tail of an overlong line
          skipping_ = false;
          continue;
        }
        return line;
      }
      if (eof_) {
        if (start_ == end_ || skipping_) return nullptr;
        char* line = buf_ + start_;
        buf_[end_] = '\0';  // end_ < kCapacity: one byte is always kept for this
        start_ = end_;
        return line;
      }
      // No newline in what is held: keep the partial line at the front and read more after it.
      std::memmove(buf_, buf_ + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
      if (end_ == kCapacity - 1) {  // a line longer than the buffer: drop it up to its newline
        skipping_ = true;
        end_ = 0;
      }
      const ssize_t r = ::read(fd_, buf_ + end_, kCapacity - 1 - end_);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        eof_ = true;
        continue;
      }
      end_ += static_cast<size_t>(r);
    }
  }

 private:
  int fd_;
  size_t start_ = 0, end_ = 0;
  bool eof_ = false, skipping_ = false;
  char buf_[kCapacity];
};

int open_cloexec(const char* path) {
  for (;;) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 || errno != EINTR) return fd;
  }
}

// The peer's row in one table (tcp or tcp6): true when found, with `owned` and its uid.
bool find_row(LineReader& lines, const End& want_local, const End& want_remote, bool& owned, uint32_t& uid) {
  if (!lines.next()) return false;  // the column names
  while (const char* line = lines.next()) {
    // sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
    const char* p = line;
    const char* s[8];
    size_t n[8];
    int k = 0;
    while (k < 8 && field(p, s[k], n[k])) ++k;
    if (k < 8) continue;
    End l, r;
    if (!parse_end(s[1], n[1], l) || !parse_end(s[2], n[2], r) || !(l == want_local) || !(r == want_remote)) continue;
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
    uid = static_cast<uint32_t>(v);
    return true;
  }
  return false;
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
    const int fd = open_cloexec(path);
    if (fd < 0) continue;
    opened = true;
    LineReader lines(fd);
    bool owned = false;
    uint32_t found_uid = 0;
    const bool found = find_row(lines, want_local, want_remote, owned, found_uid);
    ::close(fd);
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
