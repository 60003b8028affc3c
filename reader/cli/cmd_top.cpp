// mlpd top FILE | mlpd top -
// A live view of a file that a running agent is writing (profile with flush=MS): the arguments, the
// refresh loop and the views. The reading of the growing file is the profile layer's
// (profile::GrowingFile, mlpd/live.h): where counting starts (by default where the file is when top
// starts; the part before is read only for its names, a slice per interval), the live part read in
// chunks into one model (memory bounded by what the model holds, however large the file). Every
// interval a snapshot is shown as a short report -- CPU samples by method, calls by inclusive time,
// allocations by type, GC pauses, per thread -- with the events per second since the last view.
//
// When the writer (the pid in the header) has exited, the final figures are shown and top ends; a
// file the gone writer left cut inside a buffer ends with a message and exit status 1.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "mlpd/live.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

using Clock = std::chrono::steady_clock;


const char kHelp[] =
    "usage: mlpd top [--interval SECONDS] [--top N] [--from-start] [--jobs N] [--stats] FILE|-\n"
    "\n"
    "Follows FILE while a running program's agent writes it (profile with flush=MS, e.g. flush=500) and\n"
    "shows, every interval (1 s by default): CPU samples by method, calls by inclusive time,\n"
    "allocations by type, GC pauses, per thread, and the events per second. On a terminal the view is\n"
    "redrawn in place; otherwise one snapshot per interval is printed, each after a line\n"
    "'== mlpd top: +SECONDS s, EVENTS events, RATE events/s =='.\n"
    "\n"
    "The figures count from where the file is when top starts (what the program does while it is\n"
    "watched); the part written before is read only for its names. --from-start counts the whole file,\n"
    "as top does when the writer has already exited and on '-' (standard input, a pipe, read until it\n"
    "closes). The file is read in chunks, so memory stays bounded however large it is; a large backlog\n"
    "is caught up a little every interval (the heading line says so). A plain file counted from its\n"
    "start (the writer has exited, or --from-start) is first read on every core at once, up to its last\n"
    "whole buffer (--jobs N, -j N: N threads, default one per core; 1: one thread, in chunks).\n"
    "A partly written buffer at the end is waited for while the writer (the pid in FILE's header)\n"
    "lives; once it has exited, the final figures are printed and top ends.\n"
    "--stats prints at the end (on stderr) the bytes read, the bytes decoded and the most bytes held\n"
    "back for a partly written buffer, and at each view of a plain file how far into it the view reads.\n"
    "The header (program, rate delivered) is the file's, read from its start whatever the counting.\n"
    "Exit status: 0 when the file was complete, 1 when the writer left it cut, it has other problems or\n"
    "cannot be read, 2 bad usage.\n";

