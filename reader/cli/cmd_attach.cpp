// mlpd attach PID [--for SECONDS] [OPTIONS] / mlpd detach PID: profiling a running Mono or .NET process
// (docs/attach.md). .NET: attach_dotnet.cpp. Mono: the runtime's attach listener (Mono 6.8/6.12: started when the process gets
// SIGQUIT while /tmp/.mono_attach_pid<PID> exists; a Unix socket /tmp/mono-<user>/.mono-<PID> in a
// 0700 directory of the process's user) loads our managed agent (LIBDIR/mlpd/MlpdAttach.dll), which
// loads libmlpd.so from beside it and starts or stops the agent; its answer comes back in a file.
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "attach_dotnet.h"
#include "attach_proc.h"
#include "commands.h"

namespace mlpd::cli {

namespace {

using namespace attach_proc;  // what /proc says of the target

constexpr int kListenWaitMs = 5000;   // the runtime's finalizer thread starts the listener
constexpr int kAnswerWaitMs = 20000;  // the agent's start (its output opened, the hooks installed)

int fail(const std::string& line) {
  std::fprintf(stderr, "mlpd: %s\n", line.c_str());
  return 1;
}

void sleep_ms(int ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, nullptr);
}

// libmlpd.so and (for Mono) the managed agent: installed (BINDIR/../LIBDIR), else this build's.
bool find_agent(std::string& lib, std::string& dll, std::string& why, bool need_dll = true) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::vector<std::string> dirs;
  if (n > 0) {
    exe[n] = 0;
    std::string d(exe);
    d.erase(d.rfind('/'));
    dirs.push_back(d + "/../" MLPD_INSTALL_LIBDIR);
    if (std::string(exe).rfind(MLPD_BUILD_DIR "/", 0) == 0) dirs.push_back(MLPD_BUILD_DIR "/agent");
  }
  for (const std::string& d : dirs) {
    char real[4096];
    if (!realpath(d.c_str(), real)) continue;
    const std::string l = std::string(real) + "/libmlpd.so", m = std::string(real) + "/mlpd/MlpdAttach.dll";
    if (access(l.c_str(), R_OK) != 0 || (need_dll && access(m.c_str(), R_OK) != 0)) continue;
    // Loaded into someone's process: neither may be writable by others (nor its directory).
    std::vector<std::string> loaded = {l, std::string(real)};
    if (need_dll) loaded.insert(loaded.end(), {m, std::string(real) + "/mlpd"});
    for (const std::string& p : loaded) {
      struct stat st{};
      if (stat(p.c_str(), &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid())) {
        why = p + " is writable by others or owned by another user; not loading it into a process";
        return false;
      }
    }
    lib = l;
    dll = m;
    return true;
  }
  why = need_dll ? "cannot find libmlpd.so and mlpd/MlpdAttach.dll (installed beside mlpd's " MLPD_INSTALL_LIBDIR ")"
                 : "cannot find libmlpd.so (installed beside mlpd's " MLPD_INSTALL_LIBDIR ")";
  return false;
}

// Mono's attach message: "MONO" 1 0, the body's length (int32 LE), then three strings (type 18, a
// one-byte length below 128, the bytes, a NUL: 6.8 and 6.12 use them in place): "attach", the agent
// assembly, its argument. A malformed message fails an assertion in the runtime, which aborts the
// program: the lengths are checked before (run_command).
bool send_message(int fd, const std::string& agent, const std::string& arg) {
  std::string body;
  for (const std::string* s : {static_cast<const std::string*>(nullptr), &agent, &arg}) {
    const std::string v = s ? *s : std::string("attach");
    body += static_cast<char>(18);
    body += static_cast<char>(v.size());
    body += v;
    body += '\0';
  }
  std::string msg = "MONO";
  msg += '\1';
  msg += '\0';
  const uint32_t len = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) msg += static_cast<char>((len >> (8 * i)) & 0xff);
  msg += body;
  // One write: the runtime reads each part with a single read(2).
  return ::write(fd, msg.data(), msg.size()) == static_cast<ssize_t>(msg.size());
}

