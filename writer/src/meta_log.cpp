#include "mlpd/rt/meta_log.h"

namespace mlpd::rt {

uint64_t MetaLog::take(std::vector<uint8_t>& out, uint64_t now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (encoder_.empty() && pending_.empty()) return 0;
  out.insert(out.end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (!encoder_.empty()) {
    encoder_.finish_into(out);
    encoder_.reset(thread_id_, now);
  }
  const uint64_t n = events_;
  events_ = 0;
  return n;
}

}  // namespace mlpd::rt
