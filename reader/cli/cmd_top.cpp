// mlpd top FILE | mlpd top -
// A live view of a file that a running agent is writing (profile with flush=MS). It streams: the file
// is read in chunks of at most kChunk bytes, each decoded at once into the same model
// (IncrementalBuilder; LiveFile holds back only a partly written buffer), so memory is bounded by
// what the model holds, however large the file. Every interval a snapshot is shown as a short
// report -- CPU samples by method, calls by inclusive time, allocations by type, GC pauses, per
// thread -- with the events per second since the last view.
//
// Where counting starts: by default where the file is when top starts (the numbers are what the
// program does while it is watched). A plain file is entered at the first buffer boundary at or
// after its size then (found by walking the buffer headers, not by decoding); the part before it is
// read as well, but only for what it names (methods, classes, symbols, threads), a slice per
// interval, so the first views come at once and the names fill in. A gzip file cannot be entered in
// the middle: what was written before top started is decoded for its names only. --from-start counts
// the whole file, and so does top on a file whose writer has already exited, or on a pipe.
//
// When the writer (the pid in the header) has exited, the final figures are shown and top ends; a
// file the gone writer left cut inside a buffer ends with a message and exit status 1.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <type_traits>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "mlpd/decoder.h"
#include "mlpd/format.h"
#include "mlpd/header_decoder.h"
#include "mlpd/input.h"
#include "mlpd/live.h"
#include "mlpd/profile.h"
#include "mlpd/views.h"

namespace mlpd::cli {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 1 << 20;        // plain bytes read (and decoded) at a time
constexpr size_t kGzipChunk = 64 << 10;   // compressed bytes at a time: what one read can inflate to stays small
constexpr size_t kMaxHeader = 1 << 20;    // a file header longer than this is not waited for
constexpr uint32_t kMaxBufferLength = 64u << 20;

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

ssize_t pread_full(int fd, uint8_t* dst, size_t n, uint64_t at) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

// Where a plain file is entered: the file header's bytes, and the first buffer boundary at or before
// `size` reached by walking the buffer headers (their lengths), with the number of buffers before it.
struct Entry {
  std::vector<uint8_t> header;
  int pid = 0;
  bool gzip = false;
  uint64_t offset = 0, buffers = 0;
};

enum class HeaderState { ok, wait, bad };

// A plain file up to `end` (the last whole buffer top's first read takes): reads, borrows and lends
// stop there; the mapping (Input::map) is the file's.
class LimitedInput final : public Input {
 public:
  LimitedInput(std::unique_ptr<Input> in, uint64_t end) : in_(std::move(in)), end_(end) {}
  size_t read(void* dst, size_t n) override {
    const size_t got = in_->read(dst, clip(n));
    offset_ = in_->offset();
    return got;
  }
  std::string error() const override { return in_->error(); }
  bool compressed() const override { return in_->compressed(); }
  const uint8_t* borrow(size_t n) override {
    if (clip(n) < n) return nullptr;
    const uint8_t* p = in_->borrow(n);
    offset_ = in_->offset();
    return p;
  }
  bool map() override { return in_->map(); }
  const uint8_t* lend(size_t n) override {
    if (clip(n) < n) return nullptr;
    const uint8_t* p = in_->lend(n);
    offset_ = in_->offset();
    return p;
  }
  void release(uint64_t offset) override { in_->release(offset); }

