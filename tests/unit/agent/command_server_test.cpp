// The command port with fake handlers: the line protocol (CommandSession, no sockets) and the server
// on real loopback sockets (CommandServer driven by a poll loop in the test).
#include "mlpd_catch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mlpd/agent/command_server.h"
#include "mlpd/format.h"

using namespace mlpd::agent;
using namespace mlpd::format;

namespace {

// Fake agent state behind the handlers.
struct Fake {
  uint32_t mask = MASK_EXCEPTION | MASK_COUNTER;
  bool calls = false;
  uint32_t depth = 100;
  uint64_t requested = 0;  // request_heapshot calls
  uint64_t done = 0;       // heapshots_done
  uint64_t ticket = 1;     // what request_heapshot returns
  bool paused = false;

  CommandHandlers handlers(bool heapshots = true) {
    CommandHandlers h;
    if (heapshots) {
      h.request_heapshot = [this] {
        ++requested;
        return ticket;
      };
      h.heapshots_done = [this] { return done; };
    }
    h.stats = [] { return std::string("bytes=1 buffers=2"); };
    h.event_mask = [this] { return mask; };
    h.set_event_mask = [this](uint32_t m) { mask = m; };
    h.calls_enabled = [this] { return calls; };
    h.call_depth = [this] { return depth; };
    h.set_call_depth = [this](uint32_t d) { depth = d; };
    h.pause = [this] { return !std::exchange(paused, true); };
    h.resume = [this] { return std::exchange(paused, false); };
    h.start_call_depth = 100;
    h.heapshot_wait_ms = 1000;
    return h;
  }
};

struct Harness {
  Fake fake;
  CommandHandlers handlers;
  CommandShared shared;
  CommandSession session;
  explicit Harness(bool heapshots = true, bool compat = true)
      : handlers(fake.handlers(heapshots)), shared(make_shared(handlers, compat)), session(shared, 0) {}
  static CommandShared make_shared(CommandHandlers& h, bool compat) {
    h.compat = compat;
    CommandShared s;
    s.handlers = &h;
    return s;
  }
  void feed(std::string_view s, int64_t now = 0) { session.feed(s.data(), s.size(), now); }
  // Everything answered so far, taken out of the session.
  std::string take() {
    std::string out = session.output();
    session.consume(out.size(), 0);
    return out;
  }
};

}  // namespace

TEST_CASE("command lines: split anywhere, several per read, CR LF, blank lines ignored", "[command]") {
  Harness h;
  h.feed("he");
  CHECK(h.take().empty());
  h.feed("lp\r\nstats\n\n  \r\nsta");
  const std::string out = h.take();
  CHECK(out.rfind("OK commands: ", 0) == 0);
  CHECK(out.find("\nOK bytes=1 buffers=2\n") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);  // blank lines get no answer
  h.feed("ts\n");
  CHECK(h.take() == "OK bytes=1 buffers=2\n");
  h.feed("  stats  \t\n");
  CHECK(h.take() == "OK bytes=1 buffers=2\n");
}

TEST_CASE("command lines: every command gets exactly one line", "[command]") {
  Harness h;
  h.feed("help\nstats\nevents\nbogus\nheapshot x\nflush y\nstats z\nevents *gc\n");
  const std::string out = h.take();
  CHECK(std::count(out.begin(), out.end(), '\n') == 8);
  CHECK(out.find("ERR heapshot takes no arguments\n") != std::string::npos);
  CHECK(out.find("ERR flush takes no arguments\n") != std::string::npos);
  CHECK(out.find("ERR stats takes no arguments\n") != std::string::npos);
}

