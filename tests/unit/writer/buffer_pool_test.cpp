#include "mlpd_catch.h"

#include <set>
#include <thread>
#include <vector>

#include "mlpd/rt/buffer_pool.h"

using mlpd::rt::BufferPool;
using mlpd::rt::FlushQueue;
using mlpd::rt::LogBuffer;

TEST_CASE("buffers given back are taken again before new ones are made", "[buffer_pool]") {
  BufferPool pool(4096, 16);
  LogBuffer* a = pool.take();
  LogBuffer* b = pool.take();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a != b);
  pool.give(a);
  CHECK(pool.take() == a);
  pool.give(b);
  pool.give(a);
  std::set<LogBuffer*> again = {pool.take(), pool.take()};
  CHECK(again == std::set<LogBuffer*>{a, b});
  CHECK(pool.allocated() == 2);
}

TEST_CASE("the pool never makes more than its cap", "[buffer_pool]") {
  BufferPool pool(4096, 3);
  std::vector<LogBuffer*> got;
  for (int i = 0; i < 5; ++i) got.push_back(pool.take());
  CHECK(got[0]);
  CHECK(got[2]);
  CHECK(got[3] == nullptr);
  CHECK(got[4] == nullptr);
  CHECK(pool.allocated() == 3);
  pool.give(got[1]);
  CHECK(pool.take() == got[1]);
}

TEST_CASE("the reserve is only for take(true), and bounded too", "[buffer_pool]") {
  BufferPool pool(4096, 2, 2);
  LogBuffer* a = pool.take();
  LogBuffer* b = pool.take();
  CHECK(a);
  CHECK(b);
  CHECK(pool.take() == nullptr);  // the cap, for everyone else
  LogBuffer* c = pool.take(true);
  LogBuffer* d = pool.take(true);
  CHECK(c);
  CHECK(d);
  CHECK(pool.take(true) == nullptr);  // the reserve is bounded as well
  CHECK(pool.allocated() == 4);
  pool.give(c);
  CHECK(pool.take() == c);  // recycled like any other buffer
}

TEST_CASE("take and give from many threads hand out each buffer to one owner at a time", "[buffer_pool]") {
  BufferPool pool(1024, 64);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        LogBuffer* b = pool.take();
        if (!b) continue;
        // Owned: stamp it, check nobody else stamps it meanwhile.
        b->thread_id = static_cast<uint64_t>(t);
        for (int k = 0; k < 10; ++k)
          if (b->thread_id != static_cast<uint64_t>(t)) errors++;
        pool.give(b);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(pool.allocated() <= 64);
}

TEST_CASE("the flush queue is FIFO and survives concurrent producers", "[buffer_pool]") {
  BufferPool pool(256, 4096);
  FlushQueue q;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 500; ++i) {
        LogBuffer* b = pool.take();
        b->thread_id = static_cast<uint64_t>(t);
        b->time_base = i;
        q.push(b);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<uint64_t> next(4, 0);
  size_t n = 0;
  while (LogBuffer* b = q.pop()) {
    REQUIRE(b->time_base == next[b->thread_id]);  // per-producer order kept
    ++next[b->thread_id];
    ++n;
  }
  CHECK(n == 2000);
}

TEST_CASE("release_pages gives the data pages back and leaves the buffers usable", "[buffer_pool]") {
  mlpd::rt::BufferPool pool(64 * 1024, 4);
  mlpd::rt::LogBuffer* a = pool.take();
  mlpd::rt::LogBuffer* b = pool.take();
  REQUIRE(a);
  REQUIRE(b);
  for (uint32_t i = 0; i < a->capacity; ++i) a->data[i] = 0x5a;
  a->committed.store(100);
  pool.give(b);
  const size_t released = pool.release_pages();
  CHECK(released >= 2 * (64 * 1024 - 4096));
  // The header and the first page's data are kept; the rest reads as zero and can be written again.
  CHECK(a->committed.load() == 100);
  CHECK(a->capacity == 64 * 1024);
  CHECK(a->data[0] == 0x5a);
  CHECK(a->data[a->capacity - 1] == 0);
  a->data[a->capacity - 1] = 7;
  CHECK(a->data[a->capacity - 1] == 7);
  CHECK(pool.take() == b);  // the free list is as it was
}
