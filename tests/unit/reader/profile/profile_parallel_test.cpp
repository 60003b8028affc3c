// The parallel build of the profile model (issue 25; reader/profile/parallel.cpp) gives the model of the
// one-thread build bit for bit (every field: tests/support/profile_fingerprint.h), whatever the number
// of workers: on generated files of several threads with calls, allocations with and without
// backtraces, samples, throws and exception leaves, monitors, threads started, named and ended, a
// time window, the depth and node bounds reached, random events of every kind, damaged buffers and a
// thread id started again after its end (read again by one thread). Run under TSan by
// scripts/sanitize.sh.
#include "mlpd_catch.h"

#include <cstdint>
#include <string>
#include <vector>

#include "event_gen.h"
#include "mlpd/input.h"
#include "mlpd/profile.h"
#include "profile_fingerprint.h"

using namespace mlpd;
using namespace mlpd::profile;
using namespace mlpd::test;

namespace {

Event ev(EventKind k, uint64_t t) {
  Event e;
  e.kind = k;
  e.time = t;
  return e;
}

// Buffers of `threads` threads interleaved in file order: nested calls on a few methods (so that
// stacks repeat and differ), with the other events of a profile among them.
std::vector<ThreadBuffer> make_run(uint64_t seed, size_t threads, size_t buffers, bool random_events,
                                   bool allocs_mostly = false) {
  EventGen gen(seed);
  std::vector<ThreadBuffer> out;
  std::vector<uint64_t> clock(threads, 1000);
  std::vector<std::vector<uint64_t>> open(threads);
  const uint64_t methods[] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000};
  for (size_t b = 0; b < buffers; ++b) {
    const size_t t = gen.below(threads);
    ThreadBuffer buf;
    buf.thread_id = 0x7000 + t * 0x100;
    buf.time_base = clock[t];
    auto now = [&] { return clock[t] += 1 + gen.below(50); };
    if (b < threads) {
      Event s = ev(EventKind::thread_start, now());
      s.ptr = buf.thread_id;
      buf.events.push_back(s);
    }
    const size_t n = 20 + gen.below(200);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = allocs_mostly && gen.chance(90) ? 85 + gen.below(5) : gen.below(100);
      auto& stack = open[t];
      if (r < 45 && stack.size() < 40) {
        Event e = ev(EventKind::method_enter, now());
        e.method = methods[gen.below(6)];
        stack.push_back(e.method);
        buf.events.push_back(e);
      } else if (r < 85 && !stack.empty()) {
        Event e = ev(gen.chance(5) ? EventKind::method_exc_leave : EventKind::method_leave, now());
        // Mostly the innermost call; sometimes an outer one (unwinding) or one never entered.
        e.method = gen.chance(90) ? stack.back() : gen.chance(50) ? stack.front() : 0x9999;
        if (e.method == stack.back()) stack.pop_back();
        buf.events.push_back(e);
      } else if (r < 90) {
        Event e = ev(EventKind::alloc, now());
        e.ptr = 0xA000 + 8 * gen.below(4);
        e.obj = 8 * (1 + gen.below(1000));
        e.size = 16 + gen.below(100);
        if (gen.chance(50)) {
          e.has_backtrace = true;
          for (size_t k = 0, d = 1 + gen.below(5); k < d; ++k) e.backtrace.push_back(methods[gen.below(6)]);
        }
        buf.events.push_back(e);
      } else if (r < 93) {
        Event e = ev(EventKind::exception_throw, now());
        e.obj = 8 * (1 + gen.below(1000));
        buf.events.push_back(e);
      } else if (r < 95) {
        Event e = ev(EventKind::monitor, now());
        e.code = static_cast<uint8_t>(1 + gen.below(3));
        e.obj = 0x800;
        buf.events.push_back(e);
      } else if (r < 97) {
        Event e = ev(EventKind::sample_hit, now());
        e.ptr = 0x7000 + gen.below(threads) * 0x100;
        e.ips = {0x400000 + 16 * gen.below(4)};
        e.frames = {methods[gen.below(6)], methods[gen.below(6)]};
        buf.events.push_back(e);
      } else if (r < 98) {
        Event e = ev(EventKind::method_jit, now());
        e.method = methods[gen.below(6)];
        e.ptr = 0x500000 + 0x100 * gen.below(6);
        e.size = 64;
        e.name = "M" + std::to_string(gen.below(6));
        buf.events.push_back(e);
      } else if (random_events) {
        Event e = gen.make_any();
        e.time = now();
        buf.events.push_back(e);
      } else {
        Event e = ev(EventKind::thread_name, now());
        e.ptr = 0x7000 + gen.below(threads) * 0x100;
        e.name = "worker " + std::to_string(gen.below(9));
        buf.events.push_back(e);
      }
    }
    out.push_back(std::move(buf));
  }
  return out;
}

std::string build_print(const std::vector<uint8_t>& file, BuildOptions o, unsigned jobs) {
  o.jobs = jobs;
  o.reopen = [&file](size_t) { return Input::from_memory(file.data(), file.size()); };
  auto input = Input::from_memory(file.data(), file.size());
  Profile p;
  build_profile(*input, p, o);
  return profile_fingerprint(p);
}

void check_same(const std::vector<uint8_t>& file, const BuildOptions& o = {}) {
  const std::string one = build_print(file, o, 1);
  for (unsigned jobs : {2u, 3u, 4u}) {
    INFO("jobs " << jobs);
    const std::string many = build_print(file, o, jobs);
    INFO(fingerprint_difference(one, many));
    CHECK(many == one);
  }
}

}  // namespace

