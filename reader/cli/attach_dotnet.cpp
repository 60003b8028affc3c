#include "attach_dotnet.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attach_proc.h"
#include "mlpd/runtime/attach_protocol.h"
#include "mlpd/utf16.h"

namespace mlpd::cli::attach_dotnet {

namespace {

using namespace attach_proc;
namespace protocol = runtime::attach_protocol;

constexpr uint32_t kAttachTimeoutMs = 10000;  // what the runtime is told to allow the profiler's start
constexpr int kReplyWaitMs = 30000;           // the agent's start (output opened, callbacks set)

int fail(const std::string& line) {
  std::fprintf(stderr, "mlpd: %s\n", line.c_str());
  return 1;
}

void put16(std::string& s, uint16_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>(v >> 8);
}
void put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A GUID's 16 bytes as the runtime reads them: u32, u16, u16 little-endian, then 8 bytes in order.
std::string guid_bytes(const char* braced) {
  std::vector<uint8_t> b;
  for (const char* p = braced; *p; ++p) {
    if (*p == '{' || *p == '}' || *p == '-') continue;
    const char hex[3] = {p[0], p[1], 0};
    b.push_back(static_cast<uint8_t>(std::strtoul(hex, nullptr, 16)));
    ++p;
  }
  std::string out;
  if (b.size() != 16) return out;
  for (int i : {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}) out += static_cast<char>(b[static_cast<size_t>(i)]);
  return out;
}

// Field 22 of /proc/PID/stat: the start time in clock ticks since boot (the runtime's socket key).
std::string start_ticks(long pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  size_t pos = close + 2;
  for (int field = 3; field < 22 && pos < stat.size(); ++field) {
    pos = stat.find(' ', pos);
    if (pos == std::string::npos) return {};
    ++pos;
  }
  return stat.substr(pos, stat.find(' ', pos) - pos);
}

std::string env_value(long pid, const char* name) {
  const std::string prefix = std::string(name) + "=";
  for (const std::string& e : proc_words(pid, "environ"))
    if (e.rfind(prefix, 0) == 0) return e.substr(prefix.size());
  return {};
}

// The process's temporary directory as it sees it (the runtime's GetTempPath: TMPDIR, else /tmp).
std::string temp_dir(long pid) {
  std::string dir = env_value(pid, "TMPDIR");
  if (dir.empty() || dir[0] != '/') dir = "/tmp";
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Where we see the process's files: "" (the same mount namespace) or /proc/PID/root.
std::string root_of(long pid) {
  struct stat ours{}, theirs{};
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  if (stat("/", &ours) == 0 && stat((root + "/").c_str(), &theirs) == 0 &&
      (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino))
    return root;
  return {};
}

bool read_full(int fd, std::string& out, size_t want, int wait_ms) {
  char buf[256];
  while (out.size() < want) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, want - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
  }
  return true;
}

std::string hresult_text(int32_t hr) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(hr));
  switch (static_cast<uint32_t>(hr)) {
    case 0x8013136Au: return std::string(text) + ": another profiler is loaded in the process";
    case 0x80131369u: return std::string(text) + ": the runtime did not understand the request";
    default: return text;
  }
}

// An answer file's lines after its OK/ERR line, printed; true for OK.
bool print_answer(const std::string& text, std::string* answer) {
  const bool ok = text.rfind("OK\n", 0) == 0;
  const size_t nl = text.find('\n');
  std::string lines = nl == std::string::npos ? std::string() : text.substr(nl + 1);
  while (!lines.empty() && lines.back() == '\n') lines.pop_back();
  if (!lines.empty()) std::fprintf(ok ? stdout : stderr, "%s\n", lines.c_str());
  if (answer) *answer = lines;
  return ok;
}

int connect_unix(const sockaddr_un& a, socklen_t len) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool is_coreclr(long pid) {
  const std::string maps = read_file("/proc/" + std::to_string(pid) + "/maps");
  return maps.find("/libcoreclr.so") != std::string::npos;
}

std::string find_socket(long pid, uid_t uid, std::string& why) {
  const std::string tmp = temp_dir(pid), root = root_of(pid), dir = root + tmp;
  const std::string prefix = "dotnet-diagnostic-" + std::to_string(pid) + "-";
  const std::string exact = prefix + start_ticks(pid) + "-socket";
  std::string found;
  struct stat st{};
  if (lstat((dir + "/" + exact).c_str(), &st) == 0) {
    found = exact;
  } else if (DIR* d = opendir(dir.c_str())) {
    // Another key (a runtime that computes it otherwise): the newest of this pid's.
    time_t newest = 0;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 7 || name.compare(name.size() - 7, 7, "-socket") != 0)
        continue;
      struct stat s{};
      if (lstat((dir + "/" + name).c_str(), &s) == 0 && s.st_mtime >= newest) {
        newest = s.st_mtime;
        found = name;
      }
    }
    closedir(d);
  }
  if (found.empty()) {
    const std::string off = env_value(pid, "DOTNET_EnableDiagnostics"), off2 = env_value(pid, "COMPlus_EnableDiagnostics");
    if (off == "0" || off2 == "0")
      why = "process " + std::to_string(pid) + " runs with EnableDiagnostics=0: its runtime has no diagnostics socket to attach through";
    else
      why = "process " + std::to_string(pid) + " has no .NET diagnostics socket in " + dir +
            " (started with DOTNET_EnableDiagnostics_IPC=0, or its socket was removed)";
    return {};
  }
  const std::string path = dir + "/" + found;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != uid) {
    why = path + " is not the process's diagnostics socket (not a socket, or another user's); not attaching";
    return {};
  }
  return path;
}