bool regular(int fd) {
  struct stat st{};
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

int usage_error(const std::string& m) {
  std::fprintf(stderr, "mlpd top: %s (try 'mlpd top --help')\n", m.c_str());
  return 2;
}

// One run of `mlpd top` on an open file: the growing file's reading (profile::GrowingFile: where
// counting starts, the live part, the history read for its names), the views, the end.
class TopSession {
 public:
  // `pipe_in`: FILE is '-' (standard input, read as it comes).
  TopSession(const std::string& file, int fd, bool pipe_in, double interval, size_t top, bool stats)
      : file_(file), interval_(interval), stats_(stats), pipe_in_(pipe_in), reader_(fd, file, !pipe_in && regular(fd)) {
    tty_ = isatty(1);
    t_start_ = t_last_ = Clock::now();
    ro_.top = top;
    ro_.input_name = file_;
  }

  // Where counting starts, then (a plain file counted from its start) the first read on every core;
  // -1 to go on, else the exit status.
  int start(bool from_start, unsigned jobs) {
    if (!reader_.enter(from_start, std::min(interval_, 0.2)) || !reader_.read_start_in_parallel(jobs)) {
      std::fprintf(stderr, "mlpd top: %s: %s\n", file_.c_str(), reader_.error().c_str());
      return 1;
    }
    return -1;
  }

  // The views, every interval, until the writer is done; the exit status.
  int run() {
    for (;;) {
      const auto t_begin = Clock::now();
      const auto deadline = t_begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_));
      // The live part, the history, then what came meanwhile.
      if (!reader_.read_live(deadline) || !reader_.read_history(deadline) ||
          (reader_.history_size() && !reader_.read_live(deadline)))
        return read_error();
      const bool live_caught_up = reader_.at_end();
      const int pid = reader_.live().writer_pid();
      // The writer is done: a pipe closed, or (a file) the pid is gone -- then what is left is read
      // to the end (its last bytes, the rest of a backlog, the names before the start).
      const bool done = pipe_in_ ? reader_.at_end() : (pid && !profile::writer_alive(pid));
      if (done && !pipe_in_ &&
          (!reader_.read_live(Clock::time_point::max()) || !reader_.read_history(Clock::time_point::max())))
        return read_error();
      if (done) reader_.finish();  // a buffer still cut now is a problem
      profile::Profile p;
      reader_.snapshot(p);
      const auto now = Clock::now();
      show(p, done, live_caught_up, now);
      if (done) return finish(p, pid);
      if (!pid && !pipe_in_ && std::chrono::duration<double>(now - t_start_).count() > 30 && !reader_.live().header_seen()) {
        std::fprintf(stderr, "mlpd top: %s: no file header after 30 s\n", file_.c_str());
        return 1;
      }
      // Caught up: wait for the rest of the interval; behind: go on at once.
      if (live_caught_up && !reader_.history_left() && now < deadline) std::this_thread::sleep_until(deadline);
    }
  }

 private:
  int read_error() const {
    std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file_.c_str(), std::strerror(errno));
    return 1;
  }

  // One view: the heading line, the short report, and with --stats how far into the file it reads.
  void show(const profile::Profile& p, bool done, bool live_caught_up, Clock::time_point now) {
    const double secs = std::chrono::duration<double>(now - t_last_).count();
    const uint64_t events = reader_.counted_events();
    const double rate = secs > 0 ? static_cast<double>(events - std::min(events, last_events_)) / secs : 0;
    last_events_ = events;
    t_last_ = now;
    std::string notes;
    if (done) notes += ", program exited (final)";
    if (!reader_.counting_from_start() && !done) notes += ", counting since top started";
    if (reader_.history_left())
      notes += ", reading names: " + std::to_string(reader_.history_read() * 100 / reader_.history_size()) +
               "% of the first " + std::to_string(reader_.history_size() >> 20) + " MiB";
    if (!live_caught_up && !done) notes += ", catching up";
    if (tty_) std::fputs("\x1b[H\x1b[2J", stdout);
    const double since = std::chrono::duration<double>(now - t_start_).count();
    std::printf("== mlpd top: +%.1f s, %llu events, %.0f events/s%s ==\n", since,
                static_cast<unsigned long long>(events), rate, notes.c_str());
    if (p.header_ok()) {
      std::string error;
      ro_.counters_partial = reader_.history_left();  // the counters' sums lack part of the file's start
      views::write_report(p, ro_, stdout, error);
    } else {
      std::printf("(waiting for the file header)\n");
    }
    std::fflush(stdout);
    if (stats_ && !reader_.live().compressed())  // what this view has read: the file's bytes [0, N) (whole buffers)
      std::fprintf(stderr, "mlpd top: view at +%.1f s: the file up to byte %llu%s\n", since,
                   static_cast<unsigned long long>(reader_.live().fed()),
                   reader_.history_left() ? " (its start still being read for names)" : "");
  }

  // The writer is done: --stats' totals, the file's problems; the exit status.
  int finish(const profile::Profile& p, int pid) const {
    if (stats_)
      std::fprintf(stderr, "mlpd top: read %llu bytes, decoded %llu bytes, held at most %llu bytes\n",
                   static_cast<unsigned long long>(reader_.bytes_read()),
                   static_cast<unsigned long long>(reader_.bytes_decoded()),
                   static_cast<unsigned long long>(reader_.held_max()));
    const std::string& error = reader_.live().error();
    if (!error.empty()) std::fprintf(stderr, "%s: %s\n", file_.c_str(), error.c_str());
    if (p.problem_count() == 0 && error.empty()) return 0;
    for (const Problem& pr : p.problems())
      std::fprintf(stderr, "%s: offset %llu: %s\n", file_.c_str(), static_cast<unsigned long long>(pr.offset),
                   pr.message.c_str());
    bool cut = false;  // the decoder's "truncated ..." problems: the file ends inside a buffer
    for (const Problem& pr : p.problems()) cut = cut || pr.message.rfind("truncated", 0) == 0;
    if (cut)
      std::fprintf(stderr, "mlpd top: %s: the writer (pid %d) has exited and left the file incomplete\n",
                   file_.c_str(), pid);
    else if (p.problem_count())
      std::fprintf(stderr, "mlpd top: %s: %llu problem%s (the figures show what could be read)\n", file_.c_str(),
                   static_cast<unsigned long long>(p.problem_count()), p.problem_count() == 1 ? "" : "s");
    return 1;
  }

  const std::string file_;
  const double interval_;
  const bool stats_;
  const bool pipe_in_;
  bool tty_ = false;
  profile::GrowingFile reader_;
  Clock::time_point t_start_, t_last_;
  uint64_t last_events_ = 0;
  views::ReportOptions ro_;
};

}  // namespace

int cmd_top(int argc, char** argv) {
  double interval = 1.0;
  size_t top = 5;
  bool stats = false, from_start = false;
  unsigned jobs = default_jobs();
  auto positive = [](const char* name, auto& to) {
    return Option{name, nullptr, nullptr, [name, &to](const std::string& v) -> std::string {
                    char* end = nullptr;
                    const double x = std::strtod(v.c_str(), &end);
                    if (!end || *end || !(x > 0) || x > 3600) return std::string(name) + " needs a positive number";
                    to = static_cast<std::remove_reference_t<decltype(to)>>(x);
                    return {};
                  }};
  };
  std::vector<std::string> files;
  const int rc = parse_command(argc, argv, "top", kHelp,
                               {{"--stats", nullptr, &stats},
                                {"--from-start", nullptr, &from_start},
                                positive("--interval", interval),
                                positive("--top", top),
                                jobs_option(jobs)},
                               files);
  if (rc >= 0) return rc;
  if (files.size() > 1) return usage_error("one FILE only");
  if (files.empty() || files[0].empty()) return usage_error("no FILE given");
  const std::string& file = files[0];
  const int fd = file == "-" ? 0 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "mlpd top: %s: cannot open: %s\n", file.c_str(), std::strerror(errno));
    return 1;
  }
  TopSession session(file, fd, file == "-", interval, top, stats);
  if (const int status = session.start(from_start, jobs); status >= 0) return status;
  return session.run();
}

}  // namespace mlpd::cli
