// Output sinks: files, gzip, pipes to commands, inherited descriptors, failure states and SIGPIPE safety.
#include "mlpd_catch.h"

#include "temp_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mlpd/output_cut.h"
#include "mlpd/sink.h"

using namespace mlpd;
using Bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;

namespace {

using mlpd::test::TempDir;

Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Profile-like data: compressible but not trivially so.
Bytes make_data(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out(size);
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>((rng() % 16) + (i % 7) * 3);
  return out;
}

// Inflates a gzip stream of one or more members (as gzip -d and zlib's gzread do); `ended` tells whether
// the input ended exactly after a member's trailer. A stream cut inside a member inflates up to the cut and
// stops with Z_BUF_ERROR ("need more input"); `members` counts the complete members.
Bytes gunzip(const Bytes& in, bool& ended, size_t* members = nullptr) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  Bytes out;
  uint8_t buf[16384];
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  ended = false;
  size_t complete = 0;
  for (;;) {
    zs.next_out = buf;
    zs.avail_out = sizeof buf;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), buf, buf + (sizeof buf - zs.avail_out));
    if (rc == Z_STREAM_END) {
      ++complete;
      if (zs.avail_in == 0) {
        ended = true;
        break;
      }
      REQUIRE(inflateReset(&zs) == Z_OK);
      continue;
    }
    if (rc == Z_BUF_ERROR) break;
    REQUIRE(rc == Z_OK);
  }
  inflateEnd(&zs);
  if (members) *members = complete;
  return out;
}

Bytes gunzip(const Bytes& in) {
  bool ended = false;
  Bytes out = gunzip(in, ended);
  CHECK(ended);
  return out;
}

void write_chunks(OutputSink& sink, const Bytes& data, size_t chunk) {
  for (size_t pos = 0; pos < data.size(); pos += chunk) {
    REQUIRE(sink.write(data.data() + pos, std::min(chunk, data.size() - pos)));
  }
}

bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

bool sigpipe_blocked() {
  sigset_t mask;
  sigemptyset(&mask);
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

// Puts SIGPIPE at its default disposition (kills the process) and unblocked for the test's duration: if a
// sink ever let one through, the test binary would die.
struct DefaultSigpipe {
  struct sigaction old_action {};
  sigset_t old_mask;
  DefaultSigpipe() {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &old_action);
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_UNBLOCK, &pipe_only, &old_mask);
  }
  ~DefaultSigpipe() {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    sigaction(SIGPIPE, &old_action, nullptr);
  }
};

std::unique_ptr<OutputSink> must_open(OutputKind kind, const std::string& target, bool zip,
                                      const SinkOptions& options = {}) {
  std::string error;
  auto sink = open_sink(kind, target, zip, error, options);
  INFO(error);
  REQUIRE(sink);
  CHECK(error.empty());
  return sink;
}

// Writes until the sink fails (at most max_bytes); true if it failed.
bool write_until_failure(OutputSink& sink, size_t max_bytes) {
  const Bytes chunk = make_data(64 * 1024, 9);
  for (size_t written = 0; written < max_bytes; written += chunk.size()) {
    if (!sink.write(chunk.data(), chunk.size())) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("file sink: bytes round trip, file created 0644 and truncated", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("out.mlpd");
  { std::ofstream(path) << "old content that must disappear, longer than nothing"; }
  const Bytes data = make_data(3 * 1024 * 1024 + 17, 1);
  auto sink = must_open(OutputKind::File, path, false);
  CHECK(sink->describe() == path);
  write_chunks(*sink, data, 100000);
  CHECK(sink->write(data.data(), 0));
  CHECK(sink->flush());
  CHECK(read_all(path) == data);  // readable before close: plain writes go straight to the kernel
  CHECK(sink->close());
  CHECK(sink->close());  // idempotent
  CHECK(sink->error().empty());
  CHECK_FALSE(sink->write(data.data(), 1));  // closed
  CHECK(read_all(path) == data);

  const mode_t mask = umask(0);
  umask(mask);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0644 & ~mask));
}

