#include "push_sender.h"

#if MLPD_PUSH_CURL
#include "mlpd/curl_api.h"
#endif
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <type_traits>

#include <dlfcn.h>

namespace mlpd::agent {

#if MLPD_PUSH_CURL
namespace {

// libcurl, loaded when push= is given (mlpd/curl_api.h): a program profiled without push= does not
// get libcurl and its TLS library mapped into it. Its functions, resolved once.
curl_api::Curl g_curl;

bool load_curl(std::string& error) {
  static bool loaded = false;
  if (loaded) return true;
  if (!curl_api::load(g_curl, error)) return false;
  loaded = true;
  return true;
}

}  // namespace
#endif

bool PushSender::start(std::string& error) {
  // libcurl is loaded and initialised on our thread (run()), not on the thread that starts the agent
  // (an ELF constructor, the runtime's start): nothing of it runs on a thread of the program.
  // The thread must never receive the host's signals: block them all while creating it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&thread_, nullptr, &PushSender::entry, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    error = "cannot start its thread";
    return false;
  }
  started_ = true;
  return true;
}

// On our thread: libcurl loaded (dlopen) and initialised (thread-safe since libcurl 7.84; Debian 12
// has 7.88; never cleaned up: the process may use libcurl or its TLS library itself, and the exit
// tears everything down anyway).
bool PushSender::init_curl() {
#if MLPD_PUSH_CURL
  std::string error;
  if (load_curl(error) && g_curl.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
    if (CURLM* m = g_curl.multi_init()) {
      std::lock_guard<std::mutex> lock(mu_);
      multi_ = m;
      return true;
    }
  }
  say("mlpd: push: " + (error.empty() ? std::string("libcurl could not be initialised") : error) +
      "; profiling goes on without pushing");
  return false;
#else
  say("mlpd: push: this agent was built without libcurl's headers (libcurl4-openssl-dev); profiling goes on "
      "without pushing");
  return false;
#endif
}

void* PushSender::entry(void* self) {
  pthread_setname_np(pthread_self(), "mlpd-push");
  static_cast<PushSender*>(self)->run();
  return nullptr;
}

void PushSender::send(std::string query, std::string body, uint64_t samples) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || forgotten_ || !started_ || broken_) return;
  if (queue_.size() >= kMaxQueue || body.size() > kMaxBody) {
    ++stats_.dropped_queue;
    if (!failing_ && verbose_) {
      failing_ = true;
      say("mlpd: push: the server takes the profiles slower than they come: " +
          std::to_string(queue_.size()) + " waiting, dropping the newest (counted in mlpd_push_dropped_total)");
    }
    return;
  }
  queue_.push_back(Item{std::move(query), std::move(body), samples});
  stats_.queued = queue_.size();
  cv_.notify_one();
}

void PushSender::run() {
  if (!init_curl()) {
    std::lock_guard<std::mutex> lock(mu_);
    broken_ = true;
    stats_.dropped_queue += queue_.size();
    queue_.clear();
    stats_.queued = 0;
    done_.store(true, std::memory_order_release);
    return;
  }
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() || abort_.load()) break;  // stopping, nothing left (or no time left)
      item = std::move(queue_.front());
      queue_.pop_front();
      stats_.queued = queue_.size();
    }
    std::string why;
    long status = 0;
    const bool ok = post(item, why, status);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.last_status = status;
    if (ok) {
      ++stats_.sent;
      stats_.bytes_sent += item.body.size();
      stats_.samples_sent += item.samples;
      if (failing_ && verbose_) say("mlpd: push: the server takes the profiles again");
      failing_ = false;
    } else if (abort_.load()) {
      ++stats_.dropped_exit;
    } else {
      ++stats_.failed;
      if (!failing_ && verbose_)
        say("mlpd: push: " + url_ + ": " + why + "; that interval's profile is dropped (no retries; counted in "
            "mlpd_push_failed_total), the program is not affected");
      failing_ = true;
    }
  }
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.thread_cpu_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
  }
  done_.store(true, std::memory_order_release);
}

#if MLPD_PUSH_CURL
namespace {
size_t keep_start(char* data, size_t size, size_t n, void* to) {
  auto* s = static_cast<std::string*>(to);
  if (s->size() < 200) s->append(data, std::min(size * n, 200 - s->size()));
  return size * n;
}
}  // namespace

#endif

