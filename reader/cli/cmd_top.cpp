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

}  // namespace

int cmd_top(int argc, char** argv) {
  std::string file;
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
  if (!files.empty()) file = files[0];
  if (file.empty()) return usage_error("no FILE given");
  const bool pipe_in = file == "-";
  const int fd = pipe_in ? 0 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "mlpd top: %s: cannot open: %s\n", file.c_str(), std::strerror(errno));
    return 1;
  }
  struct stat st{};
  const bool regular = !pipe_in && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const bool tty = isatty(1);
  profile::LiveFile live, hist;
  profile::IncrementalBuilder builder;
  const auto t_start = Clock::now();

  // Where counting starts (see the top of this file).
  uint64_t hist_end = 0, hist_pos = 0;  // plain file entered in the middle: its history [0, hist_end)
  uint64_t skipped = 0;                 // the bytes of the live stream's jump (hist_end - header)
  uint64_t names_until_raw = 0;         // gzip: raw bytes up to here are read for their names only
  bool counting_from_start = true;
  if (regular && !from_start) {
    Entry entry;
    HeaderState hs = HeaderState::wait;
    for (;;) {
      struct stat now{};
      if (fstat(fd, &now) != 0) break;
      hs = read_entry(fd, static_cast<uint64_t>(now.st_size), entry);
      if (hs != HeaderState::wait || std::chrono::duration<double>(Clock::now() - t_start).count() > 30) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(interval, 0.2)));
    }
    if (hs == HeaderState::ok && entry.gzip && pid_alive(entry.pid)) {
      struct stat now{};
      if (fstat(fd, &now) == 0 && now.st_size > 0) {
        names_until_raw = static_cast<uint64_t>(now.st_size);
        counting_from_start = false;
      }
    } else if (hs == HeaderState::ok && pid_alive(entry.pid) && entry.offset > entry.header.size()) {
      live.add(entry.header.data(), entry.header.size());
      live.feed(builder);
      if (live.skip_to(entry.offset, entry.buffers) &&
          ::lseek(fd, static_cast<off_t>(entry.offset), SEEK_SET) == static_cast<off_t>(entry.offset)) {
        hist_end = entry.offset;
        skipped = entry.offset - entry.header.size();
        counting_from_start = false;
      } else {
        std::fprintf(stderr, "mlpd top: %s: cannot start at offset %llu\n", file.c_str(),
                     static_cast<unsigned long long>(entry.offset));
        return 1;
      }
    }
  }

  std::vector<uint8_t> buf(kChunk);
  uint64_t raw = 0, hist_raw = 0, held_max = 0;
  // A plain file counted from its start: its whole buffers there are read at once on every core (the
  // parallel build), then what comes after, as it comes, by one thread.
  if (counting_from_start && regular && jobs > 1) {
    struct stat now{};
    Entry entry;
    std::string error;
    std::unique_ptr<Input> in;
    if (fstat(fd, &now) == 0 && read_entry(fd, static_cast<uint64_t>(now.st_size), entry) == HeaderState::ok &&
        !entry.gzip && entry.buffers > 0 && (in = Input::open(file, error))) {
      LimitedInput whole(std::move(in), entry.offset);
      if (builder.feed_whole(whole, jobs)) {
        live.add(entry.header.data(), entry.header.size());
        live.feed(builder);
        if (!live.skip_to(entry.offset, entry.buffers) ||
            ::lseek(fd, static_cast<off_t>(entry.offset), SEEK_SET) != static_cast<off_t>(entry.offset)) {
          std::fprintf(stderr, "mlpd top: %s: cannot go on at offset %llu\n", file.c_str(),
                       static_cast<unsigned long long>(entry.offset));
          return 1;
        }
        raw = entry.offset;
      }
    }
  }
  uint64_t named_events = 0;  // events decoded only for their names (not counted)
  uint64_t last_events = 0;
  auto t_last = t_start;
  views::ReportOptions ro;
  ro.top = top;
  ro.input_name = file;
  auto feed = [&](profile::LiveFile& lf, bool names_only) {
    const uint64_t before = builder.events();
    lf.feed(builder, names_only);
    if (names_only) named_events += builder.events() - before;
    held_max = std::max(held_max, lf.held());
  };
  // Reads what the writer added since the last call, a chunk at a time, until the end of what is
  // written or `deadline`. False on a read error.
  bool eof = false;
  auto read_live = [&](Clock::time_point deadline) {
    eof = false;
    for (;;) {
      const size_t want = live.compressed() ? kGzipChunk : kChunk;
      const ssize_t r = ::read(fd, buf.data(), want);
      if (r > 0) {
        raw += static_cast<uint64_t>(r);
        live.add(buf.data(), static_cast<size_t>(r));  // corrupt compressed data: live.error(), shown at the end
        feed(live, raw <= names_until_raw);
        if (Clock::now() >= deadline) return true;
        continue;
      }
      if (r == 0) {
        eof = true;
        return true;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        eof = true;
        return true;
      }
      return false;
    }
  };
  // Reads the history (for names) up to `deadline`.
  auto read_history = [&](Clock::time_point deadline) {
    while (hist_pos < hist_end) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, hist_end - hist_pos));
      const ssize_t r = pread_full(fd, buf.data(), want, hist_pos);
      if (r <= 0) return false;
      hist_pos += static_cast<uint64_t>(r);
      hist_raw += static_cast<uint64_t>(r);
      hist.add(buf.data(), static_cast<size_t>(r));
      feed(hist, true);
      if (Clock::now() >= deadline) break;
    }
    return true;
  };

  for (;;) {
    const auto t_begin = Clock::now();
    const auto deadline = t_begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
    if (!read_live(deadline)) {
      std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file.c_str(), std::strerror(errno));
      return 1;
    }
    if (!read_history(deadline) || (hist_end && !read_live(deadline))) {  // the history, then what came meanwhile
      std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file.c_str(), std::strerror(errno));
      return 1;
    }
    const bool live_caught_up = eof;
    const int pid = live.writer_pid();
    // The writer is done: a pipe closed, or (a file) the pid is gone -- then what is left is read
    // to the end (its last bytes, the rest of a backlog, the names before the start).
    const bool done = pipe_in ? eof : (pid && !pid_alive(pid));
    if (done && !pipe_in) {
      if (!read_live(Clock::time_point::max()) || !read_history(Clock::time_point::max())) {
        std::fprintf(stderr, "mlpd top: %s: read error: %s\n", file.c_str(), std::strerror(errno));
        return 1;
      }
    }
    if (done) live.finish(builder);  // a buffer still cut now is a problem
    profile::Profile p;
    builder.snapshot(p);
    const bool clean = p.problem_count() == 0 && live.error().empty();
    const auto now = Clock::now();
    const double secs = std::chrono::duration<double>(now - t_last).count();
    const uint64_t events = builder.events() - std::min(builder.events(), named_events);
    const double rate = secs > 0 ? static_cast<double>(events - std::min(events, last_events)) / secs : 0;
    last_events = events;
    t_last = now;
    std::string notes;
    if (done) notes += ", program exited (final)";
    if (!counting_from_start && !done) notes += ", counting since top started";
    if (hist_pos < hist_end)
      notes += ", reading names: " + std::to_string(hist_pos * 100 / hist_end) + "% of the first " +
               std::to_string(hist_end >> 20) + " MiB";
    if (!live_caught_up && !done) notes += ", catching up";
    if (tty) std::fputs("\x1b[H\x1b[2J", stdout);
    std::printf("== mlpd top: +%.1f s, %llu events, %.0f events/s%s ==\n",
                std::chrono::duration<double>(now - t_start).count(), static_cast<unsigned long long>(events), rate,
                notes.c_str());
    if (p.header_ok()) {
      std::string error;
      ro.counters_partial = hist_pos < hist_end;  // the counters' sums lack part of the file's start
      views::write_report(p, ro, stdout, error);
    } else {
      std::printf("(waiting for the file header)\n");
    }
    std::fflush(stdout);
    if (stats && !live.compressed())  // what this view has read: the file's bytes [0, N) (whole buffers)
      std::fprintf(stderr, "mlpd top: view at +%.1f s: the file up to byte %llu%s\n",
                   std::chrono::duration<double>(now - t_start).count(), static_cast<unsigned long long>(live.fed()),
                   hist_pos < hist_end ? " (its start still being read for names)" : "");
    if (done) {
      if (stats)
        std::fprintf(stderr, "mlpd top: read %llu bytes, decoded %llu bytes, held at most %llu bytes\n",
                     static_cast<unsigned long long>(raw + hist_raw),
                     static_cast<unsigned long long>(live.fed() - skipped + (hist.fed() ? hist.fed() - (hist_end - skipped) : 0)),
                     static_cast<unsigned long long>(held_max));
      if (!live.error().empty()) std::fprintf(stderr, "%s: %s\n", file.c_str(), live.error().c_str());
      if (!clean) {
        for (const Problem& pr : p.problems())
          std::fprintf(stderr, "%s: offset %llu: %s\n", file.c_str(), static_cast<unsigned long long>(pr.offset),
                       pr.message.c_str());
        bool cut = false;  // the decoder's "truncated ..." problems: the file ends inside a buffer
        for (const Problem& pr : p.problems()) cut = cut || pr.message.rfind("truncated", 0) == 0;
        if (cut)
          std::fprintf(stderr, "mlpd top: %s: the writer (pid %d) has exited and left the file incomplete\n",
                       file.c_str(), pid);
        else if (p.problem_count())
          std::fprintf(stderr, "mlpd top: %s: %llu problem%s (the figures show what could be read)\n", file.c_str(),
                       static_cast<unsigned long long>(p.problem_count()), p.problem_count() == 1 ? "" : "s");
        return 1;
      }
      return 0;
    }
    if (!pid && !pipe_in && std::chrono::duration<double>(now - t_start).count() > 30 && !live.header_seen()) {
      std::fprintf(stderr, "mlpd top: %s: no file header after 30 s\n", file.c_str());
      return 1;
    }
    // Caught up: wait for the rest of the interval; behind: go on at once.
    if (live_caught_up && hist_pos >= hist_end && now < deadline) std::this_thread::sleep_until(deadline);
  }
}

}  // namespace mlpd::cli