TEST_CASE("command lines: garbage is quoted, escaped and cut short", "[command]") {
  Harness h;
  h.feed(std::string("foo\x01\xff'\\ bar\n", 12));
  CHECK(h.take() == "ERR unknown command 'foo\\x01\\xFF\\x27\\x5C bar' (try help)\n");
  h.feed(std::string(300, 'a') + "\n");
  CHECK(h.take() == "ERR unknown command '" + std::string(64, 'a') + "...' (try help)\n");
  h.feed(std::string("\0\0\n", 3));
  CHECK(h.take() == "ERR unknown command '\\x00\\x00' (try help)\n");
  h.feed("HELP\n");  // commands are lower case
  CHECK(h.take().rfind("ERR unknown command 'HELP'", 0) == 0);
}

TEST_CASE("command lines: the length limit", "[command]") {
  Harness h;
  // Exactly kMaxCommandLine bytes (with \r\n) is a command; one more is too long.
  h.feed(std::string(kMaxCommandLine, 'x') + "\r\n");
  CHECK(h.take().rfind("ERR unknown command 'xxx", 0) == 0);
  h.feed(std::string(kMaxCommandLine + 1, 'x') + "\nhelp\n");
  std::string out = h.take();
  CHECK(out.rfind("ERR line too long\nOK commands:", 0) == 0);
  // An endless line, in many reads: one ERR, nothing kept, then the next line is served.
  for (int i = 0; i < 1000; ++i) {
    h.feed(std::string(4096, 'y'));
    CHECK(h.session.wants_input());
  }
  CHECK(h.take() == "ERR line too long\n");
  h.feed("yyy\nstats\n");
  CHECK(h.take() == "OK bytes=1 buffers=2\n");
}

TEST_CASE("command lines: EOF runs a last line without newline, then the session ends", "[command]") {
  Harness h;
  h.feed("stats\nhelp");
  CHECK(h.take() == "OK bytes=1 buffers=2\n");
  CHECK_FALSE(h.session.finished());
  h.session.input_closed(0);
  CHECK(h.take().rfind("OK commands:", 0) == 0);
  CHECK(h.session.finished());
  CHECK_FALSE(h.session.wants_input());
}

TEST_CASE("heapshot: answered once the ticket's heapshot is written - later commands wait their turn", "[command]") {
  Harness h;
  h.fake.ticket = 5;
  h.fake.done = 3;
  h.feed("heapshot\nstats\n", 10);
  CHECK(h.fake.requested == 1);
  CHECK(h.take().empty());
  CHECK(h.session.waiting());
  CHECK_FALSE(h.session.wants_input());  // the queued line stays in the kernel/buffer meanwhile
  h.session.advance(500);
  CHECK(h.take().empty());
  h.fake.done = 4;
  h.session.advance(600);
  CHECK(h.take().empty());
  h.fake.done = 5;
  h.session.advance(700);
  // Taken; answered once a flush round has put it into the file.
  CHECK(h.take().empty());
  CHECK(h.shared.flush_wanted);
  h.session.advance(750);
  CHECK(h.take().empty());
  h.shared.flush_wanted = false;
  ++h.shared.flush_rounds;
  h.session.advance(800);
  CHECK(h.take() == "OK heapshot 5\nOK bytes=1 buffers=2\n");
  CHECK_FALSE(h.session.waiting());
}

TEST_CASE("heapshot: times out, refused ticket, not available", "[command]") {
  Harness h;
  h.fake.ticket = 2;
  h.feed("heapshot\n", 0);
  h.session.advance(999);
  CHECK(h.take().empty());
  h.session.advance(1000);
  CHECK(h.take() == "ERR heapshot timed out\n");
  h.fake.ticket = 0;
  h.feed("heapshot\n", 0);
  CHECK(h.take() == "ERR heapshot: not possible now (profiling has stopped)\n");

  Harness none(false);
  none.feed("heapshot\n");
  CHECK(none.take() == "ERR heapshot: not available in this build\n");
  CHECK(none.fake.requested == 0);
}