std::string attach_message(const std::string& library, const std::string& client_data, uint32_t timeout_ms) {
  std::string payload;
  put32(payload, timeout_ms);
  payload += guid_bytes(protocol::kMlpdClsidText);
  const std::u16string path = utf8_to_utf16(library);
  put32(payload, static_cast<uint32_t>(path.size() + 1));
  for (char16_t c : path) put16(payload, static_cast<uint16_t>(c));
  put16(payload, 0);
  put32(payload, static_cast<uint32_t>(client_data.size()));
  payload += client_data;
  const size_t total = 20 + payload.size();
  if (total > 0xffff) return {};
  std::string msg("DOTNET_IPC_V1", 13);
  msg += '\0';
  put16(msg, static_cast<uint16_t>(total));
  msg += static_cast<char>(0x03);  // the profiler command set
  msg += static_cast<char>(0x01);  // AttachProfiler
  put16(msg, 0);
  return msg + payload;
}

bool parse_reply(const std::string& reply, int32_t& hresult) {
  if (reply.size() < 24 || reply.compare(0, 14, std::string("DOTNET_IPC_V1", 14)) != 0) return false;
  const uint16_t size = static_cast<uint16_t>(static_cast<uint8_t>(reply[14]) | static_cast<uint8_t>(reply[15]) << 8);
  const uint8_t set = static_cast<uint8_t>(reply[16]), id = static_cast<uint8_t>(reply[17]);
  if (size < 24 || set != 0xFF || (id != 0x00 && id != 0xFF)) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(reply[20 + static_cast<size_t>(i)])) << (8 * i);
  hresult = static_cast<int32_t>(v);
  if (id == 0xFF && hresult >= 0) hresult = static_cast<int32_t>(0x80004005u);  // an error reply is a failure
  return true;
}

int attach(long pid, uid_t uid, const std::string& library, const std::string& options, std::string* answer) {
  std::string why;
  const std::string socket_path = find_socket(pid, uid, why);
  if (socket_path.empty()) return fail(why);
  // The agent's answer: a 0700 directory of ours (the process's user's when root attaches), in the
  // process's temporary directory as it sees it.
  const std::string root = root_of(pid), tmp = temp_dir(pid);
  std::string dir = root + tmp + "/mlpd-attach-XXXXXX";
  if (!mkdtemp(dir.data())) return fail("cannot make a directory in " + root + tmp + ": " + std::strerror(errno));
  if (geteuid() == 0 && uid != 0 && chown(dir.c_str(), uid, static_cast<gid_t>(-1)) != 0) {
    rmdir(dir.c_str());
    return fail("cannot give " + dir + " to the process's user: " + std::strerror(errno));
  }
  const std::string answer_file = dir + "/answer";
  const std::string seen = dir.substr(root.size()) + "/answer";  // the path as the process sees it
  const std::string request = std::string(protocol::kAnswerLine) + seen + "\n" + protocol::kOptionsLine + options + "\n";
  auto cleanup = [&] {
    unlink(answer_file.c_str());
    rmdir(dir.c_str());
  };
  if (request.size() > protocol::kMaxRequest) {
    cleanup();
    return fail("the options are too long for an attach request");
  }
  const std::string msg = attach_message(library, request, kAttachTimeoutMs);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (msg.empty() || socket_path.size() >= sizeof a.sun_path) {
    cleanup();
    return fail("the attach request does not fit the runtime's protocol (path or options too long)");
  }
  std::memcpy(a.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = connect_unix(a, sizeof a);
  if (fd < 0) {
    cleanup();
    return fail("cannot connect to " + socket_path + ": " + std::strerror(errno));
  }
  const bool sent = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size());
  std::string reply;
  const bool got = sent && read_full(fd, reply, 24, kReplyWaitMs);
  ::close(fd);
  int32_t hr = 0;
  const std::string text = read_file(answer_file);
  cleanup();
  if (!sent) return fail("cannot send the attach request to " + socket_path);
  if (!got || !parse_reply(reply, hr)) {
    if (!text.empty()) return print_answer(text, answer) ? 0 : 1;
    return fail("no answer from the runtime of process " + std::to_string(pid) + " within " +
                std::to_string(kReplyWaitMs / 1000) + " s");
  }
  if (!text.empty()) {
    const bool ok = print_answer(text, answer);
    if (ok && hr < 0) return fail("the runtime refused the profiler (" + hresult_text(hr) + ")");
    return ok ? 0 : 1;
  }
  if (hr < 0) return fail("the runtime refused the profiler (" + hresult_text(hr) + ")");
  return fail("the agent in process " + std::to_string(pid) + " gave no answer");
}

int detach(long pid, std::string* answer) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = std::string(protocol::kControlPrefix) + std::to_string(pid);
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const int fd = connect_unix(a, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
  if (fd < 0) return fail("process " + std::to_string(pid) + " has no attached mlpd agent to detach (started with the profiler? it stops at exit)");
  // The socket must be the process's own (an abstract name can be taken by anyone).
  ucred peer{};
  socklen_t plen = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0 || peer.pid != static_cast<pid_t>(pid)) {
    ::close(fd);
    return fail("the control socket of process " + std::to_string(pid) + " is held by another process; not detaching");
  }
  const std::string line = "detach\n";
  std::string text;
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
    char buf[512];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      const int r = poll(&p, 1, kReplyWaitMs);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > 65536) break;
    }
  }
  ::close(fd);
  if (text.empty()) return fail("no answer from the agent in process " + std::to_string(pid));
  return print_answer(text, answer) ? 0 : 1;
}

}  // namespace mlpd::cli::attach_dotnet
