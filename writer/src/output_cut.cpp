// The output's cut-back point at a sudden end (output_cut.h).
#include "mlpd/output_cut.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

namespace mlpd::output_cut {
namespace {

std::atomic<int> g_fd{-1};
std::atomic<uint64_t> g_whole{0};
std::atomic<bool> g_busy{false};
std::atomic<bool> g_frozen{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<bool>::is_always_lock_free, "a signal handler reads these");

}  // namespace

// Once frozen, the file already attached stays the one to cut: a rotation after the freeze (the old
// file's close skipped, so still attached and maybe ending inside a round) must not hand the handler
// the new, empty file in its place. Without a freeze, the old file was detached by its close.
void attach(int fd) noexcept {
  if (g_frozen.load(std::memory_order_seq_cst)) return;
  g_whole.store(0, std::memory_order_seq_cst);
  g_fd.store(fd, std::memory_order_seq_cst);
}

bool enter() noexcept {
  g_busy.store(true, std::memory_order_seq_cst);
  if (!g_frozen.load(std::memory_order_seq_cst)) return true;
  g_busy.store(false, std::memory_order_seq_cst);
  return false;
}

void leave() noexcept { g_busy.store(false, std::memory_order_seq_cst); }

void detach() noexcept {
  g_fd.store(-1, std::memory_order_seq_cst);
  g_whole.store(0, std::memory_order_seq_cst);
}

// Once frozen, no new mark: the writes skipped since (DescriptorSink::write returns true for them) may
// leave a round's buffer header without its data, and the handler may read the mark only after it
// waited for the write under way, by when the rest of that round has run through (seen: the header
// written while the handler waited, the data skipped, the round marked whole, the file left ending
// after the header). Frozen only grows, and enter() reads it before each write, so a mark that sees it
// clear follows writes that all went in.
void mark_whole(uint64_t offset) noexcept {
  if (g_frozen.load(std::memory_order_seq_cst)) return;
  g_whole.store(offset, std::memory_order_seq_cst);
}

void forget() noexcept {
  g_fd.store(-1, std::memory_order_seq_cst);
  g_whole.store(0, std::memory_order_seq_cst);
  g_busy.store(false, std::memory_order_seq_cst);  // the parent's helper thread does not exist here
  g_frozen.store(false, std::memory_order_seq_cst);
}

void freeze() noexcept { g_frozen.store(true, std::memory_order_seq_cst); }

bool cut(int wait_ms) noexcept {
  freeze();
  // A round's write of a 64 KiB buffer takes microseconds; a stuck disk is not waited for long.
  for (int i = 0; i < wait_ms * 10 && g_busy.load(std::memory_order_seq_cst); ++i) {
    const timespec t{0, 100000};
    nanosleep(&t, nullptr);
  }
  const int fd = g_fd.load(std::memory_order_seq_cst);
  const uint64_t whole = g_whole.load(std::memory_order_seq_cst);
  if (fd < 0 || whole == 0) return false;  // before the header was written: nothing to cut back to
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) <= whole) return false;
  int rc;
  do {
    rc = ftruncate(fd, static_cast<off_t>(whole));
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

}  // namespace mlpd::output_cut