struct Target {
  long pid = 0;
  uid_t uid = 0;
  std::string dir, socket;  // /tmp/mono-USER, its .mono-PID (the runtime's listener)
  std::string control;      // its .mlpd-PID: our control thread, after a first attach
  std::string park;         // its .mlpd-park-PID: a detached agent's wake signal (attach_entry.cpp)
};

// Checks that may refuse, before anything is sent to the process.
bool check_target(long pid, Target& t, std::string& why) {
  struct stat st{};
  if (stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) {
    why = "no process " + std::to_string(pid);
    return false;
  }
  t.pid = pid;
  t.uid = st.st_uid;
  if (geteuid() != 0 && geteuid() != st.st_uid) {
    why = "process " + std::to_string(pid) + " belongs to another user; only its user or root can attach";
    return false;
  }
  passwd pw{};
  passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(st.st_uid, &pw, buf, sizeof buf, &found) != 0 || !found) {
    why = "no user name for uid " + std::to_string(st.st_uid);
    return false;
  }
  t.dir = std::string("/tmp/mono-") + found->pw_name;
  t.socket = t.dir + "/.mono-" + std::to_string(pid);
  t.control = t.dir + "/.mlpd-" + std::to_string(pid);
  t.park = t.dir + "/.mlpd-park-" + std::to_string(pid);
  return true;
}

// The runtime's directory and socket, and not planted ones: the directory 0700 and both the
// process's user's.
bool listener_ok(const Target& t, std::string& why, const std::string* path = nullptr) {
  struct stat d{}, s{};
  if (lstat(t.dir.c_str(), &d) != 0 || lstat((path ? *path : t.socket).c_str(), &s) != 0) return false;
  if (!S_ISDIR(d.st_mode) || d.st_uid != t.uid || (d.st_mode & 0777) != 0700 || !S_ISSOCK(s.st_mode) || s.st_uid != t.uid) {
    why = t.dir + " or its socket is not the runtime's (owner or mode wrong); not attaching";
    return false;
  }
  return true;
}

int connect_listener(const Target& t, const std::string* path = nullptr) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", (path ? *path : t.socket).c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// When the process started (seconds since the epoch), from /proc/PID/stat and the boot time.
// A socket file older than the process: left by an earlier process with the same PID (killed before
// the runtime removed it). Removed, so that it is not taken for this process's listener.
void remove_stale(long pid, const std::string& path) {
  struct stat st{};
  const double started = process_start(pid);
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && started > 0 && st.st_mtime + 2 < started) {
    ::unlink(path.c_str());
  }
}

// A detached agent (no thread of ours left): its park file names the real-time signal whose handler
// wakes it; its control thread then opens the control socket. The connected socket; -1 with `why`
// empty when there is no park file (the runtime's listener is tried then), or with `why`.
int wake_parked(const Target& t, std::string& why) {
  struct stat d{}, f{};
  if (lstat(t.park.c_str(), &f) != 0) return -1;
  const double started = process_start(t.pid);
  if (S_ISREG(f.st_mode) && started > 0 && f.st_mtime + 2 < started) {  // an earlier process's
    ::unlink(t.park.c_str());
    return -1;
  }
  if (lstat(t.dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode) || d.st_uid != t.uid || (d.st_mode & 0777) != 0700 ||
      !S_ISREG(f.st_mode) || f.st_uid != t.uid || (f.st_mode & 0077) != 0) {
    why = t.dir + " or its park file is not the agent's (owner or mode wrong); not attaching";
    return -1;
  }
  const int sig = std::atoi(read_file(t.park).c_str());
  if (sig < SIGRTMIN || sig > SIGRTMAX) {
    why = t.park + " does not name a real-time signal; not attaching";
    return -1;
  }
  // Sent only while the handler is there: a signal nobody handles would end the process.
  if (!signal_caught(t.pid, sig)) {
    why = "the detached agent's wake signal (" + std::to_string(sig) + ") is no longer handled in the process; not attaching";
    return -1;
  }
  if (::kill(static_cast<pid_t>(t.pid), sig) != 0) {
    why = std::string("cannot signal the process: ") + std::strerror(errno);
    return -1;
  }
  for (int waited = 0; waited < kListenWaitMs; waited += 20) {
    sleep_ms(20);
    std::string planted;
    if (listener_ok(t, planted, &t.control)) {
      if (const int fd = connect_listener(t, &t.control); fd >= 0) return fd;
    } else if (!planted.empty()) {
      why = planted;
      return -1;
    }
  }
  why = "the detached agent did not answer within " + std::to_string(kListenWaitMs / 1000) +
        " s (its wake goes through the runtime's finalizer thread: is it busy?)";
  return -1;
}