TEST_CASE("flush: waits for the next flush round - its result is the answer", "[command]") {
  Harness h;
  h.feed("flush\nstats\n");
  CHECK(h.shared.flush_wanted);
  CHECK(h.take().empty());
  h.session.advance(1);
  CHECK(h.take().empty());
  h.shared.flush_wanted = false;
  ++h.shared.flush_rounds;
  h.session.advance(2);
  CHECK(h.take() == "OK flush\nOK bytes=1 buffers=2\n");
  h.feed("flush\n");
  h.shared.flush_ok = false;
  ++h.shared.flush_rounds;
  h.session.advance(3);
  CHECK(h.take() == "ERR flush: the output failed; profiling stopped\n");
}

TEST_CASE("events: list and change the mask with the option names", "[command]") {
  Harness h;  // compat: alloc also means gcroot
  h.feed("events\n");
  CHECK(h.take() == "OK events: exception counter\n");
  h.feed("events +alloc -exception\n");
  CHECK(h.take() == "OK events: gc gcalloc gcmove gcroot counter\n");
  CHECK(h.fake.mask == (MASK_GC | MASK_GC_ALLOC | MASK_GC_MOVE | MASK_GC_ROOT | MASK_COUNTER));
  h.feed("events -alloc -counter\n");
  CHECK(h.take() == "OK events: none\n");
  CHECK(h.fake.mask == 0);
  h.feed("events +counters +gcalloc\n");
  CHECK(h.take() == "OK events: gcalloc counter\n");
  // A mistake anywhere changes nothing.
  const uint32_t before = h.fake.mask;
  h.feed("events +monitor +nonsense\n");
  CHECK(h.take() == "ERR events: unknown event 'nonsense' (try help)\n");
  h.feed("events +monitor gc\n");
  CHECK(h.take() == "ERR events: expected +NAME or -NAME, not 'gc' (try help)\n");
  h.feed("events +monitor +calls\n");
  CHECK(h.take() == "ERR events: calls can only be switched on when the agent was started with 'calls'\n");
  CHECK(h.fake.mask == before);
  // The issue's own example: -calls without instrumentation is already true, and +alloc applies.
  h.feed("events +monitor -calls\n");
  CHECK(h.take() == "OK events: monitor gcalloc counter\n");
  h.feed("events -monitor\n");
  CHECK(h.take() == "OK events: gcalloc counter\n");
  CHECK(h.fake.mask == before);
  // Bits without a name (sampling) survive a change.
  h.fake.mask |= MASK_SAMPLE;
  h.feed("events -gcalloc\n");
  CHECK(h.take() == "OK events: counter\n");
  CHECK(h.fake.mask == (MASK_COUNTER | MASK_SAMPLE));

  Harness nd(true, false);  // nodefaults: alloc is gc gcalloc gcmove only
  nd.feed("events +alloc\n");
  CHECK(nd.take() == "OK events: exception gc gcalloc gcmove counter\n");
}

TEST_CASE("events: calls off and on again when instrumented at start", "[command]") {
  Harness h;
  h.fake.calls = true;
  h.fake.depth = 7;
  h.feed("events\n");
  CHECK(h.take() == "OK events: exception counter calls\n");
  h.feed("events -calls\n");
  CHECK(h.take() == "OK events: exception counter\n");
  CHECK(h.fake.depth == 0);
  h.feed("events -calls\n");  // twice off keeps the depth to restore
  CHECK(h.take() == "OK events: exception counter\n");
  h.feed("events +calls\n");
  CHECK(h.take() == "OK events: exception counter calls\n");
  CHECK(h.fake.depth == 7);
}

TEST_CASE("output backpressure: a client that sends much and reads nothing is not read further", "[command]") {
  Harness h;
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "x\n";
  h.feed(many);
  const size_t out = h.session.output().size();
  CHECK(out >= kCommandOutputHigh);
  CHECK(out < kCommandOutputHigh + 200);
  CHECK_FALSE(h.session.wants_input());
  // What it takes frees the queued lines.
  size_t lines = 0;
  for (int i = 0; i < 100 && !h.session.output().empty(); ++i) {
    const std::string o = h.take();
    lines += static_cast<size_t>(std::count(o.begin(), o.end(), '\n'));
    h.session.advance(0);
  }
  CHECK(lines == 2000);
  CHECK(h.session.wants_input());
}

