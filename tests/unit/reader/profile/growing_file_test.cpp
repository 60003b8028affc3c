// The reading of a growing file (reader/profile/live.cpp: GrowingFile, find_entry, limited_input), as
// mlpd top reads it: a real file on disk written in steps while it is read, where counting starts, the
// history read for its names, a buffer cut at the end, a bad buffer header, gzip, the first read on
// several threads.
#include "mlpd_catch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/input.h"
#include "mlpd/live.h"
#include "mlpd/profile.h"
#include "temp_dir.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

constexpr uint64_t kA = 0x1000, kB = 0x2000;

Event ev(EventKind k, uint64_t method, uint64_t t) {
  Event e;
  e.kind = k;
  e.time = t;
  e.method = method;
  return e;
}

Event jit(uint64_t method, const std::string& name, uint64_t t) {
  Event e = ev(EventKind::method_jit, method, t);
  e.ptr = method * 16;
  e.size = 0x40;
  e.name = name;
  return e;
}

// Buffer i of a file: `calls` calls of A (A's name in buffer 0, B's in buffer 1, B called from buffer 1
// on), each buffer 6 events per call of A (+B) besides the names.
ThreadBuffer buffer(int i, int calls = 10) {
  ThreadBuffer b{0x77, 0, {}};
  uint64_t t = 1000 + static_cast<uint64_t>(i) * 10000;
  if (i == 0) b.events.push_back(jit(kA, "N:A ()", t));
  if (i == 1) b.events.push_back(jit(kB, "N:B ()", t));
  for (int k = 0; k < calls; ++k) {
    b.events.push_back(ev(EventKind::method_enter, kA, t += 3));
    if (i >= 1) b.events.push_back(ev(EventKind::method_enter, kB, t += 2));
    if (i >= 1) b.events.push_back(ev(EventKind::method_leave, kB, t += 5));
    b.events.push_back(ev(EventKind::method_leave, kA, t += 1));
  }
  return b;
}

FileHeader header_of(int pid) {
  FileHeader h = default_header();
  h.pid = pid;
  return h;
}

std::vector<uint8_t> header_bytes(int pid) { return build_file(header_of(pid), {}); }

// A file on disk that grows: append() adds bytes as a writer does; fd() is open for reading.
struct Grown {
  TempDir dir{"mlpd_growing"};
  std::string path = dir.file("live.mlpd");
  int wfd = -1, rfd = -1;
  Grown() {
    wfd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~Grown() {
    ::close(wfd);
    ::close(rfd);
  }
  void append(const std::vector<uint8_t>& b) { REQUIRE(::write(wfd, b.data(), b.size()) == static_cast<ssize_t>(b.size())); }
  uint64_t size() const { return static_cast<uint64_t>(::lseek(wfd, 0, SEEK_CUR)); }
};

const MethodStat* stat_of(const Profile& p, const std::string& name) {
  for (FrameId f = 0; f < p.frames().size(); ++f)
    if (p.frames()[f].name == name) return &p.methods()[f];
  return nullptr;
}

const auto kNever = GrowingFile::Clock::time_point::max();

uint64_t events_in(const std::vector<ThreadBuffer>& bufs) {
  uint64_t n = 0;
  for (const ThreadBuffer& b : bufs) n += b.events.size();
  return n;
}

}  // namespace

