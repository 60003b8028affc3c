#include "cpu_counters.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlpd/conventions.h"
#include "mlpd/format.h"

namespace mlpd::agent {

namespace {

// Reads a small /proc file relative to `dir_fd`; the text's size, or -1.
ssize_t read_small(int dir_fd, const char* path, char* buf, size_t cap) {
  const int fd = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, buf, cap - 1);
  ::close(fd);
  if (n >= 0) buf[n] = '\0';
  return n;
}

std::string comm_of(int task_fd, int tid) {
  char buf[64];
  const std::string path = std::to_string(tid) + "/comm";
  const ssize_t n = read_small(task_fd, path.c_str(), buf, sizeof buf);
  if (n <= 0) return {};
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

bool proc_stat_fields(std::string_view s, int last, uint64_t* fields) {
  const size_t close = s.rfind(')');  // the command name, in parentheses, may hold anything
  if (close == std::string_view::npos || last < 14) return false;
  // After ") ": field 3 (state) onwards; the numbers from field 14 (utime) are kept.
  size_t pos = close + 1;
  for (int field = 3; field <= last; ++field) {
    while (pos < s.size() && s[pos] == ' ') ++pos;
    const size_t begin = pos;
    while (pos < s.size() && s[pos] != ' ' && s[pos] != '\n') ++pos;
    if (pos == begin) return false;
    if (field >= 14) {
      uint64_t v = 0;
      for (size_t i = begin; i < pos; ++i) {
        if (s[i] < '0' || s[i] > '9') {
          if (field == 18 || field == 19) break;  // priority and nice may be negative; not used
          return false;
        }
        v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      }
      fields[field] = v;
    }
  }
  return true;
}

bool parse_proc_stat(const char* text, size_t size, CpuTimes& out) {
  uint64_t fields[23] = {};
  if (!proc_stat_fields(std::string_view(text, size), 22, fields)) return false;
  out.user = fields[14];
  out.system = fields[15];
  out.start = fields[22];
  return true;
}

CpuCounters::CpuCounters(const runtime::Runtime* runtime) : runtime_(runtime) {
  task_fd_ = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  self_fd_ = ::open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz > 0) ticks_per_second_ = static_cast<uint64_t>(hz);
  // The baseline: the process's CPU time and that of every thread living now.
  read_stat(-1, process_base_);
  if (task_fd_ < 0) return;
  const int dup_fd = ::dup(task_fd_);
  if (dup_fd < 0) return;
  DIR* dir = ::fdopendir(dup_fd);
  if (!dir) {
    ::close(dup_fd);
    return;
  }
  while (const dirent* d = ::readdir(dir)) {
    if (thread_base_.size() >= kMaxCpuThreads) break;
    char* end = nullptr;
    const long tid = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || tid <= 0) continue;
    CpuTimes now;
    if (read_stat(static_cast<int>(tid), now)) thread_base_.push_back({{static_cast<int>(tid), now.start}, now});
  }
  ::closedir(dir);
}

CpuCounters::~CpuCounters() {
  if (task_fd_ >= 0) ::close(task_fd_);
  if (self_fd_ >= 0) ::close(self_fd_);
}

uint64_t CpuCounters::to_time_units(uint64_t ticks) const {
  return ticks * (10000000 / ticks_per_second_);  // COUNTER_UNIT_TIME: 100 ns
}

bool CpuCounters::read_stat(int tid, CpuTimes& out) const {
  char buf[1024];
  ssize_t n;
  if (tid < 0) {
    if (self_fd_ < 0) return false;
    n = read_small(self_fd_, "stat", buf, sizeof buf);
  } else {
    if (task_fd_ < 0) return false;
    const std::string path = std::to_string(tid) + "/stat";
    n = read_small(task_fd_, path.c_str(), buf, sizeof buf);
  }
  return n > 0 && parse_proc_stat(buf, static_cast<size_t>(n), out);
}

// arg 0: user (reads /proc), 1: system (the value read for user in the same sample).
bool CpuCounters::read_process(const void* self, uint64_t arg, uint64_t& bits) {
  auto* me = const_cast<CpuCounters*>(static_cast<const CpuCounters*>(self));
  if (arg == 0 && !me->read_stat(-1, me->process_)) return false;
  bits = me->to_time_units(arg == 0 ? since(me->process_.user, me->process_base_.user)
                                    : since(me->process_.system, me->process_base_.system));
  return true;
}

