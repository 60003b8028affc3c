// The TCP command port (docs/command-port.md): a small line protocol served from the agent's helper
// thread with poll(). Every descriptor is non-blocking and close-on-exec; nothing here ever blocks,
// so no client (garbage, endless lines, one that never reads, hundreds of connections) can hold up
// the flush rounds or the program.
//
// Two layers:
//  * CommandSession: the protocol of one connection, bytes in -> answer bytes out, no sockets (unit
//    tests drive it directly);
//  * CommandServer: the listening socket and the clients, driven by the helper's poll loop.
// What a command does to the agent goes through CommandHandlers, so tests use fakes and the agent
// wires the real hooks.
#pragma once

#include <poll.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlpd::agent {

inline constexpr size_t kMaxCommandLine = 1024;          // bytes of one command, without its \r\n
inline constexpr size_t kMaxCommandClients = 64;         // more connections get ERR and are closed
inline constexpr size_t kCommandReadChunk = 4096;        // bytes read from one client per poll round
inline constexpr size_t kCommandOutputHigh = 16 * 1024;  // unsent answers beyond this: stop reading
inline constexpr int64_t kCommandIdleMs = 120 * 1000;    // no progress for this long: closed
// Port full: a client (not waiting for an answer) that has sent no command for this long -- since it
// connected or since its last command, however many bytes of an unfinished line it trickled -- makes room.
inline constexpr int64_t kCommandEvictIdleMs = 5 * 1000;
inline constexpr int64_t kHeapshotWaitMs = 30 * 1000;    // `heapshot` answers ERR after this long

struct CommandHandlers {
  // Heapshots (the heapshot engine): `request_heapshot` asks for one and returns a ticket, the
  // sequence number of the heapshot that will satisfy the request (0: refused); `heapshots_done`
  // counts the heapshots fully written. The answer `OK heapshot N` is sent once done >= ticket.
  // Either null: `ERR heapshot: not available in this build`.
  std::function<uint64_t()> request_heapshot;
  std::function<uint64_t()> heapshots_done;
  // Why `request_heapshot` refused while profiling runs ("": profiling has stopped); may be null.
  std::function<std::string()> heapshot_refusal;
  // The statistics line after "OK " (key=value pairs).
  std::function<std::string()> stats;
  // The event mask (format::MASK_*), read and changed at run time.
  std::function<uint32_t()> event_mask;
  std::function<void(uint32_t)> set_event_mask;
  // Enter/leave events: only when instrumented at start (`calls`); switched off by a call depth of 0.
  std::function<bool()> calls_enabled;
  std::function<uint32_t()> call_depth;
  std::function<void(uint32_t)> set_call_depth;
  // Flight recorder (`ring=`): writes a dump to FILE (empty: the default name) and returns the answer
  // line, `OK dump FILE BYTES` or `ERR dump: reason`. Null: `ERR dump: ...` (no ring).
  std::function<std::string(const std::string&)> dump;
  // `pause` / `resume` (hooks::pause/resume): true when the state changed, false when it already was so.
  std::function<bool()> pause;
  std::function<bool()> resume;
  uint32_t start_call_depth = 100;  // what `+calls` restores when nothing else was seen
  bool compat = true;               // event names mean what they meant in the option string
  int64_t heapshot_wait_ms = kHeapshotWaitMs;
  // Who may use the port (peers identified with NETLINK_SOCK_DIAG, see peer_uid()): the agent's
  // effective uid, root, and the uids listed here; everyone when allow_any_user.
  bool allow_any_user = false;
  std::vector<uint32_t> allowed_uids;
};

// The owner uid of the peer socket of a TCP connection `fd` made from this host (loopback or one of
// its own addresses): asked from the kernel over NETLINK_SOCK_DIAG (inet_diag). False, with the
// reason in `why`, when the peer cannot be identified: a remote host, a peer that has already closed
// its socket (a TIME_WAIT entry has no owner), no sock_diag support.
bool peer_uid(int fd, uint32_t& uid, std::string& why);

// Shared state of the sessions of one server: the flush requests to coalesce.
struct CommandShared {
  const CommandHandlers* handlers = nullptr;
  bool flush_wanted = false;  // a session waits for the next flush round
  uint64_t flush_rounds = 0;  // flush rounds completed for sessions (a waiting session holds the target)
  bool flush_ok = true;       // the last round wrote everything
  uint32_t saved_call_depth = 0;  // the depth `-calls` replaced (0: none yet)
};

// One connection's protocol.
class CommandSession {
 public:
  CommandSession(CommandShared& shared, int64_t now_ms)
      : shared_(shared), last_progress_(now_ms), last_command_(now_ms) {}

