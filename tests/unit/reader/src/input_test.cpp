// Input: files and stdin, plain and gzip (one or several members), truncated and corrupt gzip.
#include "mlpd_catch.h"

#include "temp_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/decoder.h"
#include "mlpd/input.h"

using namespace mlpd;
using namespace mlpd::test;
using Bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;

namespace {

using mlpd::test::TempDir;

struct Sample {
  std::vector<ThreadBuffer> buffers;
  std::vector<Event> events;
  Bytes plain;
};

Sample make_sample(uint64_t seed, int buffers, size_t events_per_buffer) {
  Sample s;
  EventGen gen(seed);
  for (int i = 0; i < buffers; ++i) {
    s.buffers.push_back({gen.below(5), gen.u64(), gen.events(events_per_buffer)});
    s.events.insert(s.events.end(), s.buffers.back().events.begin(), s.buffers.back().events.end());
  }
  s.plain = build_file(s.buffers);
  return s;
}

DecodedFile decode_path(const std::string& path) {
  std::string error;
  std::unique_ptr<Input> in = Input::open(path, error);
  INFO(error);
  REQUIRE(in);
  CHECK(error.empty());
  return decode_input(*in);
}

Bytes read_all(Input& in, size_t chunk) {
  Bytes out;
  Bytes buf(chunk);
  for (;;) {
    const size_t got = in.read(buf.data(), chunk);
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(got));
    if (got < chunk) break;
  }
  return out;
}

}  // namespace

TEST_CASE("Input::open of a missing file gives an error", "[input]") {
  TempDir dir;
  std::string error;
  std::unique_ptr<Input> in = Input::open((dir.path / "does-not-exist.mlpd").string(), error);
  CHECK(!in);
  CHECK_THAT(error, mlpd_test::contains("No such file or directory"));
}

TEST_CASE("plain and gzip files give identical events", "[input]") {
  const Sample s = make_sample(1, 30, 100);
  TempDir dir;
  const std::string plain = dir.write("plain.mlpd", s.plain);
  const std::string gz = dir.write("gz.mlpd.gz", gzip(s.plain));
  Bytes two = gzip(Bytes(s.plain.begin(), s.plain.begin() + static_cast<ptrdiff_t>(s.plain.size() / 3)));
  const Bytes rest = gzip(Bytes(s.plain.begin() + static_cast<ptrdiff_t>(s.plain.size() / 3), s.plain.end()), 1);
  two.insert(two.end(), rest.begin(), rest.end());
  const std::string gz2 = dir.write("two-members.mlpd.gz", two);

  const DecodedFile mem = decode_bytes(s.plain);
  REQUIRE(mem.problems.empty());
  REQUIRE(mem.event_list() == s.events);

  for (const std::string& path : {plain, gz, gz2}) {
    INFO(path);
    std::string error;
    std::unique_ptr<Input> in = Input::open(path, error);
    REQUIRE(in);
    const DecodedFile d = decode_input(*in);
    INFO(d.problems_text());
    CHECK(d.problems.empty());
    CHECK(d.header == mem.header);
    CHECK(d.event_list() == s.events);
    REQUIRE(d.events.size() == mem.events.size());
    for (size_t i = 0; i < d.events.size(); ++i) REQUIRE(d.events[i].offset == mem.events[i].offset);
    CHECK(in->compressed() == (path != plain));
    CHECK(in->offset() == s.plain.size());
    CHECK(in->error().empty());
  }
  // Gzip from memory, one and two members.
  for (const Bytes& bytes : {gzip(s.plain), two}) {
    std::unique_ptr<Input> in = Input::from_memory(bytes.data(), bytes.size());
    CHECK(in->compressed());
    const DecodedFile d = decode_input(*in);
    CHECK(d.problems.empty());
    CHECK(d.event_list() == s.events);
  }
}