// --- the server on loopback sockets

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs the server's poll loop for `ms` milliseconds (or until `until` holds).
template <typename Until>
void drive(CommandServer& s, int ms, Until until) {
  const int64_t end = now_ms() + ms;
  std::vector<pollfd> fds;
  while (now_ms() < end && !until()) {
    fds.clear();
    s.add_pollfds(fds, now_ms());
    ::poll(fds.data(), fds.size(), 10);
    s.service(fds.data(), fds.size(), now_ms());
    if (s.flush_wanted()) s.flush_done(true, now_ms());
  }
}
void drive(CommandServer& s, int ms) {
  drive(s, ms, [] { return false; });
}

int connect_to(uint16_t port, int rcvbuf = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // before connect: small window
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the peer sent so far (non-blocking).
std::string received(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

void send_all(int fd, std::string_view s) { REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size())); }

}  // namespace

TEST_CASE("server: listens on loopback, ephemeral port, answers several clients", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  CHECK(s.port() != 0);
  CHECK(s.endpoint() == "127.0.0.1:" + std::to_string(s.port()));
  const int a = connect_to(s.port());
  const int b = connect_to(s.port());
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  send_all(a, "sta");
  send_all(b, "help\n");
  std::string got_a, got_b;
  drive(s, 300, [&] { return !(got_b += received(b)).empty(); });
  CHECK(got_b.rfind("OK commands:", 0) == 0);
  send_all(a, "ts\r\nflush\n");
  drive(s, 2000, [&] { return (got_a += received(a)).find("OK flush\n") != std::string::npos; });
  CHECK(got_a == "OK bytes=1 buffers=2\nOK flush\n");
  CHECK(s.clients() == 2);
  ::close(a);
  ::close(b);
  drive(s, 2000, [&] { return s.clients() == 0; });
  CHECK(s.clients() == 0);
}

TEST_CASE("server: a busy port fails with one line naming it", "[command][server]") {
  Fake fake;
  CommandServer first(fake.handlers());
  std::string error;
  REQUIRE(first.start("127.0.0.1", 0, error));
  CommandServer second(fake.handlers());
  CHECK_FALSE(second.start("127.0.0.1", first.port(), error));
  CHECK(error == "cannot listen on 127.0.0.1:" + std::to_string(first.port()) + ": Address already in use");
  CHECK_FALSE(second.listening());
  CHECK_FALSE(second.start("localhost", 0, error));
  CHECK(error == "'localhost' is not a numeric IPv4 or IPv6 address");
}

TEST_CASE("server: IPv6 loopback", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  if (!s.start("::1", 0, error)) {
    WARN("no IPv6 loopback here: " << error);
    return;
  }
  CHECK(s.endpoint() == "[::1]:" + std::to_string(s.port()));
}

TEST_CASE("server: more than the cap of connections get ERR and are closed - the others are served", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  std::vector<int> fds;
  for (size_t i = 0; i < kMaxCommandClients + 10; ++i) {
    fds.push_back(connect_to(s.port()));
    REQUIRE(fds.back() >= 0);
    drive(s, 5);  // accept as they come (the backlog is short)
  }
  drive(s, 3000, [&] { return s.clients() == kMaxCommandClients; });
  drive(s, 200);
  CHECK(s.clients() == kMaxCommandClients);
  size_t refused = 0;
  for (const int fd : fds) {
    if (received(fd) == "ERR too many connections\n") ++refused;
  }
  CHECK(refused == 10);
  send_all(fds.front(), "stats\n");
  std::string got;
  drive(s, 2000, [&] { return !(got += received(fds.front())).empty(); });
  CHECK(got == "OK bytes=1 buffers=2\n");
  for (const int fd : fds) ::close(fd);
}

