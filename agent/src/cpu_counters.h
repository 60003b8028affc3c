// CPU usage counters (issue 15): the process's CPU time and each thread's, user and system, read
// from /proc/self/stat and /proc/self/task/TID/stat by the helper thread (never by the program's
// threads) at each counter sample, as profiler counters (section Profiler, long, unit time = 100 ns,
// monotonic):
//   "CPU time (user)", "CPU time (system)"                        the process (threads gone included)
//   "Thread CPU time (user): NAME [TID]", "... (system): NAME [TID]"   one pair per thread
// A thread's pair is described at the second sample that sees the thread (threads living shorter
// than a flush interval or two may never be; their time is in the process's), named with its managed name if the program gave it one by
// then, else its OS name (/proc/.../comm); TID is the OS thread id. A later rename does not rename the
// counter (a counter's descriptor cannot change; the file's thread_name events give the new name).
// A thread that ended is no longer sampled. At most kMaxCpuThreads threads get counters.
// The window is the profiling session's: every value counts from the construction (the agent's start,
// or `mlpd attach`), the process's and each thread's CPU time read then being the baseline (issue 33.3:
// after an attach the counters gave the CPU used since the process started, 29.9 s for a 10 s window
// in which 12.5 CPU-s were used). A thread started later counts from zero.
// Helper thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mlpd/agent/counter_sampler.h"
#include "mlpd/runtime/runtime.h"

namespace mlpd::agent {

inline constexpr size_t kMaxCpuThreads = 512;

// One /proc stat line's CPU times, in clock ticks.
struct CpuTimes {
  uint64_t user = 0;
  uint64_t system = 0;
  uint64_t start = 0;  // the thread's start time (field 22): tells a reused TID from the same thread
};
// Parses the text of a /proc/.../stat file (the command name may hold spaces and parentheses).
bool parse_proc_stat(const char* text, size_t size, CpuTimes& out);
// The numeric fields 14..`last` of such a text into fields[14..last] (fields has last + 1 slots;
// priority and nice, which may be negative, are read as 0). False when the text is not one.
bool proc_stat_fields(std::string_view text, int last, uint64_t* fields);

class CpuCounters {
 public:
  // `runtime`: names the managed threads (may be null: /proc's names only).
  explicit CpuCounters(const runtime::Runtime* runtime = nullptr);
  ~CpuCounters();
  CpuCounters(const CpuCounters&) = delete;
  CpuCounters& operator=(const CpuCounters&) = delete;

  // The process counters (at construction of the sampler).
  void add_process(CounterSampler& s);
  // The threads that appeared since the last call (the sampler's discover step).
  void discover(CounterSampler& s);

  size_t threads() const { return threads_.size(); }

 private:
  struct Thread {
    CpuCounters* owner;
    int tid;
    uint64_t start;
    bool gone = false;
    CpuTimes last;  // read at the user counter, given at the system counter of the same sample
    CpuTimes base;  // its CPU time at the construction (zero for a thread started later)
  };
  // The times counted from the baseline (never below zero: a tick read twice may round differently).
  static uint64_t since(uint64_t now, uint64_t base) { return now > base ? now - base : 0; }
  static bool read_process(const void* self, uint64_t arg, uint64_t& bits);
  static bool read_thread(const void* thread, uint64_t arg, uint64_t& bits);
  bool read_stat(int tid, CpuTimes& out) const;  // tid < 0: the process
  uint64_t to_time_units(uint64_t ticks) const;

  const runtime::Runtime* runtime_ = nullptr;
  int task_fd_ = -1;  // /proc/self/task
  int self_fd_ = -1;  // /proc/self
  uint64_t ticks_per_second_ = 100;
  CpuTimes process_;
  CpuTimes process_base_;  // the process's CPU time at the construction
  // (tid, start) -> CPU time at the construction, for the threads living then; an entry is taken out
  // when its thread gets counters. At most kMaxCpuThreads.
  std::vector<std::pair<std::pair<int, uint64_t>, CpuTimes>> thread_base_;
  std::deque<Thread> threads_;  // a deque: the sampler keeps pointers to them
  std::vector<std::pair<int, uint64_t>> pending_;  // (tid, start) seen once, not described yet
};

}  // namespace mlpd::agent
