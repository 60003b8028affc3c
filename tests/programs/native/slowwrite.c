/* libslowwrite.so: a slow disk for the kill test (test_kill.py), preloaded before the agent. A write(2)
 * of 8 KiB or more to a regular file goes to the kernel one page at a time with a short sleep between
 * pages: as the kernel itself copies page by page and stops between pages when a fatal signal comes, a
 * kill then lands inside such a write most of the time, as it does on a busy machine whose disk is
 * behind (the kernel's dirty-page throttling sleeps inside write). Other writes pass through, unless
 * SLOWWRITE_SMALL_US is set: then a smaller write to a regular file (a 48-byte buffer header, say) waits
 * that many microseconds first, as throttling may hold any write, so that a kill lands in one often. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*write_fn)(int, const void*, size_t);

ssize_t write(int fd, const void* buf, size_t n) {
  static write_fn real;
  static long small_us = -1;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  if (small_us < 0) {
    const char* us = getenv("SLOWWRITE_SMALL_US");
    small_us = us ? atol(us) : 0;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return real(fd, buf, n);
  if (n < 8192) {
    if (small_us > 0) {
      const struct timespec pause = {small_us / 1000000, (small_us % 1000000) * 1000};
      nanosleep(&pause, NULL);
    }
    return real(fd, buf, n);
  }
  size_t done = 0;
  while (done < n) {
    const size_t k = n - done < 4096 ? n - done : 4096;
    const ssize_t r = real(fd, (const char*)buf + done, k);
    if (r <= 0) return done ? (ssize_t)done : r;
    done += (size_t)r;
    const struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
  }
  return (ssize_t)done;
}