 private:
  size_t clip(size_t n) const { return static_cast<size_t>(std::min<uint64_t>(n, end_ - std::min(end_, in_->offset()))); }
  std::unique_ptr<Input> in_;
  uint64_t end_;
};

HeaderState read_entry(int fd, uint64_t size, Entry& e) {
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(size, kMaxHeader)));
  const ssize_t got = pread_full(fd, head.data(), head.size(), 0);
  if (got < 2) return HeaderState::wait;
  head.resize(static_cast<size_t>(got));
  if (head[0] == 0x1f && head[1] == 0x8b) {  // the header's pid: from the start, inflated
    e.gzip = true;
    profile::LiveFile lf;
    profile::IncrementalBuilder scratch;
    lf.add(head.data(), std::min<size_t>(head.size(), kGzipChunk));
    lf.feed(scratch, true);
    e.pid = lf.writer_pid();
    return lf.header_seen() ? HeaderState::ok : !lf.error().empty() || head.size() >= kMaxHeader ? HeaderState::bad
                                                                                                : HeaderState::wait;
  }
  auto in = Input::from_memory(head.data(), head.size());
  FileHeader h;
  Problem problem;
  if (!parse_file_header(*in, h, problem))
    return problem.message.rfind("truncated", 0) == 0 && head.size() < kMaxHeader ? HeaderState::wait : HeaderState::bad;
  e.pid = h.pid;
  e.header.assign(head.begin(), head.begin() + static_cast<ptrdiff_t>(in->offset()));
  uint64_t pos = e.header.size(), n = 0;
  uint8_t bh[format::kBufferHeaderSize];
  while (pos + sizeof bh <= size) {
    if (pread_full(fd, bh, sizeof bh, pos) != static_cast<ssize_t>(sizeof bh)) break;
    const uint32_t length = buffer_header_length(bh);
    if (buffer_header_id(bh) != format::kBufferId || length > kMaxBufferLength) break;  // the live stream reports it
    if (pos + sizeof bh + length > size) break;
    pos += sizeof bh + length;
    ++n;
  }
  e.offset = pos;
  e.buffers = n;
  return HeaderState::ok;
}


// One run of `mlpd top` on an open file: where counting starts, the reads (the live part, the history
// read for its names), the views, the end.
class TopSession {
 public:
  TopSession(std::string file, int fd, double interval, size_t top, bool stats, unsigned jobs)
      : file_(std::move(file)), fd_(fd), interval_(interval), stats_(stats), jobs_(jobs) {
    pipe_in_ = file_ == "-";
    struct stat st{};
    regular_ = !pipe_in_ && fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    tty_ = isatty(1);
    t_start_ = t_last_ = Clock::now();
    ro_.top = top;
    ro_.input_name = file_;
    buf_.resize(kChunk);
  }