TEST_CASE("Input reads the same bytes in any chunk size and counts uncompressed offsets", "[input]") {
  const Sample s = make_sample(2, 5, 50);
  TempDir dir;
  const std::string gz_path = dir.write("x.gz", gzip(s.plain));
  const std::string plain_path = dir.write("x", s.plain);
  const Bytes gz = gzip(s.plain);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, s.plain.size() + 10}) {
    INFO("chunk " << chunk);
    std::unique_ptr<Input> a = Input::from_memory(s.plain.data(), s.plain.size());
    std::unique_ptr<Input> b = Input::from_memory(gz.data(), gz.size());
    std::string error;
    std::unique_ptr<Input> c = Input::open(gz_path, error);
    std::unique_ptr<Input> d = Input::open(plain_path, error);
    REQUIRE(c);
    REQUIRE(d);
    for (Input* in : {a.get(), b.get(), c.get(), d.get()}) {
      CHECK(read_all(*in, chunk) == s.plain);
      CHECK(in->offset() == s.plain.size());
      uint8_t byte;
      CHECK(in->read(&byte, 1) == 0);  // stays at the end
      CHECK(in->error().empty());
    }
  }
  // An empty input is an empty, uncompressed stream.
  std::unique_ptr<Input> empty = Input::from_memory(nullptr, 0);
  uint8_t byte;
  CHECK(empty->read(&byte, 1) == 0);
  CHECK(!empty->compressed());
  CHECK(empty->error().empty());
}

