// The CPU time counters (agent/src/cpu_counters.h): /proc's stat lines taken apart (a command name
// with spaces and parentheses, negative priority and nice, cut or garbled lines refused), and the
// counters on this very process: the process's pair from the construction's baseline, a thread started
// later described at its second sighting under its OS name and TID, its CPU time counted from zero and
// growing while it spins, and no longer sampled once it ended.
#include "mlpd_catch.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../../agent/src/cpu_counters.h"
#include "event_gen.h"
#include "mlpd/agent/counter_sampler.h"
#include "mlpd/conventions.h"
#include "mlpd/encoder.h"
#include "mlpd/format.h"
#include "mlpd/rt/buffer_pool.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"

using namespace mlpd;

namespace {

// A stat line as the kernel writes it: pid (comm) state ppid ... with utime (14), stime (15),
// priority (18), nice (19) and starttime (22) given.
std::string stat_line(const std::string& comm, uint64_t utime, uint64_t stime, const std::string& prio,
                      const std::string& nice, uint64_t start) {
  std::string s = "4242 (" + comm + ") S 1 4242 4242 0 -1 4194560 100 0 0 0 ";
  s += std::to_string(utime) + " " + std::to_string(stime) + " 0 0 " + prio + " " + nice + " 3 0 " +
       std::to_string(start) + " 123456 789 18446744073709551615 1 1 0 0 0 0 0 0 0\n";
  return s;
}

// Every counter the sampler wrote into the MetaLog so far: name -> last value (descriptors and samples
// decoded from the MetaLog's buffers).
struct Counters {
  std::map<uint64_t, std::string> names;  // index -> name
  std::map<std::string, uint64_t> value;  // name -> last value sampled
  std::vector<std::string> described;     // in order
};

void read_back(rt::MetaLog& meta, Counters& c) {
  std::vector<uint8_t> file;
  encode_file_header(test::default_header(), file);
  meta.take(file, rt::now_ns());
  const test::DecodedFile d = test::decode_bytes(file);
  REQUIRE(d.problems.empty());
  for (const Event& e : d.event_list()) {
    for (const CounterDesc& desc : e.counter_descs) {
      CHECK(desc.section == format::COUNTER_SECTION_PROFILER);
      CHECK(desc.type == format::COUNTER_LONG);
      CHECK(desc.unit == format::COUNTER_UNIT_TIME);
      CHECK(desc.variance == format::COUNTER_VARIANCE_MONOTONIC);
      c.names[desc.index] = desc.name;
      c.described.push_back(desc.name);
    }
    for (const CounterValue& v : e.counter_values) c.value[c.names.at(v.index)] = v.bits;
  }
}

struct Setup {
  rt::BufferPool pool{4096, 64};
  rt::FlushQueue queue;
  rt::WriterShared shared;
  rt::ThreadRegistry registry{shared};
  rt::MetaLog meta{1, rt::now_ns()};
  agent::CounterSampler sampler{registry, meta};
  Setup() {
    shared.pool = &pool;
    shared.queue = &queue;
  }
};

// Spins for `ms` milliseconds of CPU time of the calling thread, nearly all of it in user mode (the
// thread's CPU clock is a system call: read it only every few million steps).
uint64_t spin_cpu(int ms) {
  uint64_t x = 1;
  timespec start{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  for (;;) {
    for (int i = 0; i < 4000000; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    const int64_t spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (spent >= ms) return x;
  }
}

}  // namespace

TEST_CASE("cpu counters: /proc stat lines taken apart", "[agent][counters]") {
  agent::CpuTimes t;
  SECTION("a command name with spaces and parentheses, negative priority and nice") {
    const std::string s = stat_line("we) (ird na)me", 1234, 56, "-21", "-5", 987654);
    REQUIRE(agent::parse_proc_stat(s.data(), s.size(), t));
    CHECK(t.user == 1234);
    CHECK(t.system == 56);
    CHECK(t.start == 987654);
  }
  SECTION("the plain case, without the newline") {
    std::string s = stat_line("mono", 7, 8, "20", "0", 9);
    s.pop_back();
    REQUIRE(agent::parse_proc_stat(s.data(), s.size(), t));
    CHECK(t.user == 7);
    CHECK(t.system == 8);
    CHECK(t.start == 9);
  }
  SECTION("refused: no command name, cut before starttime, a letter in utime") {
    const std::string no_paren = "4242 mono S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22";
    CHECK_FALSE(agent::parse_proc_stat(no_paren.data(), no_paren.size(), t));
    const std::string full = stat_line("mono", 12, 2, "20", "0", 3);
    const std::string cut = full.substr(0, full.find(" 3 0 3 "));  // ends with nice (field 19)
    CHECK_FALSE(agent::parse_proc_stat(cut.data(), cut.size(), t));
    std::string letter = full;
    letter.replace(letter.find(" 12 "), 4, " 1x ");  // utime (field 14)
    CHECK_FALSE(agent::parse_proc_stat(letter.data(), letter.size(), t));
    REQUIRE(agent::parse_proc_stat(full.data(), full.size(), t));  // the same line whole is read
    CHECK(t.user == 12);
  }
  SECTION("fields before 14 are not asked for") {
    uint64_t fields[23] = {};
    const std::string s = stat_line("mono", 1, 2, "20", "0", 3);
    CHECK_FALSE(agent::proc_stat_fields(s, 13, fields));
    REQUIRE(agent::proc_stat_fields(s, 22, fields));
    CHECK(fields[14] == 1);
    CHECK(fields[15] == 2);
    CHECK(fields[18] == 20);
    CHECK(fields[22] == 3);
  }
  SECTION("this process's own line") {
    char buf[1024];
    FILE* f = std::fopen("/proc/self/stat", "r");
    REQUIRE(f != nullptr);
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    REQUIRE(agent::parse_proc_stat(buf, n, t));
    CHECK(t.start > 0);
  }
}

TEST_CASE("cpu counters: the process's pair and a later thread's, described at its second sighting", "[agent][counters]") {
  Setup s;
  agent::CpuCounters cpu;  // the baseline: this process and its threads now
  cpu.add_process(s.sampler);

  // A thread started after the construction: its CPU time counts from zero.
  std::atomic<int> stage{0};
  std::atomic<long> tid{0};
  std::atomic<uint64_t> sink{0};  // the spin's result, kept
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "cpu-burner");
    tid = static_cast<long>(::syscall(SYS_gettid));
    stage = 1;
    while (stage.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sink = spin_cpu(60);  // between the second and the third sample
    stage = 3;
    while (stage.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (stage.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  const std::string user = std::string(conventions::kThreadCpuUserPrefix) + "cpu-burner [" + std::to_string(tid.load()) + "]";
  const std::string system = std::string(conventions::kThreadCpuSystemPrefix) + "cpu-burner [" + std::to_string(tid.load()) + "]";
  Counters c;

  cpu.discover(s.sampler);  // first sighting: not described yet
  s.sampler.sample();
  read_back(s.meta, c);
  CHECK(c.names.size() == 2);
  CHECK(c.value.count(std::string(conventions::kProcessCpuUser)) == 1);
  CHECK(c.value.count(std::string(conventions::kProcessCpuSystem)) == 1);
  CHECK(c.value.count(user) == 0);
  CHECK(cpu.threads() == 0);

  cpu.discover(s.sampler);  // second sighting: every thread seen twice gets its pair
  s.sampler.sample();
  read_back(s.meta, c);
  REQUIRE(c.value.count(user) == 1);
  REQUIRE(c.value.count(system) == 1);
  CHECK(cpu.threads() >= 1);
  const uint64_t user_before = c.value[user];

  stage = 2;
  while (stage.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cpu.discover(s.sampler);
  s.sampler.sample();
  read_back(s.meta, c);
  // 60 ms of CPU, user and system together, in units of 100 ns, at the clock tick's granularity.
  const uint64_t spent = c.value[user] + c.value[system];
  CHECK(c.value[user] > user_before);
  CHECK(spent >= 300000);   // 30 ms: ticks round down
  CHECK(spent <= 2000000);  // well under 200 ms: counted from the thread's start, not the process's
  // Every counter described once.
  std::map<std::string, int> times;
  for (const std::string& n : c.described) ++times[n];
  for (const auto& [n, k] : times) {
    INFO(n);
    CHECK(k == 1);
  }

  stage = 4;
  worker.join();
  // Ended: no longer readable, so no new value for it (a sample leaves out what did not change or
  // cannot be read), and it is not described again.
  const size_t described = c.described.size();
  cpu.discover(s.sampler);
  cpu.discover(s.sampler);
  s.sampler.sample();
  const uint64_t last_user = c.value[user];
  read_back(s.meta, c);
  CHECK(c.value[user] == last_user);
  for (size_t i = described; i < c.described.size(); ++i) CHECK(c.described[i].find("cpu-burner") == std::string::npos);
}