TEST_CASE("file sink: a kill cuts the process's output file back to its last whole round", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("out.mlpd");
  const Bytes data = make_data(300000, 7);
  SinkOptions options;
  options.cut_on_kill = true;
  std::string error;
  auto sink = open_sink(OutputKind::File, path, false, error, options);
  REQUIRE(sink);
  REQUIRE(sink->write(data.data(), 100000));
  sink->mark_whole();
  REQUIRE(sink->write(data.data() + 100000, 150000));  // a round whose last buffer the kill would cut
  CHECK(output_cut::cut(0));
  CHECK(read_all(path) == Bytes(data.begin(), data.begin() + 100000));
  CHECK(sink->write(data.data(), 1000));  // after the cut: accepted, and nothing written
  CHECK(read_all(path).size() == 100000);
  output_cut::forget();  // cut() froze the output (a dying process leaves the descriptor as it is)
  CHECK(sink->close());
  // Nothing whole yet (the header not written): the file is left as it is.
  sink = open_sink(OutputKind::File, path, false, error, options);
  REQUIRE(sink);
  REQUIRE(sink->write(data.data(), 10));
  CHECK_FALSE(output_cut::cut(0));
  output_cut::forget();  // cut() froze the output; a test process goes on
  CHECK(read_all(path).size() == 10);
  CHECK(sink->close());
  // Closed: the descriptor is no longer the one to cut (another may get its number).
  sink = open_sink(OutputKind::File, path, false, error, options);
  REQUIRE(sink);
  REQUIRE(sink->write(data.data(), 100));
  sink->mark_whole();
  REQUIRE(sink->write(data.data(), 50));
  CHECK(sink->close());
  CHECK_FALSE(output_cut::cut(0));
  output_cut::forget();
  CHECK(read_all(path).size() == 150);
}

// The handler freezes the output while the helper writes a buffer's header (the handler then waits for
// that write), the helper skips the buffer's data and the rest of the round, and marks the round whole
// before the handler reads the mark. Before the fix that mark (the header's end, as the skipped data is
// not counted) was the file's size: nothing was cut and the file ended with a header without its data
// (agent_kill_whole_file: "needs 65517 bytes, 0 present"). The interleaving, one step at a time.
TEST_CASE("file sink: a round the kill stops after a buffer's header is not marked whole", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("out.mlpd");
  const Bytes data = make_data(70000, 9);
  SinkOptions options;
  options.cut_on_kill = true;
  std::string error;
  auto sink = open_sink(OutputKind::File, path, false, error, options);
  REQUIRE(sink);
  REQUIRE(sink->write(data.data(), 1000));  // a whole round
  sink->mark_whole();
  REQUIRE(sink->write(data.data() + 1000, 48));  // the next round's first buffer header
  output_cut::freeze();                          // the handler's first step
  CHECK(sink->write(data.data() + 1048, 65000));  // the buffer's data: skipped, quietly
  CHECK(sink->flush());
  sink->mark_whole();  // the helper's end of the round
  CHECK(output_cut::cut(0));  // the handler's rest: back to the last round written whole
  const Bytes left = read_all(path);
  CHECK(left.size() == 1000);
  CHECK(left == Bytes(data.begin(), data.begin() + 1000));
  output_cut::forget();
  CHECK(sink->close());
}

// The same, and the helper's next round rotates (rotate=, rotate-size=) before the handler reads what to
// cut: the old file's close is skipped (frozen), the new file is opened. Before, the new file took the
// old one's place: the handler found nothing whole there and the old file kept its header without data.
TEST_CASE("file sink: a rotation after the kill's freeze leaves the old file the one cut", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("out.mlpd");
  const std::string next = dir.file("out.2.mlpd");
  const Bytes data = make_data(70000, 10);
  SinkOptions options;
  options.cut_on_kill = true;
  std::string error;
  auto sink = open_sink(OutputKind::File, path, false, error, options);
  REQUIRE(sink);
  REQUIRE(sink->write(data.data(), 1000));
  sink->mark_whole();
  REQUIRE(sink->write(data.data() + 1000, 48));
  output_cut::freeze();
  CHECK(sink->write(data.data() + 1048, 65000));
  sink->mark_whole();
  CHECK(sink->close());  // the rotation: frozen, so the descriptor is left as it is
  auto second = open_sink(OutputKind::File, next, false, error, options);
  REQUIRE(second);
  CHECK(second->write(data.data(), 1000));  // the new file's header: skipped
  second->mark_whole();
  CHECK(output_cut::cut(0));
  CHECK(read_all(path).size() == 1000);
  CHECK(read_all(next).empty());
  output_cut::forget();
  CHECK(second->close());
}