// What a `zip` writer killed mid-write leaves (the agent ends a gzip member every flush round): not an
// error but one warning naming the offsets, after everything before the cut was decoded.
TEST_CASE("gzip truncated in the middle gives a truncation warning", "[input][gzip]") {
  // Large buffers, so that a cut in the middle lands inside a buffer's data.
  const Sample s = make_sample(3, 4, 2000);
  const Bytes gz = gzip(s.plain);
  TempDir dir;
  for (size_t cut : {gz.size() / 2, gz.size() / 3, gz.size() * 9 / 10}) {
    INFO("cut at " << cut << " of " << gz.size());
    const Bytes part(gz.begin(), gz.begin() + static_cast<ptrdiff_t>(cut));
    const std::string path = dir.write("cut" + std::to_string(cut) + ".gz", part);
    const DecodedFile from_file = decode_path(path);
    const DecodedFile from_memory = decode_bytes(part);
    for (const DecodedFile* d : {&from_file, &from_memory}) {
      INFO(d->problems_text());
      CHECK(d->problems.empty());
      REQUIRE(d->warnings.size() == 1);
      CHECK_THAT(d->warnings[0].message, mlpd_test::contains("truncated"));
      CHECK_THAT(d->warnings[0].message, mlpd_test::contains("inside a gzip member that starts at compressed byte 0"));
      CHECK(d->warnings[0].offset < s.plain.size());
      CHECK(d->warnings[0].offset > 0);
      // What was delivered is a prefix of what was written.
      const std::vector<Event> got = d->event_list();
      REQUIRE(got.size() < s.events.size());
      CHECK(got == std::vector<Event>(s.events.begin(), s.events.begin() + static_cast<ptrdiff_t>(got.size())));
    }
    CHECK(from_file.warnings[0].offset == from_memory.warnings[0].offset);
    CHECK(from_file.events.size() == from_memory.events.size());
  }
  SECTION("several members, the last cut: every complete member is read, the warning names where it ends") {
    const size_t half = s.plain.size() / 2;
    Bytes two = gzip(Bytes(s.plain.begin(), s.plain.begin() + static_cast<ptrdiff_t>(half)));
    const size_t first_member = two.size();
    const Bytes second = gzip(Bytes(s.plain.begin() + static_cast<ptrdiff_t>(half), s.plain.end()));
    two.insert(two.end(), second.begin(), second.begin() + static_cast<ptrdiff_t>(second.size() / 2));
    const DecodedFile d = decode_bytes(two);
    INFO(d.problems_text());
    CHECK(d.problems.empty());
    REQUIRE(d.warnings.size() == 1);
    CHECK_THAT(d.warnings[0].message, mlpd_test::contains("starts at compressed byte " + std::to_string(first_member)));
    CHECK_THAT(d.warnings[0].message, mlpd_test::contains("last complete member ends at offset " + std::to_string(half)));
  }
  SECTION("a complete gzip stream whose last buffer is cut (a kill inside a round of more than 32 MiB)") {
    // The agent writes such a round through member by member, each member ending wherever its stage
    // filled: the file is complete gzip, but its last mlpd buffer is cut. One member, and two members
    // the first of which ends mid-buffer.
    for (size_t cut : {s.plain.size() / 2, s.plain.size() / 3, s.plain.size() - 1}) {
      INFO("cut at " << cut << " of " << s.plain.size());
      const Bytes data(s.plain.begin(), s.plain.begin() + static_cast<ptrdiff_t>(cut));
      Bytes two = gzip(Bytes(data.begin(), data.begin() + static_cast<ptrdiff_t>(cut / 2)));
      const Bytes rest = gzip(Bytes(data.begin() + static_cast<ptrdiff_t>(cut / 2), data.end()));
      two.insert(two.end(), rest.begin(), rest.end());
      for (const Bytes& bytes : {gzip(data), two}) {
        for (const DecodedFile& d : {decode_bytes(bytes), decode_path(dir.write("whole.gz", bytes))}) {
          INFO(d.problems_text());
          CHECK(d.problems.empty());
          REQUIRE(d.warnings.size() == 1);
          CHECK_THAT(d.warnings[0].message, mlpd_test::contains("truncated: the compressed data ends after a complete "
                                                            "gzip member (compressed byte " +
                                                            std::to_string(bytes.size()) + ") inside an mlpd buffer"));
          CHECK_THAT(d.warnings[0].message, mlpd_test::contains("read up to offset " + std::to_string(cut)));
          CHECK(d.warnings[0].offset == cut);
          const std::vector<Event> got = d.event_list();
          REQUIRE(got.size() < s.events.size());
          CHECK(got == std::vector<Event>(s.events.begin(), s.events.begin() + static_cast<ptrdiff_t>(got.size())));
        }
      }
    }
  }
  SECTION("a plain file truncated in the middle too") {
    const Bytes part(s.plain.begin(), s.plain.begin() + static_cast<ptrdiff_t>(s.plain.size() / 2));
    const DecodedFile d = decode_path(dir.write("cut.mlpd", part));
    REQUIRE(d.problems.size() == 1);
    CHECK_THAT(d.problems[0].message, mlpd_test::contains("truncated"));
    CHECK(d.problems[0].offset == part.size());
  }
  SECTION("gzip cut inside its trailer is still reported (files and memory)") {
    // The deflate data is complete and only the CRC/size trailer is cut: zlib's gzread would call
    // this a clean end of file; our own inflate loop warns.
    const Bytes part(gz.begin(), gz.end() - 4);
    for (const DecodedFile& d : {decode_bytes(part), decode_path(dir.write("trailer.gz", part))}) {
      INFO(d.problems_text());
      CHECK(d.problems.empty());
      REQUIRE(d.warnings.size() == 1);
      CHECK_THAT(d.warnings[0].message, mlpd_test::contains("ends inside a gzip member"));
      CHECK(d.warnings[0].offset == s.plain.size());
      CHECK(d.event_list() == s.events);
    }
  }
}

TEST_CASE("corrupt gzip data is reported, not decoded as garbage", "[input][gzip]") {
  const Sample s = make_sample(4, 4, 500);
  Bytes gz = gzip(s.plain);
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i) gz[i] ^= 0x5A;
  TempDir dir;
  for (const DecodedFile& d : {decode_path(dir.write("bad.gz", gz)), decode_bytes(gz)}) {
    INFO(d.problems_text());
    REQUIRE(!d.problems.empty());
    const std::vector<Event> got = d.event_list();
    REQUIRE(got.size() < s.events.size());
  }
}

