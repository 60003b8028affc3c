// The profile model's one pass (profile/builder.h): the file header and the agent's options, buffers,
// the time window, finish() and the entry points build_profile() and IncrementalBuilder.
#include "builder.h"

#include <algorithm>
#include <ctime>
#include <memory>

#include "mlpd/budget.h"
#include "mlpd/decode_loop.h"
#include "mlpd/option_syntax.h"

namespace mlpd::profile {

void Builder::on_header(const FileHeader& h) {
  if (p_.header_ok_) return;  // a later file of the same run: the first file's header stands
  p_.header_ = h;
  p_.header_ok_ = true;
  agent_options(h.args);
}

// The mlpd agent's options that change what the events mean (issue 15): alloc-sample=BYTES and
// start-paused. Only in files whose args say they come from the agent ("mlpd" or "mlpd:..."), read
// with the agent's own option syntax (mlpd/option_syntax.h: quotes, escapes, alloc-sample's sizes).
void Builder::agent_options(std::string_view args) {
  std::string_view text;
  if (!option_syntax::agent_args(args, text)) return;
  ours_ = true;
  // A string the agent refused never reaches a file; the items read before any syntax error stand.
  (void)option_syntax::split_items(text, [this](const option_syntax::Item& it, bool) {
    if (it.name == "start-paused" && !it.has_value) start_paused_ = true;
    uint64_t bytes = 0;
    if (it.name == "alloc-sample" && it.has_value &&
        option_syntax::parse_scaled_bytes(it.value, uint64_t{1} << 40, bytes) == option_syntax::Num::Ok)
      p_.alloc_sample_interval_ = bytes;
    return true;
  });
}

void Builder::on_buffer(const BufferInfo& b) {
  if (names_only_) return;
  if (!window_resolved_) resolve_window(b.header.time_base);
  flush_buffer_times();
  cur_thread_ = thread_index(b.header.thread_id);
  p_.threads_[cur_thread_].wrote = true;
  if (o_.tap) o_.tap->on_buffer(b);
  if (o_.progress && (++buffers_ & 15) == 0) o_.progress(b.offset, events_);
}

// Folds the time range of the enter/leave events of the current buffer into its thread's and the
// file's first/last times.
void Builder::flush_buffer_times() {
  if (buf_min_ == UINT64_MAX) return;
  if (buf_min_ > buf_max_) std::swap(buf_min_, buf_max_);  // a time that wrapped around (hostile input)
  if (buf_min_ != 0) touch(cur_thread_, buf_min_);
  touch(cur_thread_, buf_max_);
  if (buf_min_ && (p_.first_time_ == 0 || buf_min_ < p_.first_time_)) p_.first_time_ = buf_min_;
  if (buf_max_ > p_.last_time_) p_.last_time_ = buf_max_;
  buf_min_ = UINT64_MAX;
  buf_max_ = 0;
}

// IncrementalBuilder: finish() into `out`, keeping what finish() changes (the profile, the open
// calls, the pause marks, the current buffer's times) as it was, for the bytes that come next.
void Builder::snapshot_into(Profile& out, const DecodeSummary& summary, const Input& input) {
  Profile kept = p_;
  std::vector<ThreadState> states = states_;
  std::vector<uint64_t> marks = pause_marks_;
  const uint64_t min = buf_min_, max = buf_max_;
  finish(summary, input);
  out = std::move(p_);
  p_ = std::move(kept);
  states_ = std::move(states);
  pause_marks_ = std::move(marks);
  buf_min_ = min;
  buf_max_ = max;
}

void Builder::rebase_problems(size_t from, uint64_t first_buffer) {
  for (size_t i = from; i < p_.problems_.size(); ++i)
    if (p_.problems_[i].buffer >= 0) p_.problems_[i].buffer += static_cast<int64_t>(first_buffer);
}

// --from/--to: the window in the file's clock, from the first buffer's time base and the header.
uint64_t Builder::resolve_bound(const WindowBound& b, uint64_t base, uint64_t open) const {
  if (b.kind == WindowBound::Kind::offset)
    return b.ns < 0 && static_cast<uint64_t>(-b.ns) > base ? 0 : base + static_cast<uint64_t>(b.ns);
  if (b.kind != WindowBound::Kind::wall) return open;
  // The header's start as a local time of day, then the bound's distance from it.
  const time_t start_s = static_cast<time_t>(p_.header_.startup_ms / 1000);
  struct tm tm{};
  localtime_r(&start_s, &tm);
  const int64_t start_tod = (int64_t{tm.tm_hour} * 3600 + tm.tm_min * 60 + tm.tm_sec) * 1000000000LL +
                            static_cast<int64_t>(p_.header_.startup_ms % 1000) * 1000000LL;
  int64_t d = b.ns - start_tod;
  if (d < -12LL * 3600 * 1000000000LL) d += 24LL * 3600 * 1000000000LL;  // past midnight
  const uint64_t at = p_.header_.startup_ns ? p_.header_.startup_ns : base;
  return d < 0 && static_cast<uint64_t>(-d) > at ? 0 : at + static_cast<uint64_t>(d);
}

void Builder::resolve_window(uint64_t base) {
  window_resolved_ = true;
  windowed_ = o_.from.kind != WindowBound::Kind::none || o_.to.kind != WindowBound::Kind::none;
  win_from_ = resolve_bound(o_.from, base, 0);
  win_to_ = resolve_bound(o_.to, base, UINT64_MAX);
  p_.window_from_ = win_from_;
  p_.window_to_ = win_to_;
}

void Builder::finish(const DecodeSummary& summary, const Input& input) {
  flush_buffer_times();
  publish_tallies();
  p_.summary_ = summary;
  if (!input.error().empty() && p_.problem_count_ == 0) {
    p_.problems_.push_back({input.offset(), -1, input.error()});
    p_.problem_count_ = 1;
  }
  record_intervals();
  close_open_calls();
  call_weights();
  // Names, now that every description in the file has been seen.
  name_everything();
  types_by_name();
  method_numbers();
  if (o_.progress) o_.progress(p_.summary_.bytes, events_);
}

// The reader's memory budget (mlpd/budget.h; `mlpd --max-memory=SIZE`) bounds a report or export as it
// bounds verify and dump: past it, reading ends with one problem naming the limit and the offset.
static DecodeOptions budgeted() {
  DecodeOptions o;
  o.budget = &process_budget();
  return o;
}

bool build_profile_parallel(const std::vector<Input*>& inputs, Profile& out, const BuildOptions& options);

bool build_profile(Input& input, Profile& out, const BuildOptions& options) {
  if (options.jobs > 1 && !options.listener && options.reopen) return build_profile({&input}, out, options);
  out = Profile();
  Builder b(out, options);
  b.finish(decode_as(input, b, budgeted()), input);
  return out.problem_count() == 0;
}

bool build_profile(const std::vector<Input*>& inputs, Profile& out, const BuildOptions& options) {
  out = Profile();
  if (inputs.empty()) return true;
  std::vector<std::unique_ptr<Input>> again;  // the one-thread build after a parallel one gave up
  std::vector<Input*> read = inputs;
  if (options.jobs > 1 && !options.listener && options.reopen) {
    if (build_profile_parallel(inputs, out, options)) return out.problem_count() == 0;
    if (options.tap) options.tap->restart();
    for (size_t i = 0; i < inputs.size(); ++i) {
      again.push_back(options.reopen(i));
      if (!again.back()) {
        out = Profile();
        Builder b(out, options);
        b.on_problem({0, -1, "cannot open the input again for the one-thread build"});
        b.finish(DecodeSummary{}, *inputs[i]);
        return false;
      }
      read[i] = again.back().get();
    }
    out = Profile();
  }
  Builder b(out, options);
  DecodeSummary all;
  for (Input* in : read) {
    const DecodeSummary s = decode_as(*in, b, budgeted());
    all.header_ok = all.header_ok || s.header_ok;
    all.buffers += s.buffers;
    all.events += s.events;
    all.bytes += s.bytes;
    all.problems += s.problems;
    if (in != read.back() && !in->error().empty()) b.on_problem({in->offset(), -1, in->error()});
  }
  b.finish(all, *read.back());
  return out.problem_count() == 0;
}

IncrementalBuilder::IncrementalBuilder(const BuildOptions& options)
    : options_(options), builder_(std::make_unique<Builder>(live_, options_)), no_input_(Input::from_memory("", 0)) {}

IncrementalBuilder::~IncrementalBuilder() = default;

void IncrementalBuilder::feed(Input& part, uint64_t first_buffer, bool names_only) {
  const size_t kept = builder_->problems_kept();
  builder_->set_names_only(names_only);
  const DecodeSummary s = decode(part, *builder_, budgeted());
  builder_->set_names_only(false);
  builder_->rebase_problems(kept, first_buffer);
  all_.header_ok = all_.header_ok || s.header_ok;
  all_.buffers += s.buffers;
  all_.events += s.events;
  all_.bytes = std::max(all_.bytes, s.bytes);
  all_.problems += s.problems;
  all_.truncated = all_.truncated || s.truncated;
}

bool feed_parallel(Builder& b, Input& in, unsigned jobs, DecodeSummary& s);

bool IncrementalBuilder::feed_whole(Input& in, unsigned jobs) {
  if (jobs < 2 || all_.buffers != 0 || all_.header_ok || options_.listener) return false;  // a first feed only
  DecodeSummary s;
  if (!feed_parallel(*builder_, in, jobs, s)) {  // a fresh model for the one-thread build
    builder_.reset();
    live_ = Profile();
    builder_ = std::make_unique<Builder>(live_, options_);
    return false;
  }
  all_ = s;
  return true;
}

void IncrementalBuilder::snapshot(Profile& out) { builder_->snapshot_into(out, all_, *no_input_); }

uint64_t IncrementalBuilder::problem_count() const { return live_.problem_count(); }


}  // namespace mlpd::profile
