// mlpd top FILE | mlpd top -
// A live view of a file that a running agent is writing (profile with flush=MS): every interval the
// buffers written since the last one are decoded into the same model (IncrementalBuilder; only the
// last, partly written buffer is held back, so memory and work do not grow with the file) and a
// snapshot of it is shown as a short report -- CPU samples by method, calls by inclusive time,
// allocations by type, GC pauses, per thread -- with the events per second since the last view.
// When the writer (the pid in the header) has exited, the final figures are shown and top ends; a
// file the gone writer left cut inside a buffer ends with a message and exit status 1.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <algorithm>
#include <memory>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "mlpd/input.h"
#include "mlpd/live.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

const char kHelp[] =
    "usage: mlpd top [--interval SECONDS] [--top N] [--stats] FILE|-\n"
    "\n"
    "Follows FILE while a running program's agent writes it (profile with flush=MS, e.g. flush=500) and\n"
    "shows, every interval (1 s by default): CPU samples by method, calls by inclusive time,\n"
    "allocations by type, GC pauses, per thread, and the events per second. On a terminal the view is\n"
    "redrawn in place; otherwise one snapshot per interval is printed, each after a line\n"
    "'== mlpd top: +SECONDS s, EVENTS events, RATE events/s =='. A partly written buffer at the end is\n"
    "waited for while the writer (the pid in FILE's header) lives; once it has exited, the final\n"
    "figures are printed and top ends. '-' reads standard input (a pipe) until it closes.\n"
    "Each interval decodes only what was written since the last one; --stats prints at the end (on\n"
    "stderr) the bytes read, the bytes decoded and the most bytes held back for a partly written buffer.\n"
    "Exit status: 0 when the program's file was complete, 1 when the writer left it cut or it cannot be\n"
    "read, 2 bad usage.\n";

int usage_error(const std::string& m) {
  std::fprintf(stderr, "mlpd top: %s (try 'mlpd top --help')\n", m.c_str());
  return 2;
}

bool pid_alive(int pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (stat && std::getline(stat, line)) {
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && (line[close + 2] == 'Z' || line[close + 2] == 'X'))
      return false;
  }
  return true;
}

// Hands what has been written since the last call to `live` (the file grows; a pipe delivers).
bool read_more(int fd, profile::LiveFile& live, bool& eof, uint64_t& raw) {
  static uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r > 0) {
      raw += static_cast<uint64_t>(r);
      live.add(buf, static_cast<size_t>(r));  // corrupt compressed data: live.error(), shown at the end
      continue;
    }
    if (r == 0) {
      eof = true;
      return true;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    return false;
  }
}

}  // namespace

int cmd_top(int argc, char** argv) {
  std::string file;
  double interval = 1.0;
  size_t top = 5;
  bool stats = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--interval" || a == "--top") {
      if (i + 1 >= argc) return usage_error(a + " needs a value");
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (!end || *end || !(v > 0) || v > 3600) return usage_error(a + " needs a positive number");
      if (a == "--interval")
        interval = v;
      else
        top = static_cast<size_t>(v);
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else {
      if (!file.empty()) return usage_error("one FILE only");
      file = a;
    }
  }
  if (file.empty()) return usage_error("no FILE given");
  const bool pipe_in = file == "-";
  const int fd = pipe_in ? 0 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "mlpd top: %s: cannot open: %s\n", file.c_str(), std::strerror(errno));
    return 1;
  }
  const bool tty = isatty(1);
  profile::LiveFile live;
  profile::IncrementalBuilder builder;
  uint64_t raw = 0, held_max = 0;
  uint64_t last_events = 0;
  const auto t_start = std::chrono::steady_clock::now();
  auto t_last = t_start;
  views::ReportOptions ro;
  ro.top = top;
  ro.input_name = file;
  for (;;) {
    bool eof = false;
    if (!read_more(fd, live, eof, raw)) {
      std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file.c_str(), std::strerror(errno));
      return 1;
    }
    held_max = std::max(held_max, live.held());
    live.feed(builder);  // the header and every buffer now complete; the last may be partly written
    const int pid = live.writer_pid();
    // The writer is done: a pipe closed, or (a file) the pid is gone -- then one more read catches
    // its last bytes.
    bool done = pipe_in ? eof : (pid && !pid_alive(pid));
    if (done && !pipe_in) read_more(fd, live, eof, raw);
    if (done) live.finish(builder);  // a buffer still cut now is a problem
    profile::Profile p;
    builder.snapshot(p);
    const bool clean = p.problem_count() == 0 && live.error().empty();
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - t_last).count();
    const uint64_t events = p.summary().events;
    const double rate = secs > 0 ? static_cast<double>(events - std::min(events, last_events)) / secs : 0;
    last_events = events;
    t_last = now;
    if (tty) std::fputs("\x1b[H\x1b[2J", stdout);
    std::printf("== mlpd top: +%.1f s, %llu events, %.0f events/s%s ==\n",
                std::chrono::duration<double>(now - t_start).count(), static_cast<unsigned long long>(events), rate,
                done ? ", program exited (final)" : "");
    if (p.header_ok()) {
      std::string error;
      views::write_report(p, ro, stdout, error);
    } else {
      std::printf("(waiting for the file header)\n");
    }
    std::fflush(stdout);
    if (done) {
      if (stats)
        std::fprintf(stderr, "mlpd top: read %llu bytes, decoded %llu bytes, held at most %llu bytes\n",
                     static_cast<unsigned long long>(raw), static_cast<unsigned long long>(live.fed()),
                     static_cast<unsigned long long>(held_max));
      if (!live.error().empty()) std::fprintf(stderr, "%s: %s\n", file.c_str(), live.error().c_str());
      if (!clean) {
        for (const Problem& pr : p.problems())
          std::fprintf(stderr, "%s: offset %llu: %s\n", file.c_str(), static_cast<unsigned long long>(pr.offset),
                       pr.message.c_str());
        std::fprintf(stderr, "mlpd top: %s: the writer (pid %d) has exited and left the file incomplete\n",
                     file.c_str(), pid);
        return 1;
      }
      return 0;
    }
    if (!pid && !pipe_in && std::chrono::duration<double>(now - t_start).count() > 30 && !live.header_seen()) {
      std::fprintf(stderr, "mlpd top: %s: no file header after 30 s\n", file.c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

}  // namespace mlpd::cli