TEST_CASE("file sink: an output that is not the process's own is never cut", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("dump.mlpd");
  const Bytes data = make_data(5000, 8);
  auto sink = must_open(OutputKind::File, path, false);
  REQUIRE(sink->write(data.data(), 1000));
  sink->mark_whole();
  REQUIRE(sink->write(data.data() + 1000, 4000));
  CHECK_FALSE(output_cut::cut(0));
  output_cut::forget();
  CHECK(read_all(path) == data);
}

TEST_CASE("file sink: a path in a missing directory fails to open with a clear message", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/out.mlpd");
  for (bool zip : {false, true}) {
    std::string error;
    auto sink = open_sink(OutputKind::File, path, zip, error);
    CHECK_FALSE(sink);
    CHECK(error == "mlpd: cannot create output file '" + path + "': No such file or directory");
  }
}

TEST_CASE("file sink: /dev/full gives a clear ENOSPC failure state", "[sink]") {
  SECTION("plain") {
    auto sink = must_open(OutputKind::File, "/dev/full", false);
    const Bytes data = make_data(1000, 2);
    CHECK_FALSE(sink->write(data.data(), data.size()));
    const std::string expected = "mlpd: cannot write to '/dev/full': No space left on device; profiling stopped";
    CHECK(sink->error() == expected);
    CHECK_FALSE(sink->write(data.data(), data.size()));
    CHECK_FALSE(sink->flush());
    CHECK_FALSE(sink->close());
    CHECK(sink->error() == expected);  // the first failure stays the message
  }
  SECTION("gzip: buffered writes succeed, the flush that reaches the device fails") {
    auto sink = must_open(OutputKind::File, "/dev/full", true);
    const Bytes data = make_data(1000, 2);
    CHECK(sink->write(data.data(), data.size()));
    CHECK_FALSE(sink->flush());
    CHECK(sink->error() == "mlpd: cannot write to '/dev/full': No space left on device; profiling stopped");
    CHECK_FALSE(sink->write(data.data(), data.size()));
    CHECK_FALSE(sink->close());
  }
}

TEST_CASE("gzip file sink: round trip through zlib", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("out.mlpd.gz");
  const Bytes data = make_data(2 * 1024 * 1024 + 5, 3);
  auto sink = must_open(OutputKind::File, path, true);
  write_chunks(*sink, data, 4096);
  CHECK(sink->close());
  const Bytes file = read_all(path);
  REQUIRE(file.size() > 10);
  CHECK(file[0] == 0x1f);
  CHECK(file[1] == 0x8b);
  CHECK(file.size() < data.size());
  CHECK(gunzip(file) == data);
}

TEST_CASE("gzip file sink: every flush ends a gzip member, so an unclosed file is complete up to it", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("live.mlpd.gz");
  const Bytes a = make_data(300000, 4);
  const Bytes b = make_data(1234, 5);
  auto sink = must_open(OutputKind::File, path, true);
  write_chunks(*sink, a, 7000);
  REQUIRE(sink->flush());
  bool ended = false;
  size_t members = 0;
  CHECK(gunzip(read_all(path), ended, &members) == a);
  CHECK(ended);  // a complete gzip file, as a killed process would leave it
  CHECK(members == 1);

  write_chunks(*sink, b, 100);
  REQUIRE(sink->flush());
  REQUIRE(sink->flush());  // a flush with nothing new adds nothing
  Bytes ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  CHECK(gunzip(read_all(path), ended, &members) == ab);
  CHECK(ended);
  CHECK(members == 2);

  // What a kill in the middle of writing a member leaves: the members before it inflate whole.
  const Bytes c = make_data(100000, 9);
  write_chunks(*sink, c, 5000);
  const size_t before = read_all(path).size();
  REQUIRE(sink->flush());
  Bytes cut = read_all(path);
  REQUIRE(cut.size() > before + 100);
  cut.resize(before + (cut.size() - before) / 2);
  const Bytes partial = gunzip(cut, ended, &members);
  CHECK_FALSE(ended);
  CHECK(members == 2);
  REQUIRE(partial.size() >= ab.size());
  CHECK(Bytes(partial.begin(), partial.begin() + static_cast<long>(ab.size())) == ab);

  REQUIRE(sink->close());
  Bytes abc = ab;
  abc.insert(abc.end(), c.begin(), c.end());
  CHECK(gunzip(read_all(path), ended, &members) == abc);
  CHECK(ended);
  CHECK(members == 3);
}