TEST_CASE("server: when full, the client idle longest makes room for a new one", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  // The server's clock, moved forward by hand: `skew` ms ahead of real time.
  int64_t skew = 0;
  auto step = [&](int ms) {
    const int64_t end = now_ms() + ms;
    std::vector<pollfd> fds;
    while (now_ms() < end) {
      fds.clear();
      s.add_pollfds(fds, now_ms() + skew);
      ::poll(fds.data(), fds.size(), 10);
      s.service(fds.data(), fds.size(), now_ms() + skew);
    }
  };
  std::vector<int> fds;
  for (size_t i = 0; i < kMaxCommandClients; ++i) {
    fds.push_back(connect_to(s.port()));
    REQUIRE(fds.back() >= 0);
    step(5);
  }
  step(100);
  REQUIRE(s.clients() == kMaxCommandClients);
  // Busy: all idle for less than the eviction age, so a newcomer is refused.
  const int late = connect_to(s.port());
  step(100);
  CHECK(received(late) == "ERR too many connections\n");
  ::close(late);
  // Everyone idle for 11 s but the last one, which just spoke: the first one (idle longest) goes.
  skew = kCommandEvictIdleMs + 1000;
  send_all(fds.back(), "stats\n");
  step(100);
  CHECK(received(fds.back()) == "OK bytes=1 buffers=2\n");
  const int newcomer = connect_to(s.port());
  step(100);
  CHECK(received(fds.front()) == "ERR closed: idle while the port is full\n");
  CHECK(s.clients() == kMaxCommandClients);
  send_all(newcomer, "stats\n");
  step(100);
  CHECK(received(newcomer) == "OK bytes=1 buffers=2\n");
  for (const int fd : fds) ::close(fd);
  ::close(newcomer);
}

TEST_CASE("server: trickled bytes that make no command keep no place when the port is full", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  int64_t skew = 0;
  auto step = [&](int ms) {
    const int64_t end = now_ms() + ms;
    std::vector<pollfd> fds;
    while (now_ms() < end) {
      fds.clear();
      s.add_pollfds(fds, now_ms() + skew);
      ::poll(fds.data(), fds.size(), 10);
      s.service(fds.data(), fds.size(), now_ms() + skew);
    }
  };
  std::vector<int> fds;
  for (size_t i = 0; i < kMaxCommandClients; ++i) {
    fds.push_back(connect_to(s.port()));
    REQUIRE(fds.back() >= 0);
    step(5);
  }
  step(100);
  REQUIRE(s.clients() == kMaxCommandClients);
  // Every client sends a byte each "second" for longer than the eviction age, never a newline, and
  // one sends garbage lines: none of that is a command.
  for (int64_t t = 0; t <= kCommandEvictIdleMs; t += 1000) {
    skew = t;
    for (const int fd : fds) send_all(fd, fd == fds[1] ? "x\n" : "s");
    step(20);
  }
  const int newcomer = connect_to(s.port());
  step(100);
  size_t evicted = 0;
  for (const int fd : fds) {
    if (received(fd).find("ERR closed: idle while the port is full\n") != std::string::npos) ++evicted;
  }
  CHECK(evicted == 1);
  send_all(newcomer, "stats\n");
  step(100);
  CHECK(received(newcomer) == "OK bytes=1 buffers=2\n");
  for (const int fd : fds) ::close(fd);
  ::close(newcomer);
}