TEST_CASE("growing file: entered where it is, the rest read as it grows, the start for names", "[profile][live]") {
  Grown g;
  g.append(header_bytes(getpid()));  // the writer lives: counting starts where the file is
  std::vector<ThreadBuffer> before = {buffer(0), buffer(1)};
  for (const ThreadBuffer& b : before) g.append(encode_buffer(b));
  const std::vector<uint8_t> cut = encode_buffer(buffer(2));  // being written when reading starts
  g.append(std::vector<uint8_t>(cut.begin(), cut.begin() + 30));
  const uint64_t boundary = g.size() - 30;

  FileEntry e;
  REQUIRE(find_entry(g.rfd, g.size(), e) == EntryState::ok);
  CHECK_FALSE(e.gzip);
  CHECK(e.pid == getpid());
  CHECK(e.header == header_bytes(getpid()));
  CHECK(e.offset == boundary);  // the last whole buffer's end, not the cut one's
  CHECK(e.buffers == 2);

  GrowingFile f(g.rfd, g.path, true);
  REQUIRE(f.enter(false, 0.01));
  CHECK_FALSE(f.counting_from_start());
  CHECK(f.history_size() == boundary);
  // The cut buffer's rest and two more, in steps, each read as it comes.
  g.append(std::vector<uint8_t>(cut.begin() + 30, cut.end()));
  REQUIRE(f.read_live(kNever));
  CHECK(f.at_end());
  CHECK(f.counted_events() == events_in({buffer(2)}));
  for (int i = 3; i < 5; ++i) {
    const std::vector<uint8_t> b = encode_buffer(buffer(i));
    g.append(std::vector<uint8_t>(b.begin(), b.begin() + 7));  // a buffer header not all there: held back
    REQUIRE(f.read_live(kNever));
    CHECK(f.counted_events() == events_in({buffer(2)}) + events_in({buffer(3)}) * static_cast<uint64_t>(i - 3));
    g.append(std::vector<uint8_t>(b.begin() + 7, b.end()));
    REQUIRE(f.read_live(kNever));
  }
  const uint64_t counted = events_in({buffer(2), buffer(3), buffer(4)});
  CHECK(f.counted_events() == counted);
  Profile p;
  f.snapshot(p);
  CHECK(p.call_count() == 60);  // only the calls (enters of A and B) written after reading started
  // Before the history is read, A and B (named in buffers 0 and 1) have no names yet.
  CHECK(stat_of(p, "N:A ()") == nullptr);
  CHECK(f.history_left());
  REQUIRE(f.read_history(kNever));
  CHECK_FALSE(f.history_left());
  CHECK(f.counted_events() == counted);  // the history's events are not counted
  f.finish();
  f.snapshot(p);
  CHECK(p.problems().empty());
  CHECK(p.call_count() == 60);
  REQUIRE(stat_of(p, "N:A ()") != nullptr);
  CHECK(stat_of(p, "N:A ()")->calls == 30);
  REQUIRE(stat_of(p, "N:B ()") != nullptr);
  CHECK(stat_of(p, "N:B ()")->calls == 30);
  CHECK(f.bytes_read() == g.size());
  CHECK(f.bytes_decoded() == g.size());
}

TEST_CASE("growing file: a gone writer's file counts from its start, and a cut buffer is its problem",
          "[profile][live]") {
  Grown g;
  g.append(header_bytes(0));  // no writer: the whole file counts
  std::vector<ThreadBuffer> bufs = {buffer(0), buffer(1), buffer(2)};
  for (const ThreadBuffer& b : bufs) g.append(encode_buffer(b));
  const std::vector<uint8_t> last = encode_buffer(buffer(3));
  g.append(std::vector<uint8_t>(last.begin(), last.end() - 5));  // the writer was killed mid-buffer

  std::vector<uint8_t> whole_bytes = header_bytes(0);
  for (const ThreadBuffer& b : bufs) {
    const std::vector<uint8_t> e = encode_buffer(b);
    whole_bytes.insert(whole_bytes.end(), e.begin(), e.end());
  }
  whole_bytes.insert(whole_bytes.end(), last.begin(), last.end() - 5);
  auto in = Input::from_memory(whole_bytes.data(), whole_bytes.size());
  Profile expected;
  build_profile(*in, expected);
  REQUIRE(expected.problems().size() == 1);

  for (const unsigned jobs : {1u, 2u}) {
    INFO("jobs " << jobs);
    REQUIRE(::lseek(g.rfd, 0, SEEK_SET) == 0);
    GrowingFile f(g.rfd, g.path, true);
    REQUIRE(f.enter(false, 0.01));
    CHECK(f.counting_from_start());
    CHECK(f.history_size() == 0);
    REQUIRE(f.read_start_in_parallel(jobs));
    REQUIRE(f.read_live(kNever));
    Profile p;
    f.snapshot(p);
    CHECK(p.problems().empty());  // the cut buffer is waited for
    CHECK(p.call_count() == 50);
    CHECK(f.live().held() == last.size() - 5);
    f.finish();
    f.snapshot(p);
    REQUIRE(p.problems().size() == 1);
    CHECK(p.problems()[0].message == expected.problems()[0].message);
    CHECK(p.problems()[0].offset == expected.problems()[0].offset);
    CHECK(p.call_count() == expected.call_count());
    CHECK(p.summary().events == expected.summary().events);
    CHECK(f.bytes_read() == g.size());
  }
}

