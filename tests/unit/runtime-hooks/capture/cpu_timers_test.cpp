// Per-thread CPU timers (runtime-hooks/src/capture/cpu_timers.h): one POSIX timer per live thread, deleted
// when its thread ends and at stop (none leaked), the signal's action put back.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "capture/cpu_timers.h"
#include "mlpd_catch.h"

namespace {

// The threads /proc/self/timers says our timers notify ("notify: signal/tid.N").
std::vector<int> timer_tids() {
  std::vector<int> out;
  std::ifstream f("/proc/self/timers");
  std::string line;
  while (std::getline(f, line)) {
    const auto at = line.find("signal/tid.");
    if (at != std::string::npos) out.push_back(std::stoi(line.substr(at + 11)));
  }
  return out;
}

bool has(const std::vector<int>& v, int x) {
  for (int y : v) {
    if (y == x) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("cpu timers: one per live thread, deleted when it ends and at stop", "[hooks][sampling]") {
  namespace ct = mlpd::hooks::cpu_timers;
  const size_t before = timer_tids().size();
  if (!ct::start(10'000'000)) {
    WARN("no per-thread CPU timers here: " << ct::why_not());
    return;
  }
  CHECK(ct::running());
  std::atomic<bool> done{false};
  std::atomic<int> ready{0};
  std::vector<int> tids(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = static_cast<int>(syscall(SYS_gettid));
      ready.fetch_add(1);
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
  }
  while (ready.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<int> now;
  for (int i = 0; i < 200; ++i) {  // the scanner looks every 10 ms
    now = timer_tids();
    if (has(now, tids[0]) && has(now, tids[1]) && has(now, tids[2])) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int tid : tids) CHECK(has(now, tid));
  done.store(true);
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 200; ++i) {
    now = timer_tids();
    if (!has(now, tids[0]) && !has(now, tids[1]) && !has(now, tids[2])) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int tid : tids) CHECK_FALSE(has(now, tid));
  ct::set_period(0);  // sampling off: every timer deleted
  for (int i = 0; i < 200 && timer_tids().size() != before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(timer_tids().size() == before);
  ct::set_period(10'000'000);  // on again: this thread gets one back
  const int self = static_cast<int>(syscall(SYS_gettid));
  for (int i = 0; i < 200 && !has(timer_tids(), self); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(has(timer_tids(), self));
  ct::stop();
  CHECK_FALSE(ct::running());
  CHECK(timer_tids().size() == before);
}
