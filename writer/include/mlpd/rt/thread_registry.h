// ThreadRegistry: finds the calling thread's ThreadLog (an initial-exec TLS pointer: one load on the
// hot path), creates it on the thread's first event, and retires it when the thread exits (a pthread
// key destructor, which runs for every thread that logged, attached to Mono or not). The helper walks
// the registered logs under the registry's mutex; a log is unregistered under the same mutex before it
// is freed, so the helper never sees a freed log.
#pragma once

#include <pthread.h>

#include <atomic>
#include <mutex>

#include "mlpd/rt/clock.h"
#include "mlpd/rt/thread_log.h"

namespace mlpd::rt {

class ThreadRegistry {
 public:
  explicit ThreadRegistry(WriterShared& shared);
  ~ThreadRegistry();

  // The calling thread's log, created if needed; nullptr while logging is disabled.
  // A log made by an earlier registry (an agent that was detached: `mlpd detach`, then attached again)
  // is not this one's: the thread gets a new one (the old one is left as it is, never freed).
  ThreadLog* get() {
    ThreadLog* log = tls_log_;
    if (log && tls_owner_ == this) [[likely]] return log;
    return create();
  }
  // The calling thread's log if it has one (never creates one): for hot paths that leave the
  // creation to a slower path, so that the fast path makes no call.
  static ThreadLog* current() { return tls_owner_ == instance_ ? tls_log_ : nullptr; }

  // Stops creating logs and makes get() return nullptr for threads without one (shutdown, fork child).
  void disable() { enabled_.store(false, std::memory_order_release); }
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }

  // Retires and unregisters the calling thread's log (thread exit; also safe to call twice).
  void thread_exit();

  // In a fork child: the registry's mutex may have been held by a thread that does not exist there,
  // so nothing may take it again. Thread exits in the child then leave the registry alone.
  void forget_in_fork_child() {
    disable();
    instance_ = nullptr;
  }

  // Calls fn(ThreadLog&) for every registered log, under the registry mutex.
  template <typename Fn>
  void for_each(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (ThreadLog* l = head_; l; l = l->registry_next) fn(*l);
  }

  // Adds the events each thread has committed, per kind, to `out[kind]`: the live logs' counts and
  // those of the logs of threads that ended (kept when a log is freed).
  void add_counts_to(uint64_t (&out)[kEventKindCount]) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < kEventKindCount; ++i) out[i] += ended_counts_[i];
    for (ThreadLog* l = head_; l; l = l->registry_next) l->counts().add_to(out);
  }

  // Calls removed by short-call elision (calls-min), all threads, ended ones included.
  uint64_t elided_calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t n = ended_elided_;
    for (ThreadLog* l = head_; l; l = l->registry_next) n += l->elided_calls();
    return n;
  }

  // The current registry; the key destructor needs it. One agent per process.
  static ThreadRegistry* instance() { return instance_; }

 private:
  ThreadLog* create();
  static void on_thread_exit(void* log);

  WriterShared& shared_;
  std::mutex mutex_;
  ThreadLog* head_ = nullptr;
  uint64_t ended_counts_[kEventKindCount] = {};  // counts of freed logs (guarded by mutex_)
  uint64_t ended_elided_ = 0;                     // elided calls of freed logs (guarded by mutex_)
  pthread_key_t key_{};
  bool key_ok_ = false;
  std::atomic<bool> enabled_{true};
  static inline ThreadRegistry* instance_ = nullptr;
  // Defined here with its constant initialiser: a thread_local the compiler cannot see initialised
  // gets a TLS wrapper call checked on every access.
  static inline constinit thread_local ThreadLog* tls_log_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline constinit thread_local ThreadRegistry* tls_owner_ __attribute__((tls_model("initial-exec"))) = nullptr;
};

}  // namespace mlpd::rt
