// Test support: a runtime behind the door (mlpd/runtime/runtime.h) with no runtime at all, for unit
// tests of the agent shell's parts that ask the runtime questions (counters, metrics, configuration).
// Every answer is a public field the test sets; install() and the control calls only record what they
// were given. (tests/door/door_fake.cpp is the whole-agent version, which also writes events.)
// WritingRuntime (below) also writes: what install() describes (an image, a method's code) and the
// enter/leave of call(), through the writer the agent gave it, for tests of the whole agent shell
// (agent::start ... exit) that read its file back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mlpd/format.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"
#include "mlpd/rt/meta_log.h"
#include "mlpd/rt/thread_registry.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::test {

class FakeRuntime : public runtime::Runtime {
 public:
  // The answers.
  std::string runtime_name = "fake";
  uint32_t mask = 0;
  runtime::SampleStats samples;
  uint64_t alloc_bytes = 0;
  uint64_t paused_reads = 0;            // what paused_since_last_read() answers (then 0)
  std::vector<runtime::Counter> fresh;  // handed out by the next take_new_counters()
  std::map<void*, uint64_t> values;     // counter handle -> value (absent: cannot be read)
  bool has_pauses = false;
  runtime::GcPauses pauses;
  std::vector<runtime::OsThread> threads;
  std::string refusal;                  // late_refusal()'s
  std::vector<std::string> accepted = {"callspec"};  // the options takes_option() says yes to

  // What it was given.
  runtime::Config installed;
  int installs = 0, stops = 0, detaches = 0, rounds = 0, final_rounds = 0;

  std::string_view name() const override { return runtime_name; }
  bool present() const override { return true; }
  std::string summary() const override { return "runtime: " + runtime_name; }
  bool takes_option(std::string_view option) const override {
    for (const std::string& a : accepted)
      if (a == option) return true;
    return false;
  }
  std::string late_refusal(const runtime::Config&) const override { return refusal; }
  bool install(const runtime::Config& config, const runtime::Env&, std::string&) override {
    installed = config;
    ++installs;
    return true;
  }
  void stop() override { ++stops; }
  void detach() override { ++detaches; }
  void end_remaining_threads() override {}
  uint32_t event_mask() const override { return mask; }
  void set_event_mask(uint32_t m) override { mask = m; }
  bool calls_enabled() const override { return false; }
  uint32_t call_depth() const override { return 0; }
  void set_call_depth(uint32_t) override {}
  uint32_t max_frames() const override { return 0; }
  bool pause() override { return true; }
  bool resume() override { return true; }
  bool paused() const override { return false; }
  uint64_t pause_generation() const override { return 0; }
  uint64_t paused_since_last_read() override {
    const uint64_t v = paused_reads;
    paused_reads = 0;
    return v;
  }
  void round() override { ++rounds; }
  void final_round(bool) override { ++final_rounds; }
  runtime::SampleStats sample_stats() const override { return samples; }
  uint64_t alloc_sample_bytes() const override { return alloc_bytes; }
  void take_new_counters(std::vector<runtime::Counter>& out) override {
    out.insert(out.end(), fresh.begin(), fresh.end());
    fresh.clear();
  }
  bool read_counter(const runtime::Counter& c, uint64_t& bits) override {
    const auto it = values.find(c.handle);
    if (it == values.end()) return false;
    bits = it->second;
    return true;
  }
  bool gc_pauses(runtime::GcPauses& out) const override {
    if (has_pauses) out = pauses;
    return has_pauses;
  }
  std::vector<runtime::OsThread> os_threads() const override { return threads; }
};

// FakeRuntime that writes events as a runtime's callbacks would: install() describes the image
// "fake.exe" (kImage) and the method kMethodName (kMethod, its code at kCode); call() writes one
// enter/leave of it on the calling thread when `calls` was given; thread_done() ends the calling
// thread's log. install() refuses with `install_error` when that is set.
class WritingRuntime : public FakeRuntime {
 public:
  static constexpr uint64_t kImage = 0x10000;
  static constexpr uint64_t kMethod = 0x40010;
  static constexpr uint64_t kCode = 0x7000000;
  static constexpr const char* kMethodName = "Fake.Program:Work ()";

  std::string install_error;
  int after_forks = 0;  // after_fork_child() calls
  uint64_t calls_written = 0;  // call()s that found the thread's log (a disabled registry gives none)
  bool describe = true;  // install() describes the image and the method
  runtime::Env env;      // what the agent gave install()

  bool install(const runtime::Config& config, const runtime::Env& given, std::string& error) override {
    if (!install_error.empty()) {
      error = install_error;
      return false;
    }
    FakeRuntime::install(config, given, error);
    env = given;
    calls_ = config.calls;
    stopped_ = false;
    if (describe) {
      Event image;
      image.kind = EventKind::image_load;
      image.ptr = kImage;
      image.name = "fake.exe";
      env.meta->add(image, rt::now_ns);
      Event jit;
      jit.kind = EventKind::method_jit;
      jit.method = kMethod;
      jit.ptr = kCode;
      jit.size = 0x100;
      jit.name = kMethodName;
      env.meta->add(jit, rt::now_ns);
    }
    return true;
  }
  void stop() override {
    stopped_ = true;
    FakeRuntime::stop();
  }
  void detach() override {
    stopped_ = true;
    FakeRuntime::detach();
  }
  void after_fork_child() override { ++after_forks; }
  bool calls_enabled() const override { return calls_; }

  // One call of kMethod on the calling thread (enter and leave), when recording calls.
  void call() {
    if (!calls_ || stopped_ || !env.registry) return;
    rt::ThreadLog* log = env.registry->get();
    if (!log) return;
    rt::write_method(*log, format::TYPE_ENTER, rt::now_ns(), kMethod);
    rt::write_method(*log, format::TYPE_LEAVE, rt::now_ns(), kMethod);
    ++calls_written;
  }
  // A thread that called call() ends: its log goes to the helper.
  void thread_done() {
    if (env.registry) env.registry->thread_exit();
  }

 private:
  bool calls_ = false;
  bool stopped_ = false;
};

}  // namespace mlpd::test
