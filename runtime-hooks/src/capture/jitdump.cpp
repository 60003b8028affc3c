#include "jitdump.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mlpd/arch/machine.h"

namespace mlpd::hooks::perf {

namespace {

constexpr size_t kMaxName = 64 * 1024;          // longer names are cut (a record's size is 32-bit)
constexpr uint64_t kMaxCode = 64ull << 20;      // a code range larger than this is not copied
constexpr size_t kFlushBytes = 256 * 1024;      // write() at least this much at a time
constexpr size_t kMapPrefix = 2 * 16 + 2;       // "%" PRIx64 " %" PRIx64 " "

template <typename T>
uint8_t* put_raw(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

template <typename T>
void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

std::string errno_text(int e) { return std::strerror(e); }

bool write_all(int fd, const uint8_t* p, size_t n, int& err) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    if (w == 0) {
      err = ENOSPC;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

uint32_t elf_machine() { return arch::kElfMachine; }

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void encode_file_header(std::vector<uint8_t>& out, uint32_t pid, uint64_t timestamp) {
  append<uint32_t>(out, kJitdumpMagic);
  append<uint32_t>(out, kJitdumpVersion);
  append<uint32_t>(out, kJitHeaderSize);
  append<uint32_t>(out, elf_machine());
  append<uint32_t>(out, 0);  // pad1
  append<uint32_t>(out, pid);
  append<uint64_t>(out, timestamp);
  append<uint64_t>(out, 0);  // flags: CLOCK_MONOTONIC, not an architecture clock
}

void encode_close(std::vector<uint8_t>& out, uint64_t timestamp) {
  append<uint32_t>(out, kJitCodeClose);
  append<uint32_t>(out, kRecordHeaderSize);
  append<uint64_t>(out, timestamp);
}

// One code load as queued: the jitdump record, then the perf map line, each present when its file is.
struct Writer::Item {
  Item* next;
  uint64_t timestamp;
  uint64_t bytes;  // the whole allocation, for the queue's bound
  uint32_t dump_len;
  uint32_t map_len;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }
};

Writer::~Writer() {
  // Only tests destroy a Writer (the agent's lives until the process ends).
  for (Item* p = head_.exchange(nullptr); p;) {
    Item* n = p->next;
    std::free(p);
    p = n;
  }
  if (dump_.fd >= 0) ::close(dump_.fd);
  if (map_.fd >= 0) ::close(map_.fd);
  if (mapping_) munmap(mapping_, mapping_size_);
}

bool Writer::open(const WriterConfig& config, std::string& error) {
  cfg_ = config;
  const std::string pid = std::to_string(config.pid);
  constexpr int kFlags = O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
  if (config.jitdump) {
    dump_path_ = (config.jitdump_dir.empty() ? std::string(".") : config.jitdump_dir) + "/jit-" + pid + ".dump";
    // Read access too: perf finds the file by its executable mapping.
    dump_.fd = ::open(dump_path_.c_str(), O_RDWR | kFlags, 0644);
    if (dump_.fd < 0) {
      error = "mlpd: jitdump: cannot create " + dump_path_ + ": " + errno_text(errno);
      return false;
    }
    std::vector<uint8_t> header;
    encode_file_header(header, config.pid, monotonic_ns());
    int err = 0;
    if (!write_all(dump_.fd, header.data(), header.size(), err)) {
      error = "mlpd: jitdump: cannot write " + dump_path_ + ": " + errno_text(err);
      ::close(dump_.fd);
      dump_.fd = -1;
      ::unlink(dump_path_.c_str());
      return false;
    }
    dump_.good = header.size();
    // The spec's marker for perf: one PROT_EXEC mapping of the file, which `perf record` logs as an
    // MMAP event and `perf inject --jit` recognises by its name jit-PID.dump.
    const long page = sysconf(_SC_PAGESIZE);
    mapping_size_ = page > 0 ? static_cast<size_t>(page) : 4096;
    void* m = mmap(nullptr, mapping_size_, PROT_READ | PROT_EXEC, MAP_PRIVATE, dump_.fd, 0);
    if (m == MAP_FAILED) {
      error = "mlpd: jitdump: cannot map " + dump_path_ + " executable (" + errno_text(errno) +
              "; a noexec file system?): perf would not find it";
      ::close(dump_.fd);
      dump_.fd = -1;
      ::unlink(dump_path_.c_str());
      return false;
    }
    mapping_ = m;
  }
  if (config.perfmap) {
    map_path_ = (config.perfmap_dir.empty() ? std::string("/tmp") : config.perfmap_dir) + "/perf-" + pid + ".map";
    map_.fd = ::open(map_path_.c_str(), O_WRONLY | kFlags, 0644);
    if (map_.fd < 0) {
      error = "mlpd: perfmap: cannot create " + map_path_ + ": " + errno_text(errno);
      if (dump_.fd >= 0) {
        ::close(dump_.fd);
        dump_.fd = -1;
        ::unlink(dump_path_.c_str());
      }
      return false;
    }
  }
  state_.store(kOpen, std::memory_order_release);
  return true;
}

void Writer::load(const char* name, size_t name_len, uint64_t addr, uint64_t size, const void* code,
                  uint64_t timestamp, uint32_t tid) {
  if (state_.load(std::memory_order_acquire) != kOpen) return;
  if (!name) name_len = 0;
  name_len = std::min(name_len, kMaxName);
  const uint64_t code_len = (code && size <= kMaxCode) ? size : 0;
  const uint64_t dump_len = cfg_.jitdump ? kRecordHeaderSize + kCodeLoadFixed + name_len + 1 + code_len : 0;
  const uint64_t map_len = cfg_.perfmap ? kMapPrefix + name_len + 1 : 0;
  const uint64_t bytes = sizeof(Item) + dump_len + map_len;
  const uint64_t before = queued_.fetch_add(bytes, std::memory_order_relaxed);
  if (before + bytes > cfg_.max_queued_bytes) {
    queued_.fetch_sub(bytes, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
    if (cfg_.wake) cfg_.wake(cfg_.wake_ctx);
    return;
  }
  auto* item = static_cast<Item*>(std::malloc(bytes));
  if (!item) {
    queued_.fetch_sub(bytes, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  item->timestamp = timestamp;
  item->bytes = bytes;
  item->dump_len = static_cast<uint32_t>(dump_len);
  item->map_len = 0;
  uint8_t* p = item->data();
  if (cfg_.jitdump) {
    p = put_raw<uint32_t>(p, kJitCodeLoad);
    p = put_raw<uint32_t>(p, static_cast<uint32_t>(dump_len));
    p = put_raw<uint64_t>(p, timestamp);
    p = put_raw<uint32_t>(p, cfg_.pid);
    p = put_raw<uint32_t>(p, tid);
    p = put_raw<uint64_t>(p, addr);  // vma
    p = put_raw<uint64_t>(p, addr);  // code_addr
    p = put_raw<uint64_t>(p, code_len ? code_len : size);
    p = put_raw<uint64_t>(p, index_.fetch_add(1, std::memory_order_relaxed));
    if (name_len) std::memcpy(p, name, name_len);
    p += name_len;
    *p++ = 0;
    if (code_len) std::memcpy(p, code, code_len);
    p += code_len;
  }
  if (cfg_.perfmap) {
    char prefix[kMapPrefix + 1];
    const int n = std::snprintf(prefix, sizeof prefix, "%" PRIx64 " %" PRIx64 " ", addr, size);
    const size_t pn = n > 0 ? std::min<size_t>(static_cast<size_t>(n), kMapPrefix) : 0;
    std::memcpy(p, prefix, pn);
    // One line per symbol: line breaks in a name would start a bogus entry.
    for (size_t i = 0; i < name_len; ++i) p[pn + i] = (name[i] == '\n' || name[i] == '\r') ? ' ' : name[i];
    p[pn + name_len] = '\n';
    item->map_len = static_cast<uint32_t>(pn + name_len + 1);
  }
  item->next = head_.load(std::memory_order_relaxed);
  while (!head_.compare_exchange_weak(item->next, item, std::memory_order_release, std::memory_order_relaxed)) {
  }
  if (cfg_.wake && before < cfg_.wake_bytes && before + bytes >= cfg_.wake_bytes) cfg_.wake(cfg_.wake_ctx);
}

bool Writer::flush(Out& out, const std::string& path, std::string& failure) {
  if (out.buf.empty() || out.failed || out.fd < 0) {
    out.buf.clear();
    return !out.failed;
  }
  int err = 0;
  if (write_all(out.fd, out.buf.data(), out.buf.size(), err)) {
    out.good += out.buf.size();
    out.buf.clear();
    return true;
  }
  // Keep the file well formed: cut it back to its last whole record.
  out.failed = true;
  out.buf.clear();
  out.buf.shrink_to_fit();
  (void)!ftruncate(out.fd, static_cast<off_t>(out.good));
  failure = "mlpd: cannot write " + path + ": " + errno_text(err) + "; it is written no more (the program runs on)";
  return false;
}

bool Writer::put(Out& out, const uint8_t* data, size_t n, const std::string& path, std::string& failure) {
  if (out.failed || out.fd < 0) return true;
  out.buf.insert(out.buf.end(), data, data + n);
  return out.buf.size() < kFlushBytes || flush(out, path, failure);
}

bool Writer::drain(std::string& failure) {
  Item* list = head_.exchange(nullptr, std::memory_order_acquire);
  if (!list) return true;
  std::vector<Item*> items;
  for (Item* p = list; p; p = p->next) items.push_back(p);
  std::reverse(items.begin(), items.end());  // push order
  std::stable_sort(items.begin(), items.end(), [](const Item* a, const Item* b) { return a->timestamp < b->timestamp; });
  bool ok = true;
  for (Item* it : items) {
    if (it->dump_len) {
      // The record header's timestamp (offset 8): clamp a late record to the last one written. It
      // is only later than its true load time by the delay of its queueing.
      uint64_t ts = it->timestamp;
      if (ts < last_written_ts_) {
        ts = last_written_ts_;
        std::memcpy(it->data() + 8, &ts, sizeof ts);
      }
      last_written_ts_ = ts;
      ok &= put(dump_, it->data(), it->dump_len, dump_path_, failure);
    }
    if (it->map_len) ok &= put(map_, it->data() + it->dump_len, it->map_len, map_path_, failure);
    if ((it->dump_len && !dump_.failed) || (!it->dump_len && it->map_len && !map_.failed)) ++records_;
    queued_.fetch_sub(it->bytes, std::memory_order_relaxed);
    std::free(it);
  }
  ok &= flush(dump_, dump_path_, failure);
  ok &= flush(map_, map_path_, failure);
  return ok;
}

bool Writer::finish(std::string& failure) {
  int expected = kOpen;
  if (!state_.compare_exchange_strong(expected, kFinished)) return true;
  bool ok = drain(failure);
  if (dump_.fd >= 0 && !dump_.failed) {
    std::vector<uint8_t> close_record;
    encode_close(close_record, monotonic_ns());
    ok &= put(dump_, close_record.data(), close_record.size(), dump_path_, failure);
    ok &= flush(dump_, dump_path_, failure);
  }
  if (dump_.fd >= 0) {
    ::close(dump_.fd);
    dump_.fd = -1;
  }
  if (map_.fd >= 0) {
    ::close(map_.fd);
    map_.fd = -1;
  }
  return ok;
}

void Writer::forget_after_fork() {
  state_.store(kFinished, std::memory_order_release);
  // The descriptors are the parent's files: let them go without writing (the queue is left as it is:
  // another thread may have been pushing when the parent forked).
  if (dump_.fd >= 0) ::close(dump_.fd);
  if (map_.fd >= 0) ::close(map_.fd);
  dump_.fd = map_.fd = -1;
}

WriterStats Writer::stats() const {
  WriterStats s;
  s.records = records_;
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.dump_bytes = dump_.good;
  return s;
}

}  // namespace mlpd::hooks::perf