  // Where counting starts (see the top of this file); -1 to go on, else the exit status.
  int enter(bool from_start) {
    if (!regular_ || from_start) return -1;
    Entry entry;
    HeaderState hs = HeaderState::wait;
    for (;;) {
      struct stat now{};
      if (fstat(fd_, &now) != 0) break;
      hs = read_entry(fd_, static_cast<uint64_t>(now.st_size), entry);
      if (hs != HeaderState::wait || std::chrono::duration<double>(Clock::now() - t_start_).count() > 30) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(interval_, 0.2)));
    }
    if (hs == HeaderState::ok && entry.gzip && pid_alive(entry.pid)) {
      struct stat now{};
      if (fstat(fd_, &now) == 0 && now.st_size > 0) {
        names_until_raw_ = static_cast<uint64_t>(now.st_size);
        counting_from_start_ = false;
      }
    } else if (hs == HeaderState::ok && pid_alive(entry.pid) && entry.offset > entry.header.size()) {
      live_.add(entry.header.data(), entry.header.size());
      live_.feed(builder_);
      if (!live_.skip_to(entry.offset, entry.buffers) ||
          ::lseek(fd_, static_cast<off_t>(entry.offset), SEEK_SET) != static_cast<off_t>(entry.offset)) {
        std::fprintf(stderr, "mlpd top: %s: cannot start at offset %llu\n", file_.c_str(),
                     static_cast<unsigned long long>(entry.offset));
        return 1;
      }
      hist_end_ = entry.offset;
      skipped_ = entry.offset - entry.header.size();
      counting_from_start_ = false;
    }
    return -1;
  }

  // A plain file counted from its start: its whole buffers there are read at once on every core (the
  // parallel build), then what comes after, as it comes, by one thread. -1 to go on, else the status.
  int read_start_in_parallel() {
    if (!counting_from_start_ || !regular_ || jobs_ <= 1) return -1;
    struct stat now{};
    Entry entry;
    std::string error;
    std::unique_ptr<Input> in;
    if (fstat(fd_, &now) != 0 || read_entry(fd_, static_cast<uint64_t>(now.st_size), entry) != HeaderState::ok ||
        entry.gzip || entry.buffers == 0 || !(in = Input::open(file_, error)))
      return -1;
    LimitedInput whole(std::move(in), entry.offset);
    if (!builder_.feed_whole(whole, jobs_)) return -1;
    live_.add(entry.header.data(), entry.header.size());
    live_.feed(builder_);
    if (!live_.skip_to(entry.offset, entry.buffers) ||
        ::lseek(fd_, static_cast<off_t>(entry.offset), SEEK_SET) != static_cast<off_t>(entry.offset)) {
      std::fprintf(stderr, "mlpd top: %s: cannot go on at offset %llu\n", file_.c_str(),
                   static_cast<unsigned long long>(entry.offset));
      return 1;
    }
    raw_ = entry.offset;
    return -1;
  }

  // The views, every interval, until the writer is done; the exit status.
  int run() {
    for (;;) {
      const auto t_begin = Clock::now();
      const auto deadline = t_begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_));
      // The live part, the history, then what came meanwhile.
      if (!read_live(deadline) || !read_history(deadline) || (hist_end_ && !read_live(deadline))) return read_error();
      const bool live_caught_up = eof_;
      const int pid = live_.writer_pid();
      // The writer is done: a pipe closed, or (a file) the pid is gone -- then what is left is read
      // to the end (its last bytes, the rest of a backlog, the names before the start).
      const bool done = pipe_in_ ? eof_ : (pid && !pid_alive(pid));
      if (done && !pipe_in_ && (!read_live(Clock::time_point::max()) || !read_history(Clock::time_point::max())))
        return read_error();
      if (done) live_.finish(builder_);  // a buffer still cut now is a problem
      profile::Profile p;
      builder_.snapshot(p);
      const auto now = Clock::now();
      show(p, done, live_caught_up, now);
      if (done) return finish(p, pid);
      if (!pid && !pipe_in_ && std::chrono::duration<double>(now - t_start_).count() > 30 && !live_.header_seen()) {
        std::fprintf(stderr, "mlpd top: %s: no file header after 30 s\n", file_.c_str());
        return 1;
      }
      // Caught up: wait for the rest of the interval; behind: go on at once.
      if (live_caught_up && hist_pos_ >= hist_end_ && now < deadline) std::this_thread::sleep_until(deadline);
    }
  }

 private:
  int read_error() const {
    std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file_.c_str(), std::strerror(errno));
    return 1;
  }

  void feed(profile::LiveFile& lf, bool names_only) {
    const uint64_t before = builder_.events();
    lf.feed(builder_, names_only);
    if (names_only) named_events_ += builder_.events() - before;
    held_max_ = std::max(held_max_, lf.held());
  }

  // Reads what the writer added since the last call, a chunk at a time, until the end of what is
  // written or `deadline`. False on a read error.
  bool read_live(Clock::time_point deadline) {
    eof_ = false;
    for (;;) {
      const size_t want = live_.compressed() ? kGzipChunk : kChunk;
      const ssize_t r = ::read(fd_, buf_.data(), want);
      if (r > 0) {
        raw_ += static_cast<uint64_t>(r);
        live_.add(buf_.data(), static_cast<size_t>(r));  // corrupt compressed data: live.error(), shown at the end
        feed(live_, raw_ <= names_until_raw_);
        if (Clock::now() >= deadline) return true;
        continue;
      }
      if (r == 0 || errno == EAGAIN) {
        eof_ = true;
        return true;
      }
      if (errno == EINTR) continue;
      return false;
    }
  }

  // Reads the history (for names) up to `deadline`.
  bool read_history(Clock::time_point deadline) {
    while (hist_pos_ < hist_end_) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, hist_end_ - hist_pos_));
      const ssize_t r = pread_full(fd_, buf_.data(), want, hist_pos_);
      if (r <= 0) return false;
      hist_pos_ += static_cast<uint64_t>(r);
      hist_raw_ += static_cast<uint64_t>(r);
      hist_.add(buf_.data(), static_cast<size_t>(r));
      feed(hist_, true);
      if (Clock::now() >= deadline) break;
    }
    return true;
  }

  // One view: the heading line, the short report, and with --stats how far into the file it reads.
  void show(const profile::Profile& p, bool done, bool live_caught_up, Clock::time_point now) {
    const double secs = std::chrono::duration<double>(now - t_last_).count();
    const uint64_t events = builder_.events() - std::min(builder_.events(), named_events_);
    const double rate = secs > 0 ? static_cast<double>(events - std::min(events, last_events_)) / secs : 0;
    last_events_ = events;
    t_last_ = now;
    std::string notes;
    if (done) notes += ", program exited (final)";
    if (!counting_from_start_ && !done) notes += ", counting since top started";
    if (hist_pos_ < hist_end_)
      notes += ", reading names: " + std::to_string(hist_pos_ * 100 / hist_end_) + "% of the first " +
               std::to_string(hist_end_ >> 20) + " MiB";
    if (!live_caught_up && !done) notes += ", catching up";
    if (tty_) std::fputs("\x1b[H\x1b[2J", stdout);
    const double since = std::chrono::duration<double>(now - t_start_).count();
    std::printf("== mlpd top: +%.1f s, %llu events, %.0f events/s%s ==\n", since,
                static_cast<unsigned long long>(events), rate, notes.c_str());
    if (p.header_ok()) {
      std::string error;
      ro_.counters_partial = hist_pos_ < hist_end_;  // the counters' sums lack part of the file's start
      views::write_report(p, ro_, stdout, error);
    } else {
      std::printf("(waiting for the file header)\n");
    }
    std::fflush(stdout);
    if (stats_ && !live_.compressed())  // what this view has read: the file's bytes [0, N) (whole buffers)
      std::fprintf(stderr, "mlpd top: view at +%.1f s: the file up to byte %llu%s\n", since,
                   static_cast<unsigned long long>(live_.fed()),
                   hist_pos_ < hist_end_ ? " (its start still being read for names)" : "");
  }

  // The writer is done: --stats' totals, the file's problems; the exit status.
  int finish(const profile::Profile& p, int pid) const {
    if (stats_)
      std::fprintf(stderr, "mlpd top: read %llu bytes, decoded %llu bytes, held at most %llu bytes\n",
                   static_cast<unsigned long long>(raw_ + hist_raw_),
                   static_cast<unsigned long long>(live_.fed() - skipped_ +
                                                   (hist_.fed() ? hist_.fed() - (hist_end_ - skipped_) : 0)),
                   static_cast<unsigned long long>(held_max_));
    if (!live_.error().empty()) std::fprintf(stderr, "%s: %s\n", file_.c_str(), live_.error().c_str());
    if (p.problem_count() == 0 && live_.error().empty()) return 0;
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
  const int fd_;
  const double interval_;
  const bool stats_;
  const unsigned jobs_;
  bool pipe_in_ = false, regular_ = false, tty_ = false;
  profile::LiveFile live_, hist_;
  profile::IncrementalBuilder builder_;
  Clock::time_point t_start_, t_last_;
  uint64_t hist_end_ = 0, hist_pos_ = 0;  // plain file entered in the middle: its history [0, hist_end)
  uint64_t skipped_ = 0;                  // the bytes of the live stream's jump (hist_end - header)
  uint64_t names_until_raw_ = 0;          // gzip: raw bytes up to here are read for their names only
  bool counting_from_start_ = true;
  std::vector<uint8_t> buf_;
  uint64_t raw_ = 0, hist_raw_ = 0, held_max_ = 0;
  uint64_t named_events_ = 0;  // events decoded only for their names (not counted)
  uint64_t last_events_ = 0;
  bool eof_ = false;
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
  TopSession session(file, fd, interval, top, stats, jobs);
  if (const int status = session.enter(from_start); status >= 0) return status;
  if (const int status = session.read_start_in_parallel(); status >= 0) return status;
  return session.run();
}

}  // namespace mlpd::cli
