// mlpd_bomb: writes small gzip'ed mlpd files that are costly to read, for the reader's memory-budget
// tests (issue 12). Valid files, so only the budget can stop them:
//
//   mlpd_bomb jit COUNT OUT        COUNT method_jit events, each a new method (distinct ids at a
//                                  fixed stride, one name: compresses well; names and --strict's
//                                  reference sets grow)
//   mlpd_bomb heapshots COUNT OUT  COUNT empty heapshots (HEAP_START, HEAP_END)
//   mlpd_bomb repeat MIB OUT       one 16 KiB buffer of alloc events written again and again, MIB MiB
//                                  in all: a gzip bomb (deflate's ~1000:1), cheap in memory to read
//
// Prints the uncompressed size in bytes.
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mlpd/encoder.h"
#include "mlpd/event.h"

using namespace mlpd;

namespace {

gzFile g_out;
uint64_t g_bytes = 0;

void put(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return;
  if (gzwrite(g_out, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size())) {
    std::fprintf(stderr, "mlpd_bomb: write failed\n");
    std::exit(1);
  }
  g_bytes += bytes.size();
}

struct Writer {
  BufferEncoder enc{1, 1000};
  uint64_t time = 1000;
  std::vector<uint8_t> out;
  void add(Event& e) {
    e.time = ++time;
    enc.add(e);
    if (enc.data_size() >= 60000) flush();
  }
  void flush() {
    if (enc.empty()) return;
    out.clear();
    enc.finish_into(out);
    put(out);
    enc.reset(1, time);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: mlpd_bomb jit|heapshots|repeat COUNT OUT\n");
    return 2;
  }
  const std::string kind = argv[1];
  const uint64_t count = std::strtoull(argv[2], nullptr, 10);
  g_out = gzopen(argv[3], "wb9");
  if (!g_out) {
    std::fprintf(stderr, "mlpd_bomb: cannot create %s\n", argv[3]);
    return 1;
  }
  FileHeader h;
  h.startup_ms = 1700000000000;
  h.startup_ns = 1000;
  h.pid = 1;
  h.args = "bomb";
  h.arch = "x86-64";
  h.os = "linux";
  std::vector<uint8_t> bytes;
  encode_file_header(h, bytes);
  put(bytes);
  Writer w;
  Event e;
  if (kind == "jit") {
    e.kind = EventKind::method_jit;
    for (uint64_t i = 0; i < count; ++i) {
      e.method = 0x10000000 + i * 64;
      e.ptr = 0x70000000 + i * 256;
      e.size = 128;
      e.name = "Bomb.Generated:Method (int,string,object)";  // one name: the ids make them distinct
      w.add(e);
    }
  } else if (kind == "heapshots") {
    for (uint64_t i = 0; i < count; ++i) {
      e.kind = EventKind::heap_start;
      w.add(e);
      e.kind = EventKind::heap_end;
      w.add(e);
    }
  } else if (kind == "repeat") {
    // One buffer, described once: the class and vtable, then allocations; written again and again.
    Writer one;
    e.kind = EventKind::alloc;
    e.ptr = 0x5000;
    e.size = 32;
    while (one.enc.data_size() < 16 * 1024) {  // within deflate's 32 KiB window
      e.obj = 0x7f0000000000 + one.enc.data_size() * 16;
      e.time = ++one.time;
      one.enc.add(e);
    }
    one.enc.finish_into(bytes = {});
    for (uint64_t total = 0; total < count << 20; total += bytes.size()) put(bytes);
  } else {
    std::fprintf(stderr, "mlpd_bomb: unknown kind '%s'\n", kind.c_str());
    return 2;
  }
  w.flush();
  if (gzclose(g_out) != Z_OK) {
    std::fprintf(stderr, "mlpd_bomb: close failed\n");
    return 1;
  }
  std::printf("%llu\n", static_cast<unsigned long long>(g_bytes));
  return 0;
}
