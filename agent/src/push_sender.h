// push= (docs/fleet.md): the thread that sends the pushed profiles. The helper thread hands it each
// interval's profile (send(): a bounded queue, never waiting on the network: a full queue drops the
// newest and counts it); this thread POSTs them, one at a time, with libcurl (HTTP or HTTPS), to a
// Pyroscope-compatible server's ingest API. A failed request is dropped, not retried (retries pile
// up behind a server that is down): counted, with one `verbose` line when failures start and one
// when pushes work again. Requests time out after kRequestTimeoutMs; finish() (the program's exit)
// gives what is queued kFinishMs and then aborts what is in flight: the exit is never held longer.
// The thread blocks every signal (the host's handlers never run on it; a SIGPIPE of a socket write
// stays pending on it) and libcurl is told never to use signals (CURLOPT_NOSIGNAL).
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace mlpd::agent {

struct PushStats {
  uint64_t sent = 0;            // profiles the server took (2xx)
  uint64_t failed = 0;          // requests that failed (no connection, timeout, an answer not 2xx)
  uint64_t dropped_queue = 0;   // profiles dropped: the queue was full (the server too slow)
  uint64_t dropped_exit = 0;    // profiles still queued or in flight when the exit's time was up
  uint64_t bytes_sent = 0;      // gzipped pprof bytes the server took
  uint64_t samples_sent = 0;    // CPU samples in the profiles the server took
  uint64_t queued = 0;          // profiles waiting now
  long last_status = 0;         // the last answer's HTTP status (0: none, or no connection)
  uint64_t thread_cpu_ns = 0;   // CPU time of the sending thread (libcurl, TLS), when it has ended
};

// What the helper spent on push= (its own thread's part: decoding the round's bytes, encoding).
struct PushHelperStats {
  uint64_t profiles = 0;       // intervals encoded and handed to the sender
  uint64_t empty = 0;          // intervals without samples (nothing sent)
  uint64_t samples = 0;        // samples in them
  uint64_t absorb_ns = 0;      // decoding the written bytes
  uint64_t encode_ns = 0;      // building and gzipping the pprof
  uint64_t bytes = 0;          // gzipped pprof bytes handed over
};

class PushSender {
 public:
  static constexpr size_t kMaxQueue = 8;              // profiles waiting at most (4 intervals of CPU and allocations)
  static constexpr long kRequestTimeoutMs = 10000;    // a whole request
  static constexpr long kConnectTimeoutMs = 5000;
  static constexpr int kFinishMs = 1000;               // the exit's wait for the last pushes
  static constexpr size_t kMaxBody = 16u << 20;         // a profile larger than this is not sent

  PushSender(std::string ingest_url, std::string token, bool verbose)
      : url_(std::move(ingest_url)), token_(std::move(token)), verbose_(verbose) {}
  // Starts the thread, which loads libcurl (a failure is one line from it, and nothing is sent);
  // false (with `error`) when the thread cannot be created.
  bool start(std::string& error);
  // Queues one profile (never blocks on the network: takes a mutex the sender holds only to pop).
  // `query`: name=...&from=...&until=...&format=pprof...
  void send(std::string query, std::string body, uint64_t samples);
  // The program's exit: what is queued gets kFinishMs (none when the last request failed: a server
  // that is down or refusing gets no more time), then what is in flight is aborted; returns within
  // about kFinishMs + 200 ms whatever the server does. False when the thread is stuck and was
  // left behind (then this object must never be freed).
  bool finish();
  // The child of a fork: this thread is not there; nothing is sent, nothing joined.
  void forget_after_fork() { forgotten_ = true; }
  PushStats stats() const;

 private:
  struct Item {
    std::string query, body;
    uint64_t samples;
  };
  static void* entry(void* self);
  void run();
  bool init_curl();
  bool post(const Item& item, std::string& why, long& status);
  void say(const std::string& line);

  const std::string url_, token_;
  const bool verbose_;
  pthread_t thread_{};
  bool started_ = false;
  bool forgotten_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;         // finish(): send what is queued, then end
  std::atomic<bool> abort_{false};  // finish()'s time is up: abort the request in flight
  std::atomic<bool> done_{false};   // the thread has ended
  void* multi_ = nullptr;          // CURLM*, woken by finish() (set by the thread before its first pop)
  bool broken_ = false;            // libcurl could not be loaded: nothing is queued (under mu_)
  bool failing_ = false;           // the verbose line was said for this run of failures
  PushStats stats_;                // under mu_
};

}  // namespace mlpd::agent
