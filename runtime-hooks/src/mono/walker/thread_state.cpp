// The stack walker's per-thread state (thread_state.h) and its copies of this process's memory.
#include "walker/thread_state.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

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

// Where process_vm_readv is missing (qemu-user answers ENOSYS: the arm64 tests run there) or refused
// (a seccomp sandbox, EPERM: Docker's default profile), the copy goes through a pipe of our own
// instead: write() from the address (the kernel copies from it, and an unmapped or unreadable page is
// EFAULT, never a fault: qemu-user checks the guest range the same way), then read() back. Both calls
// are async-signal-safe. One pipe per process (two descriptors, close-on-exec, non-blocking, made at the
// first such read), used by one thread at a time (a spin flag, never a mutex: a fork's child resets it
// and makes its own pipe, as it may have copied the flag set, and the parent's pipe is shared).
std::atomic<int> g_readv_state{0};  // 0: process_vm_readv not refused so far, 1: refused (the pipe)
std::atomic_flag g_pipe_busy = ATOMIC_FLAG_INIT;
int g_pipe[2] = {-1, -1};
pid_t g_pipe_pid = 0;  // the process that made g_pipe (guarded by g_pipe_busy)

void refresh_pid() {
  g_pid = getpid();
  g_pipe_busy.clear(std::memory_order_release);  // (the child: nobody else runs yet)
}

bool pipe_copy(uint64_t addr, uint8_t* out, size_t n) {
  for (int spins = 0; g_pipe_busy.test_and_set(std::memory_order_acquire); ++spins) {
    if (spins >= 10000) {
      errno = EAGAIN;
      return false;
    }
    sched_yield();
  }
  bool ok = true;
  int err = 0;
  if (g_pipe_pid != g_pid || g_pipe[0] < 0) {
    if (g_pipe[0] >= 0) {
      ::close(g_pipe[0]);  // the parent's, in a fork's child
      ::close(g_pipe[1]);
    }
    g_pipe[0] = g_pipe[1] = -1;
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      g_pipe[0] = g_pipe[1] = -1;
      ok = false;
      err = errno;
    }
    g_pipe_pid = g_pid;
  }
  constexpr size_t kChunk = 4096;  // at most PIPE_BUF per write: well under the pipe's capacity
  for (size_t done = 0; ok && done < n;) {
    const size_t want = n - done < kChunk ? n - done : kChunk;
    const ssize_t w = ::write(g_pipe[1], reinterpret_cast<const void*>(addr + done), want);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      err = w < 0 ? errno : EFAULT;
      break;
    }
    // Read back exactly what was written (a write cut short by a fault wrote the bytes before it), so
    // that the pipe is empty again whatever happens next.
    for (size_t got = 0; got < static_cast<size_t>(w);) {
      const ssize_t r = ::read(g_pipe[0], out + done + got, static_cast<size_t>(w) - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {  // cannot happen with bytes in the pipe; the pipe is dropped so none stay in it
        ::close(g_pipe[0]);
        ::close(g_pipe[1]);
        g_pipe[0] = g_pipe[1] = -1;
        ok = false;
        err = EIO;
        break;
      }
      got += static_cast<size_t>(r);
    }
    done += static_cast<size_t>(w);
  }
  g_pipe_busy.clear(std::memory_order_release);
  if (!ok) errno = err;
  return ok;
}

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
  if (g_readv_state.load(std::memory_order_relaxed) == 0) [[likely]] {
    iovec local{out, n};
    iovec remote{reinterpret_cast<void*>(addr), n};
    const ssize_t got = process_vm_readv(g_pid, &local, 1, &remote, 1, 0);
    if (got == static_cast<ssize_t>(n)) return true;
    if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return false;  // a fault (EFAULT), or cut short
    g_readv_state.store(1, std::memory_order_relaxed);
  }
  return pipe_copy(addr, out, n);
}

bool read_memory_by_pipe(uint64_t addr, uint8_t* out, size_t n) { return pipe_copy(addr, out, n); }

}  // namespace mlpd::hooks::walker