TEST_CASE("the path - reads standard input", "[input]") {
  const Sample s = make_sample(5, 3, 20);
  TempDir dir;
  for (const Bytes& bytes : {s.plain, gzip(s.plain)}) {
    const std::string path = dir.write("stdin.mlpd", bytes);
    const int saved = dup(STDIN_FILENO);
    REQUIRE(saved >= 0);
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(dup2(fd, STDIN_FILENO) == STDIN_FILENO);
    close(fd);
    std::string error;
    std::unique_ptr<Input> in = Input::open("-", error);
    dup2(saved, STDIN_FILENO);  // Input::open dups stdin, so it can be restored right away
    close(saved);
    REQUIRE(in);
    const DecodedFile d = decode_input(*in);
    CHECK(d.problems.empty());
    CHECK(d.event_list() == s.events);
  }
}

TEST_CASE("a mapped plain file lends its bytes and reads on past the mapping when it grew", "[input][map]") {
  Bytes data(3u << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + (i >> 12));
  TempDir dir;
  const std::string path = dir.write("mapped.bin", data);
  std::string error;
  std::unique_ptr<Input> in = Input::open(path, error);
  REQUIRE(in);
  uint8_t head[100];
  REQUIRE(in->read(head, sizeof head) == sizeof head);  // bytes read ahead before the mapping
  CHECK(std::equal(head, head + sizeof head, data.begin()));
  CHECK(in->lend(10) == nullptr);  // not mapped yet
  REQUIRE(in->map());
  CHECK(!in->map());  // once
  const uint8_t* p = in->lend(1u << 20);
  REQUIRE(p);
  CHECK(in->offset() == 100 + (1u << 20));
  CHECK(std::equal(p, p + (1u << 20), data.begin() + 100));
  in->release(in->offset());  // pages before it go; bytes after it stay readable
  const uint8_t* q = in->borrow(1000);
  REQUIRE(q);
  CHECK(std::equal(q, q + 1000, data.begin() + 100 + (1u << 20)));
  // The file grows after map(): the mapping ends where the file did, the rest is read as before.
  Bytes more(5000, 0xAB);
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(more.data()), static_cast<std::streamsize>(more.size()));
  }
  const size_t left = data.size() - static_cast<size_t>(in->offset());
  CHECK(in->lend(left + 1) == nullptr);  // not all in the mapping: nothing consumed
  Bytes rest(left + more.size() + 10);
  CHECK(in->read(rest.data(), rest.size()) == left + more.size());
  CHECK(std::equal(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(left), data.end() - static_cast<ptrdiff_t>(left)));
  CHECK(std::equal(more.begin(), more.end(), rest.begin() + static_cast<ptrdiff_t>(left)));
  CHECK(in->error().empty());
  CHECK(p[5] == data[105]);  // lent bytes stay valid while the input lives (released pages read again)
}

TEST_CASE("gzip and memory inputs are not mapped", "[input][map]") {
  const Sample s = make_sample(9, 3, 20);
  TempDir dir;
  std::string error;
  std::unique_ptr<Input> gz = Input::open(dir.write("x.mlpd.gz", gzip(s.plain)), error);
  REQUIRE(gz);
  CHECK(!gz->map());
  CHECK(gz->lend(8) == nullptr);
  std::unique_ptr<Input> mem = Input::from_memory(s.plain.data(), s.plain.size());
  CHECK(!mem->map());
}

TEST_CASE("a mapped file cut shorter while it is read ends the process with a message, not a crash", "[input][map]") {
  // The reader takes SIGBUS only when nobody else handles it; under ASan the sanitizer does (its
  // handle_sigbus), and reports the fault itself.
  struct sigaction now {};
  if (sigaction(SIGBUS, nullptr, &now) != 0 || now.sa_handler != SIG_DFL || (now.sa_flags & SA_SIGINFO)) {
    WARN("SIGBUS is handled in this process already (sanitizer): not tried");
    return;
  }
  Bytes data(1u << 20, 0x5A);
  TempDir dir;
  const std::string path = dir.write("cut.bin", data);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    std::string error;
    std::unique_ptr<Input> in = Input::open(path, error);
    if (!in || !in->map()) _exit(10);
    if (truncate(path.c_str(), 4096) != 0) _exit(11);
    const uint8_t* p = in->lend(data.size() - 1000);
    if (!p) _exit(12);
    volatile uint8_t x = p[data.size() - 2000];  // past the file's new end: SIGBUS
    (void)x;
    _exit(13);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
}
