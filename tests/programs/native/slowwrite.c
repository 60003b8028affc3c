/* libslowwrite.so: a slow disk for the kill test (test_kill.py), preloaded before the agent. A write(2)
 * of 8 KiB or more to a regular file goes to the kernel one page at a time with a short sleep between
 * pages: as the kernel itself copies page by page and stops between pages when a fatal signal comes, a
 * kill then lands inside such a write most of the time, as it does on a busy machine whose disk is
 * behind (the kernel's dirty-page throttling sleeps inside write). Other writes pass through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*write_fn)(int, const void*, size_t);

ssize_t write(int fd, const void* buf, size_t n) {
  static write_fn real;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  struct stat st;
  if (n < 8192 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return real(fd, buf, n);
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