  // Bytes from the client. Complete lines are run at once unless an earlier command is still waiting.
  void feed(const char* data, size_t size, int64_t now_ms);
  // The client sent EOF: no more input; the session ends once everything is answered and sent.
  void input_closed(int64_t now_ms);
  // Resolves a waiting command (heapshot done or timed out, flush round done) and runs the lines
  // that queued up behind it. Call after every poll round.
  void advance(int64_t now_ms);

  // Answer bytes not yet sent; consume() removes what was sent.
  const std::string& output() const { return out_; }
  void consume(size_t n, int64_t now_ms);

  // Reading more now would be useful (nothing waiting, output not backed up, no line queued).
  bool wants_input() const;
  // All done: input closed, nothing waiting, everything sent.
  bool finished() const { return input_closed_ && !waiting() && in_.empty() && out_.empty(); }
  bool waiting() const { return wait_ != Wait::None; }
  int64_t last_progress() const { return last_progress_; }
  // When the client connected or last sent a known command (the port-full eviction's clock).
  int64_t last_command() const { return last_command_; }
  // Ends a waiting command with an error (the server stops: agent shutdown).
  void abort_waiting(std::string_view why);

 private:
  enum class Wait { None, Heapshot, HeapshotFlush, Flush };
  void run_lines(int64_t now_ms);
  void run(std::string_view line, int64_t now_ms);
  void events(std::string_view args);
  void answer(std::string_view line);

  CommandShared& shared_;
  std::string in_;
  std::string out_;
  bool discarding_ = false;  // after a too-long line: dropping bytes up to the next newline
  bool input_closed_ = false;
  Wait wait_ = Wait::None;
  uint64_t wait_target_ = 0;    // heapshot ticket, or the flush round to complete
  uint64_t heapshot_ticket_ = 0;  // HeapshotFlush: the heapshot taken, answered once it is in the file
  int64_t wait_deadline_ = 0;   // heapshot: when to give up
  int64_t last_progress_ = 0;   // last input, output or answer (idle timeout)
  int64_t last_command_ = 0;    // connect or last known command (eviction when the port is full)
};

// Quotes text from a client for an answer: at most `max` bytes, non-printable bytes as \xNN, ...
// when cut.
std::string quote_client_text(std::string_view text, size_t max = 64);

// The listening socket and its clients. Single-threaded: every call from the helper thread.
class CommandServer {
 public:
  explicit CommandServer(CommandHandlers handlers);
  ~CommandServer();
  CommandServer(const CommandServer&) = delete;
  CommandServer& operator=(const CommandServer&) = delete;

  // Binds `address` (numeric IPv4 or IPv6) on `port` (0: any free port) and listens. On failure
  // returns false with one line in `error` (naming address and port) and leaves nothing open.
  bool start(const std::string& address, uint16_t port, std::string& error);
  bool listening() const { return listen_fd_ >= 0; }
  uint16_t port() const { return port_; }
  std::string endpoint() const;  // "127.0.0.1:PORT" or "[::1]:PORT"

  // Appends the descriptors to poll (the listener and the clients) to `fds`.
  void add_pollfds(std::vector<pollfd>& fds, int64_t now_ms);
  // Handles the poll results of the descriptors add_pollfds() appended (`fds`, `count` of them),
  // accepts, reads, runs commands, writes, times out, closes. Bounded work per call.
  void service(const pollfd* fds, size_t count, int64_t now_ms);
  // A client asked `flush`: the caller runs a live flush round and then calls flush_done().
  bool flush_wanted() const { return shared_.flush_wanted; }
  void flush_done(bool ok, int64_t now_ms);

  // Answers what still waits with ERR, sends what can be sent without blocking, closes everything.
  void stop();
  // Fork child: closes the descriptors (close, never shutdown: the parent still serves them).
  void forget_after_fork();
  size_t clients() const { return clients_.size(); }

 private:
  struct Client {
    int fd;
    size_t slot;  // in slots_
    std::unique_ptr<CommandSession> session;
  };
  void close_client(Client& c);
  void accept_all(int64_t now_ms);
  // The peer of `fd` may use the port; otherwise `why` is the ERR line's text.
  bool permitted(int fd, std::string& why) const;
  // False when the client is to be closed.
  bool read_client(Client& c, int64_t now_ms);
  bool write_client(Client& c, int64_t now_ms);

  CommandHandlers handlers_;
  CommandShared shared_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::string address_;
  bool ipv6_ = false;
  std::vector<Client> clients_;
  size_t polled_clients_ = 0;  // clients_[0..polled_clients_) were in the last add_pollfds
  bool listen_polled_ = false;  // the listener was in the last add_pollfds (first)
  int64_t accept_pause_until_ = 0;
  bool forgotten_ = false;  // forget_after_fork() ran
  // Every open descriptor (0: the listener), for the fork child, which must not walk clients_.
  std::array<std::atomic<int>, kMaxCommandClients + 1> slots_;
};

}  // namespace mlpd::agent
