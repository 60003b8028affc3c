#include "mlpd/rt/thread_registry.h"

#include <new>

namespace mlpd::rt {

ThreadRegistry::ThreadRegistry(WriterShared& shared) : shared_(shared) {
  key_ok_ = pthread_key_create(&key_, &ThreadRegistry::on_thread_exit) == 0;
  instance_ = this;
}

ThreadRegistry::~ThreadRegistry() {
  if (instance_ == this) instance_ = nullptr;
  // Logs still registered belong to threads that outlive the agent (process exit); their buffers
  // were written by the final flush. They are not freed: a thread might still be inside an event.
}

ThreadLog* ThreadRegistry::create() {
  if (!enabled()) return nullptr;
  auto* log = new (std::nothrow) ThreadLog(shared_, static_cast<uint64_t>(pthread_self()), now_ns());
  if (!log) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    log->registry_next = head_;
    head_ = log;
  }
  tls_log_ = log;
  tls_owner_ = this;
  if (key_ok_) pthread_setspecific(key_, log);
  return log;
}

void ThreadRegistry::thread_exit() {
  ThreadLog* log = tls_log_;
  if (!log) return;
  tls_log_ = nullptr;
  if (tls_owner_ != this) return;  // an earlier registry's (detached agent): left as it is
  if (key_ok_) pthread_setspecific(key_, nullptr);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    log->retire();  // under the mutex: the helper's snapshot sees either the buffer or the queue
    for (size_t i = 0; i < kEventKindCount; ++i) ended_counts_[i] += log->counts().get(static_cast<EventKind>(i));
    ended_elided_ += log->elided_calls();
    for (ThreadLog** p = &head_; *p; p = &(*p)->registry_next) {
      if (*p == log) {
        *p = log->registry_next;
        break;
      }
    }
  }
  delete log;
}

void ThreadRegistry::on_thread_exit(void*) {
  if (ThreadRegistry* r = instance_) r->thread_exit();
}

}  // namespace mlpd::rt