TEST_CASE("parallel profile build equals the one-thread build", "[profile][parallel]") {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    const std::vector<uint8_t> file = build_file(make_run(seed, 1 + seed % 6, 60, false));
    check_same(file);
  }
}

TEST_CASE("parallel profile build: window, depth and node bounds", "[profile][parallel]") {
  const std::vector<uint8_t> file = build_file(make_run(99, 5, 80, false));
  BuildOptions o;
  o.max_depth = 6;
  o.max_nodes = 60;  // reached: new stacks go to each thread's "[too many stacks]"
  check_same(file, o);
  BuildOptions w;
  w.from.kind = WindowBound::Kind::offset;
  w.from.ns = 3000;
  w.to.kind = WindowBound::Kind::offset;
  w.to.ns = 9000;
  check_same(file, w);
}

TEST_CASE("parallel profile build: random events, damaged buffers, gzip", "[profile][parallel]") {
  for (uint64_t seed = 20; seed <= 27; ++seed) {
    INFO("seed " << seed);
    std::vector<uint8_t> file = build_file(make_run(seed, 4, 40, true));
    check_same(file);
    // A damaged byte in the middle of the file: one buffer's events end there (or the rest of the file).
    file[file.size() / 2] ^= 0xFF;
    check_same(file);
    std::vector<uint8_t> gz = build_file(default_header(), make_run(seed, 3, 30, true), Compression::gzip);
    check_same(gz);
    gz.resize(gz.size() * 2 / 3);  // a gzip file cut by a killed writer: a warning, the summary says truncated
    check_same(gz);
  }
}

namespace {

// A thread id started again after its end is a new thread. When the end and the start are in the
// thread's own buffers (end_elsewhere false) the workers see it and begin a new thread there; when the
// end is in another thread's buffer, only the file order tells, and the file is read again by one
// thread. Either way the model is the one-thread model.
void check_restarted_id(bool end_elsewhere) {
  std::vector<ThreadBuffer> run = make_run(7, 3, 30, false);
  const uint64_t id = run[0].thread_id;
  const uint64_t other = id == 0x7000 ? 0x7100 : 0x7000;
  ThreadBuffer end{end_elsewhere ? other : id, 200000, {ev(EventKind::thread_end, 200001)}};
  end.events[0].ptr = id;
  ThreadBuffer again{id, 200010, {ev(EventKind::thread_start, 200011)}};
  again.events[0].ptr = id;
  for (uint64_t t = 200012; t < 200040; t += 4) {
    Event e = ev(EventKind::method_enter, t);
    e.method = 0x1000 + t % 3 * 0x1000;
    again.events.push_back(e);
  }
  run.push_back(end);
  run.push_back(again);
  for (ThreadBuffer b : make_run(8, 3, 20, false)) {
    for (Event& e : b.events) e.time += 300000;
    b.time_base += 300000;
    run.push_back(std::move(b));
  }
  const std::vector<uint8_t> file = build_file(run);
  auto input = Input::from_memory(file.data(), file.size());
  Profile p;
  build_profile(*input, p);
  size_t with_id = 0;
  for (const ThreadInfo& t : p.threads()) with_id += t.id == id;
  REQUIRE(with_id == 2);  // two threads of one id: the second from the thread_start after the end
  check_same(file);
}

}  // namespace

TEST_CASE("parallel profile build: a thread id started again, its end in its own buffers", "[profile][parallel]") {
  check_restarted_id(false);
}

TEST_CASE("parallel profile build: a thread id started again, its end in another's buffer", "[profile][parallel]") {
  check_restarted_id(true);
}

// Most events not enter/leave: after a few dozen buffers the build goes on by one thread (the parts,
// with their open calls, merged into the one-thread builder first).
TEST_CASE("parallel profile build: allocations mostly, the rest read by one thread", "[profile][parallel]") {
  for (uint64_t seed = 40; seed <= 43; ++seed) {
    INFO("seed " << seed);
    std::vector<ThreadBuffer> run = make_run(seed, 4, 20, false);  // calls first: open calls on the workers
    for (ThreadBuffer b : make_run(seed + 100, 4, 80, false, true)) {
      for (Event& e : b.events) e.time += 1000000;
      b.time_base += 1000000;
      run.push_back(std::move(b));
    }
    check_same(build_file(run));
    BuildOptions o;
    o.max_nodes = 80;
    check_same(build_file(run), o);
  }
}

// A time of 2^64-1 (a damaged file's delta wraps there) on an event a worker folds (an allocation) is a
// time like any other: the thread's first and last times are the one-thread build's (the fuzzer found
// the worker's least time taking 2^64-1 for "none").
TEST_CASE("parallel profile build: an allocation at time 2^64-1", "[profile][parallel]") {
  for (const uint64_t before : {uint64_t{0}, uint64_t{5}}) {
    INFO("a time before it: " << before);
    ThreadBuffer b;
    b.thread_id = 0x7100;
    b.time_base = 0;
    if (before) {
      Event s = ev(EventKind::alloc, before);
      s.ptr = 0x5000;
      s.obj = 0x10000;
      s.size = 24;
      b.events.push_back(s);
    }
    Event a = ev(EventKind::alloc, UINT64_MAX);
    a.ptr = 0x5000;
    a.obj = 0x10020;
    a.size = 32;
    b.events.push_back(a);
    check_same(build_file({b}));
  }
}