TEST_CASE("gzip sink: a large write becomes members of bounded size", "[sink]") {
  auto memory = std::make_unique<MemorySink>();
  MemorySink* inner = memory.get();
  std::string error;
  auto sink = make_gzip_sink(std::move(memory), -1, error);
  REQUIRE(sink);
  // Members are held until the round's flush (so that a file ends where a round ended), but at most
  // 4 MiB of them: a larger round is written through as it goes (this data compresses to ~60%).
  const Bytes small = make_data(5 * 1024 * 1024 + 17, 11);
  REQUIRE(sink->write(small.data(), small.size()));  // one call, no flush
  CHECK(inner->data().empty());                      // five members held
  REQUIRE(sink->flush());
  CHECK(inner->data().size() > 0);
  const size_t after_flush = inner->data().size();
  const Bytes data = make_data(33 * 1024 * 1024 + 17, 12);
  REQUIRE(sink->write(data.data(), data.size()));
  CHECK(inner->data().size() > after_flush);  // held members went out before any flush
  REQUIRE(sink->close());
  bool ended = false;
  size_t members = 0;
  Bytes both = small;
  both.insert(both.end(), data.begin(), data.end());
  CHECK(gunzip(inner->data(), ended, &members) == both);
  CHECK(ended);
  CHECK(members == 6 + 34);  // 5 full stages and the rest; 33 full stages and the rest
}

TEST_CASE("gzip sink: while hurried, members are stored, not compressed, and still one gzip stream", "[sink]") {
  auto memory = std::make_unique<MemorySink>();
  MemorySink* inner = memory.get();
  std::string error;
  auto sink = make_gzip_sink(std::move(memory), -1, error);
  REQUIRE(sink);
  const Bytes a = make_data(2 * 1024 * 1024 + 5, 21);
  const Bytes b = make_data(2 * 1024 * 1024 + 5, 22);
  sink->set_hurry(true);
  REQUIRE(sink->write(a.data(), a.size()));
  REQUIRE(sink->flush());
  const size_t stored = inner->data().size();
  CHECK(stored >= a.size());  // stored blocks: the input and the framing
  CHECK(stored < a.size() + 4096);
  sink->set_hurry(false);
  REQUIRE(sink->write(b.data(), b.size()));
  REQUIRE(sink->close());
  CHECK(inner->data().size() - stored < b.size() * 3 / 4);  // compressed again
  bool ended = false;
  size_t members = 0;
  Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  CHECK(gunzip(inner->data(), ended, &members) == both);
  CHECK(ended);
  CHECK(members == 3 + 3);
}

TEST_CASE("gzip sink: destroying an open sink finishes the stream", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("dtor.gz");
  const Bytes data = make_data(50000, 6);
  {
    auto sink = must_open(OutputKind::File, path, true);
    write_chunks(*sink, data, 999);
  }
  CHECK(gunzip(read_all(path)) == data);
}

TEST_CASE("gzip over a memory sink: round trip, flushes reach the inner sink", "[sink]") {
  auto memory = std::make_unique<MemorySink>();
  MemorySink* inner = memory.get();
  std::string error;
  auto sink = make_gzip_sink(std::move(memory), 9, error);
  REQUIRE(sink);
  const Bytes data = make_data(200000, 7);
  write_chunks(*sink, data, 333);
  CHECK(sink->flush());
  CHECK(inner->flush_count() == 1);
  CHECK(sink->close());
  CHECK(inner->closed());
  CHECK(gunzip(inner->data()) == data);

  CHECK_FALSE(make_gzip_sink(std::make_unique<MemorySink>(), 42, error));
  CHECK(error.find("bad compression level") != std::string::npos);
}

TEST_CASE("gzip sink: members made elsewhere follow the staged bytes, held until the flush", "[sink]") {
  auto memory = std::make_unique<MemorySink>();
  MemorySink* inner = memory.get();
  std::string error;
  auto sink = make_gzip_sink(std::move(memory), -1, error);
  REQUIRE(sink);
  const Bytes a = make_data(5000, 1), b = make_data(70000, 2), c = make_data(3000, 3);
  // b as a thread would make it (zip's producers' help): a complete member, handed over in two parts.
  libdeflate_compressor* comp = libdeflate_alloc_compressor(1);
  REQUIRE(comp);
  Bytes member(libdeflate_gzip_compress_bound(comp, b.size()));
  member.resize(libdeflate_gzip_compress(comp, b.data(), b.size(), member.data(), member.size()));
  libdeflate_free_compressor(comp);
  REQUIRE(!member.empty());
  CHECK(sink->write(a.data(), a.size()));
  CHECK(sink->write_member(member.data(), 100));
  CHECK(sink->write_member(member.data() + 100, member.size() - 100));
  CHECK(sink->write(c.data(), c.size()));
  CHECK(inner->data().empty());  // the round's members wait for its flush
  CHECK(sink->flush());
  bool ended = false;
  size_t members = 0;
  Bytes all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  CHECK(gunzip(inner->data(), ended, &members) == all);
  CHECK(ended);
  CHECK(members == 3);  // a's, the member, c's
  CHECK(sink->close());
  // Other sinks take no members.
  MemorySink plain;
  CHECK_FALSE(plain.write_member(member.data(), member.size()));
}

