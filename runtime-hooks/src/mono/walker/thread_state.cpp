// The stack walker's per-thread state (thread_state.h) and its copies of this process's memory.
#include "walker/thread_state.h"

#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace mlpd::hooks::walker {

constinit thread_local ThreadWalk* tls_walk __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<uint64_t> g_fast_total{0}, g_slow_total[5], g_lmf_total{0};

namespace {

pthread_key_t g_key;
bool g_key_ok = false;

void free_thread(void* p) {
  auto* t = static_cast<ThreadWalk*>(p);
  flush_counts(*t);
  tls_walk = nullptr;
  std::free(t);
}

// Our pid, for process_vm_readv: getpid() is a system call in current glibc (it was 57% of a
// program's samples with `alloc` backtraces: issue 22). Taken at init() and in the child of a fork
// (pthread_atfork; a child that runs our code without glibc's fork, e.g. after a raw clone, would
// read its parent: a wrong backtrace, never a fault).
pid_t g_pid = 0;
void refresh_pid() { g_pid = getpid(); }

}  // namespace

void flush_counts(ThreadWalk& t) {
  if (t.fast) g_fast_total.fetch_add(t.fast, std::memory_order_relaxed);
  if (t.via_lmf) g_lmf_total.fetch_add(t.via_lmf, std::memory_order_relaxed);
  t.fast = 0;
  t.via_lmf = 0;
  for (int i = 0; i < 5; ++i) {
    if (t.slow[i]) g_slow_total[i].fetch_add(t.slow[i], std::memory_order_relaxed);
    t.slow[i] = 0;
  }
}

ThreadWalk* make_thread_walk() {
  void* mem = std::calloc(1, sizeof(ThreadWalk));
  if (!mem) return nullptr;
  auto* t = new (mem) ThreadWalk;
  std::memset(t->ips, 0, sizeof t->ips);
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
      t->lo = reinterpret_cast<uintptr_t>(addr);
      t->hi = t->lo + size;
      t->bounds_ok = true;
    }
    pthread_attr_destroy(&attr);
  }
  if (g_key_ok) pthread_setspecific(g_key, t);
  tls_walk = t;
  return t;
}

bool make_thread_key() {
  if (!g_key_ok) g_key_ok = pthread_key_create(&g_key, free_thread) == 0;
  return g_key_ok;
}

void take_pid() {
  if (g_pid == 0) {
    refresh_pid();
    pthread_atfork(nullptr, nullptr, refresh_pid);
  }
}

bool read_memory(uint64_t addr, uint8_t* out, size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return process_vm_readv(g_pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

}  // namespace mlpd::hooks::walker