bool PushSender::post(const Item& item, std::string& why, long& status) {
#if MLPD_PUSH_CURL
  CURL* c = g_curl.easy_init();
  if (!c) {
    why = "libcurl could not start a request";
    return false;
  }
  const std::string url = url_ + "?" + item.query;
  g_curl.easy_setopt(c, CURLOPT_URL, url.c_str());
  g_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  g_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
  g_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  g_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  g_curl.easy_setopt(c, CURLOPT_USERAGENT, "mlpd-agent");
  curl_mime* mime = g_curl.mime_init(c);
  curl_mimepart* part = g_curl.mime_addpart(mime);
  g_curl.mime_name(part, "profile");
  g_curl.mime_filename(part, "profile.pprof");
  g_curl.mime_type(part, "application/octet-stream");
  g_curl.mime_data(part, item.body.data(), item.body.size());
  part = g_curl.mime_addpart(mime);
  g_curl.mime_name(part, "sample_type_config");
  g_curl.mime_filename(part, "sample_type_config.json");
  g_curl.mime_type(part, "application/json");
  // Our profiles are deltas (each covers its interval): not cumulative.
  g_curl.mime_data(part,
                   "{\"samples\":{\"units\":\"samples\",\"display-name\":\"cpu\",\"sampled\":true},"
                   "\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"}}",
                   CURL_ZERO_TERMINATED);
  g_curl.easy_setopt(c, CURLOPT_MIMEPOST, mime);
  curl_slist* headers = g_curl.slist_append(nullptr, "Expect:");
  if (!token_.empty()) headers = g_curl.slist_append(headers, ("Authorization: Bearer " + token_).c_str());
  g_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  std::string answer;
  g_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_start);
  g_curl.easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  char errbuf[CURL_ERROR_SIZE] = {};
  g_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  // Through the multi handle, so that finish() can wake the wait and abort the request at once.
  auto* multi = static_cast<CURLM*>(multi_);
  g_curl.multi_add_handle(multi, c);
  CURLcode result = CURLE_OK;
  bool finished = false;
  while (!finished) {
    int running = 0;
    if (g_curl.multi_perform(multi, &running) != CURLM_OK) {
      result = CURLE_FAILED_INIT;
      break;
    }
    int left = 0;
    while (CURLMsg* m = g_curl.multi_info_read(multi, &left)) {
      if (m->msg == CURLMSG_DONE) {
        result = m->data.result;
        finished = true;
      }
    }
    if (finished) break;
    if (abort_.load(std::memory_order_acquire)) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    g_curl.multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  g_curl.multi_remove_handle(multi, c);
  bool ok = false;
  if (result == CURLE_OK) {
    g_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ok = status >= 200 && status < 300;
    if (!ok) {
      for (char& ch : answer)
        if (ch == '\n' || ch == '\r' || static_cast<unsigned char>(ch) < ' ') ch = ' ';
      while (!answer.empty() && answer.back() == ' ') answer.pop_back();
      why = "the server answered " + std::to_string(status) + (answer.empty() ? "" : ": " + answer);
    }
  } else {
    why = errbuf[0] ? errbuf : g_curl.easy_strerror(result);
  }
  g_curl.slist_free_all(headers);
  g_curl.mime_free(mime);
  g_curl.easy_cleanup(c);
  return ok;
#else
  (void)item;
  status = 0;
  why = "built without libcurl";
  return false;
#endif
}

bool PushSender::finish() {
  if (!started_ || forgotten_) return true;
  bool give_time = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    give_time = !failing_;  // the last request failed: the server gets no more of the exit's time
  }
  cv_.notify_all();
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::milliseconds(give_time ? kFinishMs : 0);
  const timespec ms{0, 2000000};
  while (!done_.load(std::memory_order_acquire) && Clock::now() < until) nanosleep(&ms, nullptr);
  if (!done_.load(std::memory_order_acquire)) {
    abort_.store(true, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
#if MLPD_PUSH_CURL
      if (multi_) g_curl.multi_wakeup(static_cast<CURLM*>(multi_));  // set once init_curl() returned
#endif
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.dropped_exit += queue_.size();
      queue_.clear();
      stats_.queued = 0;
    }
    cv_.notify_all();
    const auto more = Clock::now() + std::chrono::milliseconds(200);
    while (!done_.load(std::memory_order_acquire) && Clock::now() < more) nanosleep(&ms, nullptr);
  }
  const bool joined = done_.load(std::memory_order_acquire);
  if (joined) {
    pthread_join(thread_, nullptr);
  } else {
    pthread_detach(thread_);  // stuck (a DNS lookup, say): left behind, never waited for
  }
  started_ = false;
  if (verbose_) {
    const PushStats s = stats();
    say("mlpd: push: " + std::to_string(s.sent) + " profiles sent (" + std::to_string(s.samples_sent) + " samples, " +
        std::to_string(s.bytes_sent) + " bytes), " + std::to_string(s.failed) + " failed, " +
        std::to_string(s.dropped_queue) + " dropped (queue full), " + std::to_string(s.dropped_exit) +
        " dropped at exit" + (joined ? "; the sending thread used " + std::to_string(s.thread_cpu_ns / 1000) + " us of CPU" : std::string()));
  }
  return joined;
}

PushStats PushSender::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PushSender::say(const std::string& line) {
  const std::string l = line + "\n";
  (void)!::write(STDERR_FILENO, l.data(), l.size());
}

}  // namespace mlpd::agent