TEST_CASE("memory sink: can fail like a full disk", "[sink]") {
  MemorySink sink("mem");
  const Bytes data = make_data(100, 8);
  REQUIRE(sink.write(data.data(), 60));
  sink.fail_after(50, ENOSPC);
  CHECK(sink.write(data.data(), 40));
  CHECK_FALSE(sink.write(data.data(), 40));
  CHECK(sink.data().size() == 110);
  CHECK(sink.error() == "mlpd: cannot write to 'mem': No space left on device; profiling stopped");
  CHECK_FALSE(sink.flush());
  CHECK_FALSE(sink.close());

  auto inner = std::make_unique<MemorySink>();
  inner->fail_after(10, EIO);
  std::string error;
  auto gz = make_gzip_sink(std::move(inner), -1, error);
  REQUIRE(gz);
  CHECK(gz->write(data.data(), data.size()));
  CHECK_FALSE(gz->flush());
  CHECK(gz->error() == "mlpd: cannot write to 'memory': Input/output error; profiling stopped");
  CHECK_FALSE(gz->close());
}

TEST_CASE("pipe sink: `cat > FILE` receives the bytes", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("cat.out");
  const std::string command = "cat > '" + path + "'";
  const Bytes data = make_data(1024 * 1024 + 3, 10);
  auto sink = must_open(OutputKind::Pipe, command, false);
  CHECK(sink->describe() == "|" + command);
  write_chunks(*sink, data, 50000);
  CHECK(sink->flush());
  CHECK(sink->close());
  CHECK(sink->error().empty());
  CHECK(read_all(path) == data);
}

TEST_CASE("pipe sink with zip: `gzip -dc > FILE` gets a valid gzip stream", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("gunzipped.out");
  const Bytes data = make_data(700000, 11);
  auto sink = must_open(OutputKind::Pipe, "gzip -dc > '" + path + "'", true);
  write_chunks(*sink, data, 8192);
  CHECK(sink->flush());
  write_chunks(*sink, data, 65536);
  CHECK(sink->close());
  INFO(sink->error());
  Bytes twice = data;
  twice.insert(twice.end(), data.begin(), data.end());
  CHECK(read_all(path) == twice);
}

TEST_CASE("pipe sink: a command that exits at once gives EPIPE, and no SIGPIPE reaches the process", "[sink]") {
  DefaultSigpipe default_sigpipe;  // a delivered SIGPIPE would kill this test binary
  for (bool zip : {false, true}) {
    auto sink = must_open(OutputKind::Pipe, "true", zip);
    CHECK(write_until_failure(*sink, 256u * 1024 * 1024));
    if (zip) {
      sink->flush();  // the gzip buffer may still hold the last bytes
    }
    CHECK(sink->error() == "mlpd: cannot write to '|true': Broken pipe; profiling stopped");
    CHECK_FALSE(sink->write("x", 1));
    CHECK_FALSE(sink->flush());
    CHECK_FALSE(sink->close());
    CHECK_FALSE(sigpipe_pending());
    CHECK_FALSE(sigpipe_blocked());  // the thread's signal mask is restored
  }
}

