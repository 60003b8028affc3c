// The command port's second way to tell who connected: /proc/net/tcp{,6} where sock_diag is not there
// (qemu-user: the arm64 tests). On this machine's real /proc, and on hand-written tables.
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <string>

#include "../../../agent/src/peer_uid_proc.h"

using mlpd::agent::peer_uid_proc_net;

namespace {

struct Ends {
  sockaddr_storage local{}, peer{};
};

// The accepted connection's ends, as the server sees them.
Ends ends_of(int accepted) {
  Ends e;
  socklen_t l = sizeof e.local, p = sizeof e.peer;
  REQUIRE(::getsockname(accepted, reinterpret_cast<sockaddr*>(&e.local), &l) == 0);
  REQUIRE(::getpeername(accepted, reinterpret_cast<sockaddr*>(&e.peer), &p) == 0);
  return e;
}

sockaddr_storage v4(const char* ip, uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return s;
}

std::string table(const char* tcp, const char* tcp6) {
  char tmpl[] = "/tmp/mlpd-procnet-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  for (auto [name, text] : {std::pair{"tcp", tcp}, std::pair{"tcp6", tcp6}}) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
    REQUIRE(f);
    std::fputs("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n", f);
    std::fputs(text, f);
    std::fclose(f);
  }
  return dir;
}

}  // namespace

TEST_CASE("peer_uid_proc_net: the owner of a real loopback peer, from this machine's /proc/net/tcp", "[command][server]") {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int accepted = ::accept(listener, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  const Ends e = ends_of(accepted);
  uint32_t uid = 12345;
  std::string why;
  CHECK(peer_uid_proc_net(e.local, e.peer, uid, why));
  CHECK(uid == ::geteuid());
  // The ends the other way round name the accepted socket, ours too.
  uid = 12345;
  CHECK(peer_uid_proc_net(e.peer, e.local, uid, why));
  CHECK(uid == ::geteuid());
  // A peer that closed before it was identified: its time-wait entry has no owner.
  const int gone = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(::connect(gone, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  ::close(gone);
  const int late = ::accept(listener, nullptr, nullptr);
  REQUIRE(late >= 0);
  ::usleep(50 * 1000);
  const Ends g = ends_of(late);
  CHECK_FALSE(peer_uid_proc_net(g.local, g.peer, uid, why));
  ::close(late);
  ::close(client);
  ::close(accepted);
  ::close(listener);
}

TEST_CASE("peer_uid_proc_net: hand-written tables (IPv4, IPv6, TIME_WAIT, no such line)", "[command][server]") {
  // 127.0.0.1:40000 (the peer) -> 127.0.0.1:8888 (us), uid 1001; on a little-endian machine the
  // kernel prints 127.0.0.1 as 0100007F.
  const uint32_t lo = htonl(INADDR_LOOPBACK);
  char lo_hex[9];
  std::snprintf(lo_hex, sizeof lo_hex, "%08X", lo);
  char tcp[512];
  std::snprintf(tcp, sizeof tcp,
                "   0: %s:9C40 %s:22B8 01 00000000:00000000 00:00000000 00000000  1001        0 1 1 0\n"
                "   1: %s:9C41 %s:22B8 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0\n"
                "   2: %s:9C43 %s:22B8 05 00000000:00000000 03:00000000 00000000     0        0 0 3 0\n",
                lo_hex, lo_hex, lo_hex, lo_hex, lo_hex, lo_hex);
  // ::1 port 40002 -> ::1 port 8888, uid 1002: four words, each printed as this machine's number.
  const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::string six;
  for (int w = 0; w < 4; ++w) {
    uint32_t v;
    std::memcpy(&v, one + w * 4, 4);
    char h[9];
    std::snprintf(h, sizeof h, "%08X", v);
    six += h;
  }
  const std::string tcp6 = "   0: " + six + ":9C42 " + six + ":22B8 01 00000000:00000000 00:00000000 00000000  1002        0 1 1 0\n";
  const std::string dir = table(tcp, tcp6.c_str());
  uint32_t uid = 0;
  std::string why;
  CHECK(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40000), uid, why, dir.c_str()));
  CHECK(uid == 1001);
  CHECK_FALSE(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40001), uid, why, dir.c_str()));  // TIME_WAIT
  CHECK_FALSE(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40003), uid, why, dir.c_str()));  // FIN_WAIT2, timer 3
  CHECK_FALSE(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40009), uid, why, dir.c_str()));  // none
  CHECK(why.find("cannot identify the connecting user") != std::string::npos);
  sockaddr_storage l6{}, p6{};
  auto& l = reinterpret_cast<sockaddr_in6&>(l6);
  auto& p = reinterpret_cast<sockaddr_in6&>(p6);
  l.sin6_family = p.sin6_family = AF_INET6;
  l.sin6_addr = p.sin6_addr = in6addr_loopback;
  l.sin6_port = htons(8888);
  p.sin6_port = htons(40002);
  CHECK(peer_uid_proc_net(l6, p6, uid, why, dir.c_str()));
  CHECK(uid == 1002);
  std::remove((dir + "/tcp").c_str());
  std::remove((dir + "/tcp6").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("peer_uid_proc_net: a long table read in pieces, and a row hidden in an overlong line is no row",
          "[command][server]") {
  const uint32_t lo = htonl(INADDR_LOOPBACK);
  char lo_hex[9];
  std::snprintf(lo_hex, sizeof lo_hex, "%08X", lo);
  auto row = [&](int sl, unsigned port, unsigned uid) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "%4d: %s:%04X %s:22B8 01 00000000:00000000 00:00000000 00000000 %5u        0 %d 1 0\n", sl,
                  lo_hex, port, lo_hex, uid, sl);
    return std::string(line);
  };
  // 300 other connections (~45 KB: many reads of the bounded buffer) before the peer's row, uid 1007.
  std::string tcp;
  for (int i = 0; i < 300; ++i) tcp += row(i, 20000 + static_cast<unsigned>(i), 5000);
  tcp += row(300, 40007, 1007);
  // A line longer than any row (1533 bytes of junk) whose tail looks like a row for port 40004: a
  // reader that cuts long lines into pieces (fgets into 512 bytes) takes the tail for a row of uid 4242.
  tcp += std::string(1533, 'x') + row(301, 40004, 4242);
  // The last row without its newline is still a row.
  std::string last = row(302, 40005, 1005);
  last.pop_back();
  tcp += last;
  const std::string dir = table(tcp.c_str(), "");
  uint32_t uid = 0;
  std::string why;
  CHECK(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40007), uid, why, dir.c_str()));
  CHECK(uid == 1007);
  uid = 0;
  CHECK_FALSE(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40004), uid, why, dir.c_str()));
  CHECK(uid == 0);
  CHECK(peer_uid_proc_net(v4("127.0.0.1", 8888), v4("127.0.0.1", 40005), uid, why, dir.c_str()));
  CHECK(uid == 1005);
  std::remove((dir + "/tcp").c_str());
  std::remove((dir + "/tcp6").c_str());
  ::rmdir(dir.c_str());
}