TEST_CASE("growing file: a bad header or buffer header", "[profile][live]") {
  SECTION("not an mlpd file: bad; a header not all written: wait") {
    Grown g;
    FileEntry e;
    CHECK(find_entry(g.rfd, 0, e) == EntryState::wait);
    const std::vector<uint8_t> h = header_bytes(getpid());
    g.append(std::vector<uint8_t>(h.begin(), h.begin() + 10));
    CHECK(find_entry(g.rfd, g.size(), e) == EntryState::wait);
    Grown junk;
    junk.append(std::vector<uint8_t>(200, 'x'));
    CHECK(find_entry(junk.rfd, junk.size(), e) == EntryState::bad);
    // enter() does not wait past its limit for a header that never comes; the file then counts whole.
    GrowingFile f(g.rfd, g.path, true);
    REQUIRE(f.enter(false, 0.01, 0.05));
    CHECK(f.counting_from_start());
  }
  SECTION("a bad buffer header: the walk stops there, and the reading reports it") {
    Grown g;
    g.append(header_bytes(getpid()));
    g.append(encode_buffer(buffer(0)));
    std::vector<uint8_t> bad = encode_buffer(buffer(1));
    bad[0] ^= 0xff;  // the buffer id
    const uint64_t at = g.size();
    g.append(bad);
    g.append(encode_buffer(buffer(2)));
    FileEntry e;
    REQUIRE(find_entry(g.rfd, g.size(), e) == EntryState::ok);
    CHECK(e.offset == at);
    CHECK(e.buffers == 1);
    GrowingFile f(g.rfd, g.path, true);
    REQUIRE(f.enter(false, 0.01));
    CHECK(f.history_size() == at);
    REQUIRE(f.read_live(kNever));
    REQUIRE(f.read_history(kNever));
    f.finish();
    Profile p;
    f.snapshot(p);
    REQUIRE(p.problems().size() == 1);
    CHECK(p.problems()[0].offset == at);
    CHECK(p.call_count() == 0);  // nothing after the bad header counts
  }
}

TEST_CASE("growing file: gzip is read from its start, what came before for its names", "[profile][live]") {
  Grown g;
  std::vector<uint8_t> first = header_bytes(getpid());
  for (int i = 0; i < 2; ++i) {
    const std::vector<uint8_t> b = encode_buffer(buffer(i));
    first.insert(first.end(), b.begin(), b.end());
  }
  g.append(gzip(first));  // one member per flush round, as the agent's zip writes
  FileEntry e;
  REQUIRE(find_entry(g.rfd, g.size(), e) == EntryState::ok);
  CHECK(e.gzip);
  CHECK(e.pid == getpid());

  GrowingFile f(g.rfd, g.path, true);
  REQUIRE(f.enter(false, 0.01));
  CHECK_FALSE(f.counting_from_start());
  CHECK(f.history_size() == 0);  // no history: the start is read in the live stream, for names
  REQUIRE(f.read_start_in_parallel(2));  // not for gzip: nothing happens
  REQUIRE(f.read_live(kNever));
  CHECK(f.live().compressed());
  CHECK(f.counted_events() == 0);
  g.append(gzip(encode_buffer(buffer(2))));
  REQUIRE(f.read_live(kNever));
  CHECK(f.counted_events() == events_in({buffer(2)}));
  f.finish();
  Profile p;
  f.snapshot(p);
  CHECK(p.problems().empty());
  CHECK(p.call_count() == 20);
  REQUIRE(stat_of(p, "N:B ()") != nullptr);  // named before reading started
  CHECK(stat_of(p, "N:B ()")->calls == 10);
}

TEST_CASE("limited input: reads, borrows and lends stop at its end", "[profile][live]") {
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  auto in = limited_input(Input::from_memory(bytes.data(), bytes.size()), 60);
  uint8_t buf[50];
  CHECK(in->read(buf, 50) == 50);
  CHECK(in->offset() == 50);
  CHECK(in->borrow(11) == nullptr);
  CHECK(in->lend(11) == nullptr);
  if (const uint8_t* p = in->borrow(10))
    CHECK(p[0] == 50);
  else
    CHECK(in->read(buf, 50) == 10);
  CHECK(in->read(buf, 50) == 0);
  CHECK(in->offset() == 60);
}