TEST_CASE("pipe sink: a SIGPIPE that was already pending is left alone", "[sink]") {
  DefaultSigpipe default_sigpipe;
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  pthread_kill(pthread_self(), SIGPIPE);  // someone else's signal, pending on this thread
  REQUIRE(sigpipe_pending());

  auto sink = must_open(OutputKind::Pipe, "true", false);
  CHECK(write_until_failure(*sink, 256u * 1024 * 1024));
  CHECK(sink->error().find("Broken pipe") != std::string::npos);
  sink->close();
  CHECK(sigpipe_pending());  // still there: not ours to consume
  CHECK(sigpipe_blocked());  // the mask the caller had is the mask it gets back

  const timespec zero{0, 0};
  CHECK(sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE);
  CHECK_FALSE(sigpipe_pending());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_CASE("pipe sink: close() of a command that never exits returns within the time bound", "[sink]") {
  TempDir dir;
  const std::string pid_file = dir.file("pid");
  SinkOptions options;
  options.child_exit_timeout = std::chrono::milliseconds(300);
  // `exec` so that the pid we read is the process that keeps running (and that we clean up afterwards).
  auto sink = must_open(OutputKind::Pipe, "echo $$ > '" + pid_file + "'; exec sleep 100", false, options);
  CHECK(sink->write("abc", 3));
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(sink->close());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= std::chrono::milliseconds(290));
  CHECK(elapsed < std::chrono::seconds(3));
  const std::string error = sink->error();
  INFO(error);
  CHECK(error.rfind("mlpd: output command 'echo $$ > ", 0) == 0);
  CHECK(error.find("did not exit within 300 ms after the end of output; no longer waiting for it") !=
        std::string::npos);

  std::ifstream in(pid_file);
  pid_t pid = 0;
  in >> pid;
  REQUIRE(pid > 0);
  CHECK(error.find("(pid " + std::to_string(pid) + ")") != std::string::npos);
  kill(pid, SIGKILL);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
}

TEST_CASE("pipe sink: the default close timeout is 5 s", "[sink]") {
  CHECK(SinkOptions{}.child_exit_timeout == std::chrono::seconds(5));
}

TEST_CASE("pipe sink: a failing command is reported by close()", "[sink]") {
  auto sink = must_open(OutputKind::Pipe, "cat > /dev/null; exit 3", false);
  CHECK(sink->write("abc", 3));
  CHECK(sink->flush());
  CHECK_FALSE(sink->close());
  CHECK(sink->error() == "mlpd: output command 'cat > /dev/null; exit 3' exited with status 3");
}

TEST_CASE("pipe sink: our end is close-on-exec, so a later command cannot keep the first one alive", "[sink]") {
  TempDir dir;
  SinkOptions options;
  options.child_exit_timeout = std::chrono::milliseconds(2000);
  auto first = must_open(OutputKind::Pipe, "cat > '" + dir.file("a") + "'", false, options);
  auto second = must_open(OutputKind::Pipe, "cat > '" + dir.file("b") + "'", false, options);
  CHECK(first->write("first", 5));
  CHECK(second->write("second", 6));
  const auto start = std::chrono::steady_clock::now();
  CHECK(first->close());  // had `second`'s cat inherited our write end, this cat would never see EOF
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1500));
  CHECK(second->close());
  const Bytes a = read_all(dir.file("a"));
  const Bytes b = read_all(dir.file("b"));
  CHECK(std::string(a.begin(), a.end()) == "first");
  CHECK(std::string(b.begin(), b.end()) == "second");
}

TEST_CASE("pipe sink: abandon() in a fork child lets the command see end of input when the parent closes", "[sink]") {
  TempDir dir;
  for (bool zip : {false, true}) {
    const std::string path = dir.file(zip ? "abandon.gz" : "abandon");
    SinkOptions options;
    options.child_exit_timeout = std::chrono::milliseconds(4000);
    auto sink = must_open(OutputKind::Pipe, "cat > '" + path + "'", zip, options);
    CHECK(sink->write("parent", 6));
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // What the agent's fork handler does; then the child lives on (no exec) well past the parent's close.
      sink->abandon();
      const bool closed = !sink->write("child", 5) && !sink->close();
      (void)!::write(ready[1], closed ? "y" : "n", 1);
      sleep(6);
      _exit(0);
    }
    ::close(ready[1]);
    char answer = 0;
    CHECK(::read(ready[0], &answer, 1) == 1);
    ::close(ready[0]);
    CHECK(answer == 'y');
    const auto start = std::chrono::steady_clock::now();
    CHECK(sink->close());  // without abandon() in the child, cat would wait for the child's copy: 4 s, then fail
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
    INFO(sink->error());
    const Bytes got = read_all(path);
    if (zip) {
      bool ended = false;
      const Bytes plain = gunzip(got, ended);
      CHECK(ended);
      CHECK(std::string(plain.begin(), plain.end()) == "parent");
    } else {
      CHECK(std::string(got.begin(), got.end()) == "parent");
    }
    kill(child, SIGKILL);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
  }
}