namespace {

// A listener on 127.0.0.1 and one connection to it: {listener, client, accepted}.
struct Pair {
  int listener = -1, client = -1, accepted = -1;
  uint16_t port = 0;
  Pair() {
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener, 4) == 0);
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~Pair() {
    for (const int fd : {listener, client, accepted})
      if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST_CASE("peer_uid: the owner of a loopback peer's socket, none for a peer already gone", "[command][server]") {
  Pair p;
  p.client = connect_to(p.port);
  REQUIRE(p.client >= 0);
  p.accepted = ::accept(p.listener, nullptr, nullptr);
  REQUIRE(p.accepted >= 0);
  uint32_t uid = 12345;
  std::string why;
  REQUIRE(peer_uid(p.accepted, uid, why));
  CHECK(uid == ::geteuid());

  // The peer closed before it was identified: its TIME_WAIT entry has no owner (reports uid 0).
  const int gone = connect_to(p.port);
  ::close(gone);
  const int accepted = ::accept(p.listener, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  ::usleep(50 * 1000);
  CHECK_FALSE(peer_uid(accepted, uid, why));
  CHECK(why.find("cannot identify the connecting user") != std::string::npos);
  ::close(accepted);
}

TEST_CASE("server: a client of another user gets one ERR line and changes nothing", "[command][server]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot run a client as another user");
    return;
  }
  for (const bool allowed : {false, true}) {
    Fake fake;
    CommandHandlers h = fake.handlers();
    if (allowed) h.allowed_uids = {65534};
    CommandServer s(std::move(h));
    std::string error;
    REQUIRE(s.start("127.0.0.1", 0, error));
    int pipefd[2];
    REQUIRE(::pipe(pipefd) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // uid and gid 65534 (nobody): connect, ask, pass the answer to the parent.
      ::close(pipefd[0]);
      if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
      const int fd = connect_to(s.port());
      if (fd < 0) ::_exit(4);
      (void)!::send(fd, "flush\n", 6, MSG_NOSIGNAL);
      char buf[512];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) (void)!::write(pipefd[1], buf, static_cast<size_t>(n));
      ::_exit(0);
    }
    ::close(pipefd[1]);
    int status = 0;
    drive(s, 5000, [&] { return ::waitpid(child, &status, WNOHANG) == child; });
    std::string got;
    char buf[512];
    for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(pipefd[0]);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    if (allowed) {
      CHECK(got == "OK flush\n");
    } else {
      CHECK(got == "ERR permission denied: uid 65534 may not use this port (option port-allow=UID:UID... or "
                   "port-allow=any)\n");
      CHECK_FALSE(s.flush_wanted());
    }
  }
}

TEST_CASE("server: a Mono-style client (heapshot, then close at once) does no harm", "[command][server]") {
  Fake fake;
  fake.ticket = 1;
  fake.done = 0;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  for (size_t i = 0; i < 3; ++i) {
    const int fd = connect_to(s.port());
    // Accepted (and its user identified) while connected; one gone before that cannot be identified.
    drive(s, 2000, [&] { return s.clients() == i + 1; });
    send_all(fd, "heapshot\n");
    ::close(fd);
  }
  drive(s, 300, [&] { return fake.requested == 3; });
  CHECK(fake.requested == 3);
  fake.done = 1;  // the heapshot is written: the answers go to closed sockets (no SIGPIPE)
  drive(s, 2000, [&] { return s.clients() == 0; });
  CHECK(s.clients() == 0);
  // Still serving.
  const int fd = connect_to(s.port());
  send_all(fd, "heapshot\n");
  std::string got;
  drive(s, 2000, [&] { return !(got += received(fd)).empty(); });
  CHECK(got == "OK heapshot 1\n");
  ::close(fd);
}

TEST_CASE("server: stop answers waiting clients - the fork child's copy closes the port", "[command][server]") {
  Fake fake;
  fake.ticket = 9;
  auto s = std::make_unique<CommandServer>(fake.handlers());
  std::string error;
  REQUIRE(s->start("127.0.0.1", 0, error));
  const uint16_t port = s->port();
  const int fd = connect_to(port);
  send_all(fd, "heapshot\n");
  drive(*s, 300, [&] { return fake.requested == 1; });
  s->stop();
  std::string got;
  for (int i = 0; i < 100 && got.empty(); ++i) {
    got += received(fd);
    ::usleep(5000);
  }
  CHECK(got == "ERR the profiler is shutting down\n");
  ::close(fd);
  CHECK(connect_to(port) < 0);

  CommandServer t(fake.handlers());
  REQUIRE(t.start("127.0.0.1", 0, error));
  const uint16_t port2 = t.port();
  t.forget_after_fork();
  CHECK_FALSE(t.listening());
  CHECK(connect_to(port2) < 0);
}