// Starts the runtime's listener unless it runs; the connected socket, or -1 with `why`.
int open_listener(const Target& t, std::string& why) {
  remove_stale(t.pid, t.socket);
  std::string planted;
  if (listener_ok(t, planted)) {
    if (const int fd = connect_listener(t); fd >= 0) return fd;
    // The runtime started its listener once and it no longer answers (our agent ends it after the
    // first command; or a stale file): a SIGQUIT now would print a thread dump, not start it again.
    why = "the runtime's attach listener (" + t.socket + ") does not answer and cannot be started again";
    return -1;
  } else if (!planted.empty()) {
    why = planted;
    return -1;
  }
  const std::string trigger = "/tmp/.mono_attach_pid" + std::to_string(t.pid);
  const int tf = ::open(trigger.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (tf < 0) {
    why = "cannot create " + trigger + ": " + std::strerror(errno);
    return -1;
  }
  ::close(tf);
  if (::kill(static_cast<pid_t>(t.pid), SIGQUIT) != 0) {
    ::unlink(trigger.c_str());
    why = std::string("cannot signal the process: ") + std::strerror(errno);
    return -1;
  }
  int fd = -1;
  for (int waited = 0; waited < kListenWaitMs && fd < 0; waited += 20) {
    sleep_ms(20);
    if (listener_ok(t, why)) fd = connect_listener(t);
    else if (!why.empty()) break;
  }
  // The signal must have been taken before the trigger goes: without it the runtime would print a
  // thread dump on the program's output (docs/attach.md).
  if (fd < 0 && signal_pending(t.pid, SIGQUIT)) {
    why = "the process has not taken the signal (stopped?); " + trigger +
          " is left so that it does not print a thread dump when it resumes; remove it afterwards";
    return -1;
  }
  ::unlink(trigger.c_str());
  if (fd < 0 && why.empty()) {
    why = "the runtime did not start its attach listener within " + std::to_string(kListenWaitMs / 1000) +
          " s (started with --attach=disable, or not a Mono that has one)";
  }
  return fd;
}

// One command to the agent in the process; prints its answer. 0 done, 1 refused or failed.
int run_command(long pid, const std::string& command, std::string* answer_out = nullptr, int tries = 0) {
  Target t;
  std::string why;
  if (!check_target(pid, t, why)) return fail(why);
  const bool attach = command.rfind("attach", 0) == 0;
  if (attach_dotnet::is_coreclr(pid)) {
    if (attach && profiled(pid)) return fail("process " + std::to_string(pid) + " is being profiled already");
    if (!attach && !profiled(pid)) return fail("process " + std::to_string(pid) + " is not being profiled");
    if (!attach) return attach_dotnet::detach(pid, answer_out);
    std::string lib, dll;
    if (!find_agent(lib, dll, why, false)) return fail(why);
    return attach_dotnet::attach(pid, t.uid, lib, command.substr(std::min<size_t>(command.size(), 7)), answer_out);
  }
  if (!is_mono(pid)) return fail("process " + std::to_string(pid) + " is neither a Mono nor a .NET (CoreCLR) process");
  if (attach && attach_disabled(pid)) return fail("process " + std::to_string(pid) + " runs with --attach=disable");
  if (attach && profiled(pid)) return fail("process " + std::to_string(pid) + " is being profiled already");
  if (!attach && !profiled(pid)) return fail("process " + std::to_string(pid) + " is not being profiled");
  std::string lib, dll;
  if (!find_agent(lib, dll, why)) return fail(why);
  if (dll.size() > 127) return fail("the agent's path is too long for Mono's attach protocol: " + dll);
  // After a first attach our control thread answers (the runtime's listener is gone then).
  int control = -1;
  remove_stale(pid, t.control);
  if (std::string planted; listener_ok(t, planted, &t.control)) control = connect_listener(t, &t.control);
  else if (!planted.empty()) return fail(planted);
  if (control < 0 && attach) {
    control = wake_parked(t, why);
    if (control < 0 && !why.empty()) return fail(why);
  }
  const int fd = control >= 0 ? control : open_listener(t, why);
  if (fd < 0) return fail(why);
  struct stat control_st{};
  if (control >= 0 && lstat(t.control.c_str(), &control_st) != 0) control_st.st_ino = 0;
  std::mt19937_64 rng(std::random_device{}());
  const std::string tag = std::to_string(pid) + "-" + std::to_string(rng() % 1000000000);
  const std::string request = t.dir + "/.mlpd-request-" + tag, answer = t.dir + "/.mlpd-answer-" + tag;
  {
    const int rf = ::open(request.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rf < 0) {
      ::close(fd);
      return fail("cannot write " + request + ": " + std::strerror(errno));
    }
    const std::string text = lib + "\n" + answer + "\n" + command;
    const bool ok = ::write(rf, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    // Root attaching to another user's process: the request is that user's to read and remove.
    const bool owned = geteuid() != 0 || fchown(rf, t.uid, static_cast<gid_t>(-1)) == 0;
    ::close(rf);
    if (!ok || !owned) {
      ::unlink(request.c_str());
      ::close(fd);
      return fail("cannot write " + request);
    }
  }
  const bool sent = control >= 0 ? ::write(fd, (request + "\n").data(), request.size() + 1) == static_cast<ssize_t>(request.size() + 1)
                                  : request.size() <= 127 && send_message(fd, dll, request);
  if (!sent) {
    ::unlink(request.c_str());
    ::close(fd);
    return fail("cannot talk to the runtime's attach listener");
  }
  std::string text;
  for (int waited = 0; waited < kAnswerWaitMs; waited += 20) {
    sleep_ms(20);
    struct stat st{};
    if (stat(answer.c_str(), &st) == 0) {
      sleep_ms(20);  // written in one write(2) right after creation
      text = read_file(answer);
      if (!text.empty() && text.back() == '\n') break;
    }
    if (!alive(pid)) break;
    // The control thread was ending (detached a moment ago) and never read our request: its
    // socket is gone or another's now. Again, once or twice, from the start (the agent is parked).
    struct stat now{};
    if (control >= 0 && waited >= 200 && tries < 2 && ::access(request.c_str(), F_OK) == 0 &&
        (lstat(t.control.c_str(), &now) != 0 || now.st_ino != control_st.st_ino)) {
      ::close(fd);
      ::unlink(request.c_str());
      return run_command(pid, command, answer_out, tries + 1);
    }
  }
  ::close(fd);  // the receiver goes back to accept()
  ::unlink(answer.c_str());
  ::unlink(request.c_str());  // the agent removes it; not if it never ran
  if (text.empty()) return fail("no answer from the agent in process " + std::to_string(pid));
  const bool ok = text.rfind("OK\n", 0) == 0;
  std::string lines = text.substr(text.find('\n') + 1);
  while (!lines.empty() && lines.back() == '\n') lines.pop_back();
  if (!lines.empty()) std::fprintf(ok ? stdout : stderr, "%s\n", lines.c_str());
  if (answer_out) *answer_out = lines;
  return ok ? 0 : 1;
}

// The output file an answer names ("... into FILE" / "... wrote FILE").
std::string named_file(const std::string& answer, const char* word) {
  const size_t at = answer.rfind(word);
  if (at == std::string::npos) return {};
  std::string f = answer.substr(at + std::strlen(word));
  return f.substr(0, f.find('\n'));
}

bool has_output_option(const std::string& options) {
  return options.rfind("output=", 0) == 0 || options.find(",output=") != std::string::npos;
}

// A relative output= is the caller's working directory's, not the process's.
std::string absolute_output(const std::string& options) {
  std::string out;
  size_t pos = 0;
  char cwd[4096];
  const std::string here = getcwd(cwd, sizeof cwd) ? cwd : ".";
  while (pos <= options.size()) {
    size_t end = options.find(',', pos);
    if (end == std::string::npos) end = options.size();
    std::string word = options.substr(pos, end - pos);
    if (word.rfind("output=", 0) == 0 && word.size() > 7 && word[7] != '/' && word[7] != '|' && word[7] != '#' &&
        word[7] != '+' && word[7] != '-') {
      word = "output=" + here + "/" + word.substr(7);
    } else if (word.rfind("output=+", 0) == 0 && word.size() > 8 && word[8] != '/') {
      word = "output=+" + here + "/" + word.substr(8);
    }
    if (!out.empty()) out += ',';
    out += word;
    pos = end + 1;
  }
  return out;
}

bool parse_pid(const char* s, long& pid) {
  char* end = nullptr;
  pid = std::strtol(s, &end, 10);
  return end && *end == 0 && pid > 0;
}

}  // namespace

const char kAttachHelp[] =
    "usage: mlpd attach PID [--for SECONDS] [OPTIONS]\n"
    "  Loads the agent into the running Mono or .NET process PID and starts profiling with OPTIONS\n"
    "  (MLPD_OPTIONS syntax; output= defaults to mlpd.PID.TIME.mlpd here). With --for, waits\n"
    "  SECONDS, detaches and verifies the file. Not after attach: calls and exact allocations on\n"
    "  .NET; alloc and alloc-sample on Mono, where calls covers only code compiled after it\n"
    "  (docs/attach.md).\n";

int cmd_attach(int argc, char** argv) {
  long pid = 0;
  int seconds = -1;
  std::vector<std::string> words;  // PID, then OPTIONS
  const int parsed = parse_command(argc, argv, "attach", kAttachHelp,
                               {{"--for", nullptr, nullptr, [&](const std::string& v) {
                                   char* end = nullptr;
                                   const long n = std::strtol(v.c_str(), &end, 10);
                                   if (v.empty() || !end || *end || n < 0 || n > 86400 * 365)
                                     return "--for takes a number of seconds, not '" + v + "'";
                                   seconds = static_cast<int>(n);
                                   return std::string();
                                 }}},
                               words);
  if (parsed >= 0) return parsed;
  if (words.empty() || !parse_pid(words[0].c_str(), pid)) return usage_error("attach", "give the process id first");
  if (words.size() > 2) return usage_error("attach", "unexpected '" + words[2] + "' (OPTIONS is one word: a,b=c,...)");
  std::string options = words.size() > 1 ? words[1] : std::string();
  if (!has_output_option(options)) {
    options += std::string(options.empty() ? "" : ",") + "output=mlpd.%p.%t.mlpd";
  }
  options = absolute_output(options);
  std::string answer;
  if (const int rc = run_command(pid, "attach " + options, &answer); rc != 0) return rc;
  if (seconds < 0) return 0;
  for (int waited = 0; waited < seconds * 1000 && alive(pid); waited += 50) sleep_ms(50);
  if (!alive(pid)) {
    std::printf("mlpd: process %ld ended; its file was closed at its exit\n", pid);
  } else if (const int rc = run_command(pid, "detach", &answer); rc != 0) {
    return rc;
  }
  const std::string file = named_file(answer, answer.find(" wrote ") != std::string::npos ? " wrote " : " into ");
  if (file.empty() || file[0] != '/') return 0;
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    char* args[] = {const_cast<char*>("mlpd"), const_cast<char*>("verify"), const_cast<char*>(file.c_str()), nullptr};
    execv("/proc/self/exe", args);
    _exit(127);
  }
  int status = 0;
  if (child > 0) waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int cmd_detach(int argc, char** argv) {
  long pid = 0;
  std::vector<std::string> words;
  const int rc = parse_command(argc, argv, "detach", "usage: mlpd detach PID\n  Stops the agent attached to process PID and closes its file.\n",
                               {}, words);
  if (rc >= 0) return rc;
  if (words.size() != 1 || !parse_pid(words[0].c_str(), pid)) return usage_error("detach", "give one process id");
  return run_command(pid, "detach");
}

}  // namespace mlpd::cli