TEST_CASE("memory sink: abandon() closes without finishing", "[sink]") {
  MemorySink sink;
  CHECK(sink.write("a", 1));
  sink.abandon();
  CHECK(sink.abandoned());
  CHECK_FALSE(sink.write("b", 1));
  CHECK_FALSE(sink.close());
  CHECK(sink.data().size() == 1);
}

TEST_CASE("pipe sink: a host that ignores SIGCHLD (auto-reaping) does not make close() fail", "[sink]") {
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGCHLD, &ignore, &old);
  auto sink = must_open(OutputKind::Pipe, "cat > /dev/null", false);
  CHECK(sink->write("abc", 3));
  CHECK(sink->close());
  CHECK(sink->error().empty());
  sigaction(SIGCHLD, &old, nullptr);
}

TEST_CASE("pipe sink: messages stay on one line", "[sink]") {
  DefaultSigpipe default_sigpipe;
  auto sink = must_open(OutputKind::Pipe, "true\n", false);
  CHECK(write_until_failure(*sink, 256u * 1024 * 1024));
  CHECK(sink->error() == "mlpd: cannot write to '|true?': Broken pipe; profiling stopped");
}

TEST_CASE("fd sink: writes to the descriptor and never closes it", "[sink]") {
  TempDir dir;
  const std::string path = dir.file("fd.out");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  const Bytes data = make_data(100000, 12);
  {
    auto sink = must_open(OutputKind::Fd, std::to_string(fd), false);
    CHECK(sink->describe() == "#" + std::to_string(fd));
    write_chunks(*sink, data, 3000);
    CHECK(sink->close());
  }
  CHECK(fcntl(fd, F_GETFD) >= 0);  // still open after close() and destruction
  REQUIRE(::write(fd, "tail", 4) == 4);
  Bytes expected = data;
  expected.insert(expected.end(), {'t', 'a', 'i', 'l'});
  CHECK(read_all(path) == expected);
  ::close(fd);
}

TEST_CASE("fd sink with zip: a gzip stream on the embedder's descriptor", "[sink]") {
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  const Bytes data = make_data(20000, 13);  // small enough to fit in the pipe's buffer once compressed
  auto sink = must_open(OutputKind::Fd, std::to_string(fds[1]), true);
  write_chunks(*sink, data, 1000);
  CHECK(sink->close());
  CHECK(fcntl(fds[1], F_GETFD) >= 0);
  ::close(fds[1]);
  Bytes compressed;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) compressed.insert(compressed.end(), buf, buf + n);
  ::close(fds[0]);
  CHECK(gunzip(compressed) == data);
}

TEST_CASE("fd sink: bad descriptors are refused with a clear message", "[sink]") {
  std::string error;
  CHECK_FALSE(open_sink(OutputKind::Fd, "abc", false, error));
  CHECK(error == "mlpd: invalid output descriptor '#abc': expected a descriptor number");
  CHECK_FALSE(open_sink(OutputKind::Fd, "", false, error));
  CHECK(error == "mlpd: invalid output descriptor '#': expected a descriptor number");
  CHECK_FALSE(open_sink(OutputKind::Fd, "99999999999", false, error));

  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK_FALSE(open_sink(OutputKind::Fd, std::to_string(fd), false, error));
  CHECK(error == "mlpd: cannot use output descriptor '#" + std::to_string(fd) + "': it is not open for writing");
  ::close(fd);
  CHECK_FALSE(open_sink(OutputKind::Fd, std::to_string(fd), false, error));
  CHECK(error == "mlpd: cannot use output descriptor '#" + std::to_string(fd) + "': Bad file descriptor");
}

TEST_CASE("fd sink: a closed pipe reader gives EPIPE, not SIGPIPE", "[sink]") {
  DefaultSigpipe default_sigpipe;
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  ::close(fds[0]);
  auto sink = must_open(OutputKind::Fd, std::to_string(fds[1]), false);
  CHECK_FALSE(sink->write("x", 1));
  CHECK(sink->error() ==
        "mlpd: cannot write to '#" + std::to_string(fds[1]) + "': Broken pipe; profiling stopped");
  CHECK_FALSE(sigpipe_pending());
  CHECK_FALSE(sink->close());
  CHECK(fcntl(fds[1], F_GETFD) >= 0);
  ::close(fds[1]);
}
