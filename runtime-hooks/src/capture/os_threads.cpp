// The managed threads' OS ids and names (os_threads.h).
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <new>
#include <unordered_set>

#include "os_threads.h"

namespace mlpd::hooks {

namespace {
std::mutex& threads_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: threads may start during exit
  return *m;
}
std::vector<runtime::OsThread>* g_threads = nullptr;  // under threads_mutex(); allocated on first use
// The threads the runtime named (thread_name), started before the agent or not; under
// threads_mutex(). Bounded: past kMaxNamed it is cleared (a thread then may get its OS name too,
// after its runtime name, in an attached session's samples: sample_drain.cpp).
std::unordered_set<uint64_t>* g_named = nullptr;
constexpr size_t kMaxNamed = 65536;
}  // namespace

namespace thread_ids {

void started(uint64_t tid) {
  if (tid != static_cast<uint64_t>(pthread_self())) return;  // not raised on the thread itself
  const int os_tid = static_cast<int>(syscall(SYS_gettid));
  std::lock_guard<std::mutex> lock(threads_mutex());
  if (!g_threads && !(g_threads = new (std::nothrow) std::vector<runtime::OsThread>)) return;
  for (runtime::OsThread& t : *g_threads) {
    if (t.os_tid == os_tid) {  // an OS id reused by a new thread
      t.tid = tid;
      t.name.clear();
      return;
    }
  }
  g_threads->push_back(runtime::OsThread{os_tid, tid, {}});
}

void named(uint64_t tid, const char* name) {
  std::lock_guard<std::mutex> lock(threads_mutex());
  if (g_named || (g_named = new (std::nothrow) std::unordered_set<uint64_t>)) {
    if (g_named->size() >= kMaxNamed) g_named->clear();
    g_named->insert(tid);
  }
  if (!g_threads) return;
  for (runtime::OsThread& t : *g_threads) {
    if (t.tid == tid) t.name = name ? name : "";
  }
}

bool has_name(uint64_t tid) {
  std::lock_guard<std::mutex> lock(threads_mutex());
  return g_named && g_named->count(tid) != 0;
}

}  // namespace thread_ids

std::vector<runtime::OsThread> os_threads() {
  std::lock_guard<std::mutex> lock(threads_mutex());
  return g_threads ? *g_threads : std::vector<runtime::OsThread>{};
}

}  // namespace mlpd::hooks