bool CpuCounters::read_thread(const void* thread, uint64_t arg, uint64_t& bits) {
  auto* t = const_cast<Thread*>(static_cast<const Thread*>(thread));
  if (t->gone) return false;
  if (arg == 0) {
    CpuTimes now;
    if (!t->owner->read_stat(t->tid, now) || now.start != t->start) {
      t->gone = true;  // ended (its TID may already belong to another thread)
      return false;
    }
    t->last = now;
  }
  bits = t->owner->to_time_units(arg == 0 ? since(t->last.user, t->base.user) : since(t->last.system, t->base.system));
  return true;
}

void CpuCounters::add_process(CounterSampler& s) {
  for (uint64_t arg = 0; arg < 2; ++arg) {
    CounterSampler::Source src;
    src.desc.section = format::COUNTER_SECTION_PROFILER;
    src.desc.name = std::string(arg == 0 ? conventions::kProcessCpuUser : conventions::kProcessCpuSystem);
    src.desc.type = format::COUNTER_LONG;
    src.desc.unit = format::COUNTER_UNIT_TIME;
    src.desc.variance = format::COUNTER_VARIANCE_MONOTONIC;
    src.read = &CpuCounters::read_process;
    src.ctx = this;
    src.arg = arg;
    s.add(src);
  }
}

void CpuCounters::discover(CounterSampler& s) {
  if (task_fd_ < 0 || threads_.size() >= kMaxCpuThreads) return;
  const int dup_fd = ::dup(task_fd_);  // fdopendir takes the descriptor; ours stays for openat
  if (dup_fd < 0) return;
  DIR* dir = ::fdopendir(dup_fd);
  if (!dir) {
    ::close(dup_fd);
    return;
  }
  ::rewinddir(dir);
  std::vector<std::pair<int, uint64_t>> next_pending;  // first seen now: described next time
  std::unordered_map<int, std::string> managed;  // OS tid -> managed name, fetched once if needed
  bool fetched = false;
  while (const dirent* d = ::readdir(dir)) {
    if (threads_.size() >= kMaxCpuThreads) break;
    char* end = nullptr;
    const long tid = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || tid <= 0) continue;
    CpuTimes now;
    if (!read_stat(static_cast<int>(tid), now)) continue;
    bool known = false;
    for (const Thread& t : threads_) known = known || (t.tid == tid && t.start == now.start);
    if (known) continue;
    // Described at its second sighting: a thread just started may not have its managed name yet
    // (Mono raises thread_name after thread_started), and a counter's name cannot change later.
    bool seen = false;
    for (const auto& [ptid, pstart] : pending_) seen = seen || (ptid == tid && pstart == now.start);
    if (!seen) {
      next_pending.emplace_back(static_cast<int>(tid), now.start);
      continue;
    }
    if (!fetched && runtime_) {
      for (const runtime::OsThread& t : runtime_->os_threads()) {
        if (!t.name.empty()) managed[t.os_tid] = t.name;
      }
      fetched = true;
    }
    std::string name;
    if (auto it = managed.find(static_cast<int>(tid)); it != managed.end()) name = it->second;
    if (name.empty()) name = comm_of(task_fd_, static_cast<int>(tid));
    if (name.empty()) name = "?";
    Thread& t = threads_.emplace_back(Thread{this, static_cast<int>(tid), now.start});
    for (auto it = thread_base_.begin(); it != thread_base_.end(); ++it) {
      if (it->first.first == tid && it->first.second == now.start) {
        t.base = it->second;
        thread_base_.erase(it);
        break;
      }
    }
    for (uint64_t arg = 0; arg < 2; ++arg) {
      CounterSampler::Source src;
      src.desc.section = format::COUNTER_SECTION_PROFILER;
      src.desc.name = std::string(arg == 0 ? conventions::kThreadCpuUserPrefix : conventions::kThreadCpuSystemPrefix) + name +
                      " [" + std::to_string(tid) + "]";
      src.desc.type = format::COUNTER_LONG;
      src.desc.unit = format::COUNTER_UNIT_TIME;
      src.desc.variance = format::COUNTER_VARIANCE_MONOTONIC;
      src.read = &CpuCounters::read_thread;
      src.ctx = &t;
      src.arg = arg;
      s.add(src);
    }
  }
  ::closedir(dir);
  pending_.swap(next_pending);
}

}  // namespace mlpd::agent
