#include "mlpd/agent/counter_sampler.h"

#include "mlpd/format.h"
#include "mlpd/rt/clock.h"

namespace mlpd::agent {

bool CounterSampler::add(const Source& s) {
  if (!s.read || set_.add(s.desc) == 0) return false;
  sources_.push_back(s);
  return true;
}

bool CounterSampler::read_profiler(const void* ctx, uint64_t, uint64_t& bits) {
  const auto* p = static_cast<const Profiler*>(ctx);
  bits = p->read(p->ctx, p->arg);
  return true;
}

void CounterSampler::add_profiler(std::string name, uint64_t type, uint64_t unit, uint64_t variance,
                                  uint64_t (*read)(const void*, uint64_t), const void* ctx, uint64_t arg) {
  const Profiler* p = &profiler_.emplace_back(Profiler{read, ctx, arg});
  Source s;
  s.desc.section = format::COUNTER_SECTION_PROFILER;
  s.desc.name = std::move(name);
  s.desc.type = type;
  s.desc.unit = unit;
  s.desc.variance = variance;
  s.read = &CounterSampler::read_profiler;
  s.ctx = p;
  add(s);
}

size_t CounterSampler::sample() {
  if (discover_) discover_(*this, discover_ctx_);
  if (set_.describe(event_)) meta_.add(event_, rt::now_ns);

  // The totals include the descriptor event just added and the sample event about to be added.
  for (uint64_t& t : totals_) t = 0;
  registry_.add_counts_to(totals_);
  meta_.add_counts_to(totals_);
  ++totals_[static_cast<size_t>(EventKind::counter_samples)];

  raw_.resize(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& s = sources_[i];
    raw_[i].valid = s.read(s.ctx, s.arg, raw_[i].bits);
  }
  const size_t n = set_.sample(raw_, event_);
  meta_.add(event_, rt::now_ns);
  ++samples_;
  return n;
}

}  // namespace mlpd::agent