TEST_CASE("server: idle clients and clients whose answers stay stuck are closed", "[command][server]") {
  Fake fake;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  const int idle = connect_to(s.port());
  const int busy = connect_to(s.port());
  drive(s, 2000, [&] { return s.clients() == 2; });
  REQUIRE(s.clients() == 2);
  // One service round at a fake time: `step(ms)` runs the server `ms` after now.
  auto step = [&](int64_t later) {
    std::vector<pollfd> fds;
    s.add_pollfds(fds, now_ms() + later);
    ::poll(fds.data(), fds.size(), 10);
    s.service(fds.data(), fds.size(), now_ms() + later);
  };
  step(kCommandIdleMs / 2);
  CHECK(s.clients() == 2);
  send_all(busy, "stats\n");
  step(kCommandIdleMs / 2);
  CHECK(received(busy) == "OK bytes=1 buffers=2\n");
  step(kCommandIdleMs + 1000);  // the idle one has done nothing since it connected
  CHECK(s.clients() == 1);
  char c;
  CHECK(::recv(idle, &c, 1, 0) == 0);  // closed by the server
  ::close(idle);
  ::close(busy);

  // A client that never reads: its answers back up (the kernel buffers fill first), then it is closed.
  const int slow = connect_to(s.port(), 4096);
  drive(s, 2000, [&] { return s.clients() == 1; });
  std::string lots;
  for (int i = 0; i < 4000; ++i) lots += "help\n";
  // Fake time runs 1 s per round: the answers flow into the kernel's buffers (megabytes on
  // loopback) until those are full; 10 s (rounds) after that, the client is closed.
  int64_t later = 0;
  int rounds = 0;
  for (; rounds < 20000 && s.clients() == 1; ++rounds) {
    (void)::send(slow, lots.data(), lots.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    later += 1000;
    step(later);
  }
  INFO("rounds " << rounds);
  CHECK(s.clients() == 0);
  CHECK(rounds > 11);
  ::close(slow);
}

TEST_CASE("server: a waiting heapshot holds up only its own connection", "[command][server]") {
  Fake fake;
  fake.ticket = 3;
  fake.done = 2;
  CommandServer s(fake.handlers());
  std::string error;
  REQUIRE(s.start("127.0.0.1", 0, error));
  const int a = connect_to(s.port());
  const int b = connect_to(s.port());
  send_all(a, "heapshot\nstats\n");
  drive(s, 2000, [&] { return fake.requested == 1; });
  send_all(b, "stats\nflush\n");
  std::string got_a, got_b;
  drive(s, 2000, [&] { return (got_b += received(b)).find("OK flush\n") != std::string::npos; });
  CHECK(got_b == "OK bytes=1 buffers=2\nOK flush\n");
  got_a += received(a);
  CHECK(got_a.empty());
  fake.done = 3;
  drive(s, 2000, [&] { return (got_a += received(a)).find("OK bytes") != std::string::npos; });
  CHECK(got_a == "OK heapshot 3\nOK bytes=1 buffers=2\n");
  ::close(a);
  ::close(b);
}

TEST_CASE("pause and resume: answered once in effect, twice is no error", "[command]") {
  Harness h;
  h.feed("pause\n");
  CHECK(h.take() == "OK paused\n");
  CHECK(h.fake.paused);
  h.feed("pause\nresume\nresume\n");
  CHECK(h.take() == "OK paused (already)\nOK resumed\nOK resumed (already)\n");
  CHECK(!h.fake.paused);
  h.feed("pause now\nresume x\n");
  CHECK(h.take() == "ERR pause takes no arguments\nERR resume takes no arguments\n");
  CHECK(!h.fake.paused);
  Harness none;
  none.handlers.pause = nullptr;
  none.handlers.resume = nullptr;
  none.feed("pause\nresume\n");
  CHECK(none.take() == "ERR pause: not available\nERR resume: not available\n");
}
