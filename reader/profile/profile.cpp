#include "mlpd/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <unordered_map>

#include "mlpd/budget.h"
#include "mlpd/option_syntax.h"
#include "mlpd/decode_loop.h"
#include "mlpd/format.h"
#include "mlpd/names.h"

namespace mlpd::profile {

namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string hex_name(const char* what, uint64_t v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%s 0x%llx]", what, static_cast<unsigned long long>(v));
  return buf;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "symbol (module+0xOFF)" or "?? (module+0xOFF)": the module part, else "".
std::string module_of(std::string_view name) {
  if (name.empty() || name.back() != ')') return {};
  const size_t open = name.rfind(" (");
  if (open == std::string_view::npos) return {};
  const std::string_view inner = name.substr(open + 2, name.size() - open - 3);
  const size_t plus = inner.rfind("+0x");
  return plus == std::string_view::npos ? std::string() : std::string(inner.substr(0, plus));
}

bool runtime_native(std::string_view name, std::string_view module) {
  return starts_with(name, "mono_") || starts_with(name, "sgen_") || starts_with(name, "mini_") ||
         starts_with(name, "ves_") || module.find("libmono") != std::string_view::npos ||
         starts_with(module, "mono") || module.find("/mono") != std::string_view::npos;
}

// Open-addressing map (parent node, frame) -> child node; keys are never 0 (the root's children,
// the thread nodes, are not kept here).
class ChildTable {
 public:
  ChildTable() { slots_.resize(1u << 12); }
  NodeId find(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == 0) return 0;
    }
  }
  void insert(uint64_t key, NodeId value) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow();
    put(key, value);
    ++used_;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    NodeId value = 0;
  };
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void put(uint64_t key, NodeId value) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash(key) & mask;
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = {key, value};
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.key) put(s.key, s.value);
  }
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

constexpr size_t kRecentAllocs = 16;     // per thread: objects allocated last (to type exceptions)
constexpr size_t kMaxUnwindSearch = 64;  // how deep a leave looks for its enter

}  // namespace

std::string_view what_name(What w) {
  static constexpr std::string_view k[] = {"cpu", "alloc", "alloc-bytes", "calls", "exceptions", "monitor"};
  return k[static_cast<size_t>(w)];
}

bool parse_what(std::string_view s, What& out) {
  for (size_t i = 0; i < kWhatCount; ++i) {
    if (what_name(static_cast<What>(i)) == s) {
      out = static_cast<What>(i);
      return true;
    }
  }
  return false;
}

std::string_view what_option(What w) {
  static constexpr std::string_view k[] = {"sample", "alloc", "alloc", "calls", "exception", "monitor"};
  return k[static_cast<size_t>(w)];
}

std::string_view what_unit(What w) {
  static constexpr std::string_view k[] = {"samples", "objects", "bytes", "nanoseconds", "throws", "contentions"};
  return k[static_cast<size_t>(w)];
}

std::string_view frame_kind_name(FrameKind k) {
  static constexpr std::string_view n[] = {"managed", "native", "runtime", "special"};
  return n[static_cast<size_t>(k)];
}

std::string thread_label(const ThreadInfo& t) {
  char id[32];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(t.id));
  if (t.name.empty()) return std::string("thread ") + id;
  return t.name + " (" + id + ")";
}

Profile::Profile() = default;
Profile::~Profile() = default;
Profile::Profile(Profile&&) noexcept = default;
Profile& Profile::operator=(Profile&&) noexcept = default;
Profile::Profile(const Profile&) = default;
Profile& Profile::operator=(const Profile&) = default;

void Profile::stack(NodeId node, std::vector<FrameId>& root_first) const {
  root_first.clear();
  while (node != 0 && node < nodes_.size() && nodes_[node].frame != kNoFrame) {
    root_first.push_back(nodes_[node].frame);
    node = nodes_[node].parent;
  }
  std::reverse(root_first.begin(), root_first.end());
}

class Builder final : public Visitor {
 public:
  Builder(Profile& p, const BuildOptions& o) : p_(p), o_(o) {
    p_.nodes_.push_back(Node{});  // the root
    p_.call_stats_.resize(p_.nodes_.size());  // one per node, made with it (call_stat() needs no check)
    p_.gc_collections_.assign(4, 0);
  }

  void on_header(const FileHeader& h) override {
    if (p_.header_ok_) return;  // a later file of the same run: the first file's header stands
    p_.header_ = h;
    p_.header_ok_ = true;
    agent_options(h.args);
  }

  // The mlpd agent's options that change what the events mean (issue 15): alloc-sample=BYTES and
  // start-paused. Only in files whose args say they come from the agent ("mlpd" or "mlpd:..."), read
  // with the agent's own option syntax (mlpd/option_syntax.h: quotes, escapes, alloc-sample's sizes).
  void agent_options(std::string_view args) {
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

  void on_buffer(const BufferInfo& b) override {
    if (names_only_) return;
    if (!window_resolved_) resolve_window(b.header.time_base);
    flush_buffer_times();
    cur_thread_ = thread_index(b.header.thread_id);
    if (o_.progress && (++buffers_ & 15) == 0) o_.progress(b.offset, events_);
  }

  void on_buffer_end(const BufferInfo&) override { flush_buffer_times(); }

  // Folds the time range of the enter/leave events of the current buffer into its thread's and the
  // file's first/last times.
  void flush_buffer_times() {
    if (buf_min_ == UINT64_MAX) return;
    if (buf_min_ > buf_max_) std::swap(buf_min_, buf_max_);  // a time that wrapped around (hostile input)
    if (buf_min_ != 0) touch(cur_thread_, buf_min_);
    touch(cur_thread_, buf_max_);
    if (buf_min_ && (p_.first_time_ == 0 || buf_min_ < p_.first_time_)) p_.first_time_ = buf_min_;
    if (buf_max_ > p_.last_time_) p_.last_time_ = buf_max_;
    buf_min_ = UINT64_MAX;
    buf_max_ = 0;
  }

  void on_problem(const Problem& pr) override {
    ++p_.problem_count_;
    if (p_.problems_.size() < o_.max_problems) p_.problems_.push_back(pr);
  }

  void on_event(const Event& e, const EventInfo& info) override;
  // Every event but enter/leave: out of line, so that on_event's hot path has a short prologue.
  [[gnu::noinline]] void other_event(const Event& e, ThreadIndex t);
  void finish(const DecodeSummary& summary, const Input& input);

  // IncrementalBuilder: finish() into `out`, keeping what finish() changes (the profile, the open
  // calls, the pause marks, the current buffer's times) as it was, for the bytes that come next.
  void snapshot_into(Profile& out, const DecodeSummary& summary, const Input& input) {
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
  // IncrementalBuilder: while set, events only describe things (Names); nothing is counted.
  void set_names_only(bool on) { names_only_ = on; }
  // IncrementalBuilder: problems from problem `from` on name buffers counted from `first_buffer`.
  size_t problems_kept() const { return p_.problems_.size(); }
  void rebase_problems(size_t from, uint64_t first_buffer) {
    for (size_t i = from; i < p_.problems_.size(); ++i)
      if (p_.problems_[i].buffer >= 0) p_.problems_[i].buffer += static_cast<int64_t>(first_buffer);
  }

 private:
  // --from/--to: the window in the file's clock, from the first buffer's time base and the header.
  uint64_t resolve_bound(const WindowBound& b, uint64_t base, uint64_t open) const {
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
  void resolve_window(uint64_t base) {
    window_resolved_ = true;
    windowed_ = o_.from.kind != WindowBound::Kind::none || o_.to.kind != WindowBound::Kind::none;
    win_from_ = resolve_bound(o_.from, base, 0);
    win_to_ = resolve_bound(o_.to, base, UINT64_MAX);
    p_.window_from_ = win_from_;
    p_.window_to_ = win_to_;
  }
  bool in_window(uint64_t t) const { return !windowed_ || (t >= win_from_ && t < win_to_); }

  static constexpr size_t kFrameCache = 1024;
  struct FrameCacheEntry {
    uint64_t method = 0;
    FrameId frame = kNoFrame;
  };
  struct CallEntry {
    NodeId node;
    FrameId frame;
    uint64_t method;
    uint64_t enter;
    uint64_t child_ns;
  };
  // A thread's open calls: a vector whose push is inline (std::vector's push_back was an out-of-line
  // call of ~25 instructions per enter); grows by doubling, up to max_depth entries.
  class CallStack {
   public:
    CallStack() = default;
    CallStack(CallStack&&) noexcept = default;
    CallStack& operator=(CallStack&&) noexcept = default;
    // Copies (IncrementalBuilder's snapshots keep a copy of the open calls) copy only what is used.
    CallStack(const CallStack& o) { *this = o; }
    CallStack& operator=(const CallStack& o) {
      if (this == &o) return *this;
      data_.reset(o.size_ ? new CallEntry[o.size_] : nullptr);
      std::copy(o.data_.get(), o.data_.get() + o.size_, data_.get());
      size_ = capacity_ = o.size_;
      return *this;
    }
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    CallEntry& back() { return data_[size_ - 1]; }
    CallEntry& operator[](size_t i) { return data_[i]; }
    void pop_back() { --size_; }
    [[gnu::always_inline]] void push_back(const CallEntry& c) {
      if (size_ == capacity_) [[unlikely]] grow();
      data_[size_++] = c;
    }

   private:
    [[gnu::noinline]] void grow() {
      const size_t cap = capacity_ ? 2 * capacity_ : 64;
      std::unique_ptr<CallEntry[]> d(new CallEntry[cap]);
      std::copy(data_.get(), data_.get() + size_, d.get());
      data_ = std::move(d);
      capacity_ = cap;
    }
    std::unique_ptr<CallEntry[]> data_;
    size_t size_ = 0, capacity_ = 0;
  };
  struct ThreadState {
    NodeId root = 0;
    NodeId overflow = 0;  // the "[too many stacks]" node, made on first need
    CallStack calls;
    uint64_t deep = 0;    // enters beyond max_depth still open
    uint64_t monitor_obj = 0, monitor_time = 0;
    bool monitor_waiting = false;
    int64_t heapshot = -1;  // open heapshot index
    uint64_t recent_obj[kRecentAllocs] = {};
    uint64_t recent_vtable[kRecentAllocs] = {};
    size_t recent_next = 0;
  };

  ThreadIndex thread_index(uint64_t id) {
    if (id == last_thread_id_ && have_last_thread_) return last_thread_;
    auto it = thread_ids_.find(id);
    ThreadIndex t;
    if (it != thread_ids_.end()) {
      t = it->second;
    } else {
      t = new_thread(id);
      thread_ids_.emplace(id, t);
    }
    last_thread_id_ = id;
    last_thread_ = t;
    have_last_thread_ = true;
    return t;
  }

  ThreadIndex new_thread(uint64_t id) {
    const ThreadIndex t = static_cast<ThreadIndex>(p_.threads_.size());
    p_.threads_.push_back(ThreadInfo{});
    p_.threads_.back().id = id;
    ThreadState s;
    s.root = static_cast<NodeId>(p_.nodes_.size());
    p_.nodes_.push_back(Node{0, kNoFrame, t, 0});
    p_.call_stats_.emplace_back();
    last_child_.push_back(0);
    states_.push_back(std::move(s));
    return t;
  }

  void touch(ThreadIndex t, uint64_t time) {
    ThreadInfo& ti = p_.threads_[t];
    if (ti.first_time == 0 || time < ti.first_time) ti.first_time = time;
    if (time > ti.last_time) ti.last_time = time;
  }

  // The child of `parent` for `frame`: the parent's last child when it matches (the usual case, inline),
  // else the table.
  [[gnu::always_inline]] NodeId child(NodeId parent, FrameId frame) {
    const NodeId cached = last_child_[parent];
    if (cached && p_.nodes_[cached].frame == frame) return cached;
    return child_slow(parent, frame);
  }

  [[gnu::noinline]] NodeId child_slow(NodeId parent, FrameId frame) {
    const uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
    NodeId n = table_.find(key);
    if (n == 0) {
      const ThreadIndex t = p_.nodes_[parent].thread;
      if (p_.nodes_.size() >= o_.max_nodes) {
        ThreadState& s = states_[t];
        if (s.overflow == 0) {
          s.overflow = static_cast<NodeId>(p_.nodes_.size());
          p_.nodes_.push_back(Node{s.root, special_frame("[too many stacks]"), t, 1});
          p_.call_stats_.emplace_back();
          last_child_.push_back(0);
        }
        return s.overflow;
      }
      n = static_cast<NodeId>(p_.nodes_.size());
      p_.nodes_.push_back(Node{parent, frame, t, p_.nodes_[parent].depth + 1});
      p_.call_stats_.emplace_back();
      last_child_.push_back(0);
      table_.insert(key, n);
    }
    last_child_[parent] = n;
    return n;
  }

  FrameId new_frame(FrameKind kind, uint64_t address, std::string name) {
    const FrameId f = static_cast<FrameId>(p_.frames_.size());
    p_.frames_.push_back(Frame{kind, address, std::move(name), {}});
    return f;
  }

  // Method -> frame, through a direct-mapped cache in front of the map (enter events look up the
  // same few methods again and again).
  [[gnu::always_inline]] FrameId managed_frame(uint64_t method) {
    FrameCacheEntry& c = frame_cache_[(method >> 4 ^ method >> 14) & (kFrameCache - 1)];
    if (c.method == method && c.frame != kNoFrame) return c.frame;
    return managed_frame_slow(method, c);
  }

  [[gnu::noinline]] FrameId managed_frame_slow(uint64_t method, FrameCacheEntry& c) {
    auto [it, inserted] = managed_.try_emplace(method, 0);
    if (inserted) it->second = new_frame(FrameKind::managed, method, {});
    c.method = method;
    c.frame = it->second;
    return it->second;
  }

  FrameId native_frame(const std::string& name, uint64_t address) {
    auto it = native_.find(std::string_view(name));
    if (it != native_.end()) return it->second;
    const FrameId f = new_frame(FrameKind::native, address, name);
    native_.emplace(name, f);
    return f;
  }

  FrameId deferred_frame(uint64_t ip) {
    auto [it, inserted] = deferred_.try_emplace(ip, 0);
    if (inserted) it->second = new_frame(FrameKind::native, ip, {});
    return it->second;
  }

  FrameId special_frame(std::string_view name) {
    auto it = special_.find(name);
    if (it != special_.end()) return it->second;
    const FrameId f = new_frame(FrameKind::special, 0, std::string(name));
    special_.emplace(std::string(name), f);
    return f;
  }

  void add(What w, NodeId n, uint64_t v) {
    auto& vec = p_.weights_[static_cast<size_t>(w)];
    if (n >= vec.size()) vec.resize(std::max<size_t>(p_.nodes_.size(), n + 1));
    vec[n] += v;
    p_.totals_[static_cast<size_t>(w)] += v;
  }

  // call_stats_ grows with nodes_ (every node is made with its CallStat), so no check here.
  CallStat& call_stat(NodeId n) { return p_.call_stats_[n]; }

  // The listener test inline at every call site; the event itself is built out of line.
  [[gnu::always_inline]] void emit(TimelineKind k, ThreadIndex t, uint64_t time, FrameId frame = kNoFrame,
                                   NodeId node = 0, uint8_t code = 0, uint64_t value = 0) {
    if (listener_) [[unlikely]] emit_to_listener(k, t, time, frame, node, code, value);
  }

  [[gnu::noinline]] void emit_to_listener(TimelineKind k, ThreadIndex t, uint64_t time, FrameId frame,
                                          NodeId node, uint8_t code, uint64_t value) {
    TimelineEvent ev;
    ev.kind = k;
    ev.thread = t;
    ev.time = time;
    ev.frame = frame;
    ev.node = node;
    ev.code = code;
    ev.value = value;
    o_.listener->on_event(ev);
  }

  // The stack of an alloc/throw/monitor event: its backtrace (outermost first), else the thread's
  // current call path (files with `calls` carry no backtraces), else "[no backtrace]".
  NodeId event_stack(const Event& e, ThreadIndex t) {
    ThreadState& s = states_[t];
    if (e.has_backtrace && !e.backtrace.empty()) {
      NodeId n = s.root;
      const size_t skip = e.backtrace.size() > o_.max_depth ? e.backtrace.size() - o_.max_depth : 0;
      for (size_t i = skip; i < e.backtrace.size(); ++i) n = child(n, managed_frame(e.backtrace[i]));
      return n;
    }
    if (!s.calls.empty()) return s.calls.back().node;
    return child(s.root, special_frame("[no backtrace]"));
  }

  [[gnu::always_inline]] void enter(const Event& e, ThreadIndex t) {
    if (!windowed_ || in_window(e.time)) ++p_.call_count_;
    p_.present_[static_cast<size_t>(What::calls)] = true;
    ThreadState& s = states_[t];
    if (s.calls.size() >= o_.max_depth) {
      ++s.deep;
      return;
    }
    const FrameId f = managed_frame(e.method);
    const NodeId parent = s.calls.empty() ? s.root : s.calls.back().node;
    const NodeId n = child(parent, f);
    s.calls.push_back(CallEntry{n, f, e.method, e.time, 0});
    emit(TimelineKind::enter, t, e.time, f, n);
  }

  [[gnu::always_inline]] void close_top(ThreadIndex t, uint64_t time, uint8_t code) {
    CallStack& calls = states_[t].calls;
    const CallEntry& c = calls.back();
    const uint64_t dur = time > c.enter ? time - c.enter : 0;
    const uint64_t self = dur > c.child_ns ? dur - c.child_ns : 0;
    const NodeId node = c.node;
    const FrameId frame = c.frame;
    calls.pop_back();
    if (!windowed_ || in_window(time)) [[likely]] {
      CallStat& cs = call_stat(node);
      ++cs.calls;
      cs.total_ns += dur;
      cs.self_ns += self;
    }
    // (the calls weights are the call stats' self times, copied at the end of the pass)
    if (!calls.empty()) calls.back().child_ns += dur;
    emit(TimelineKind::leave, t, time, frame, node, code);
  }

  [[gnu::always_inline]] void leave(const Event& e, ThreadIndex t, bool exc) {
    ThreadState& s = states_[t];
    if (s.deep > 0) {
      --s.deep;
      return;
    }
    if (s.calls.empty()) {
      ++p_.unmatched_leaves_;
      return;
    }
    if (s.calls.back().method == e.method) {  // the usual case
      close_top(t, e.time, exc ? 1 : 0);
      return;
    }
    size_t found = s.calls.size();
    for (size_t i = s.calls.size(); i > 0 && s.calls.size() - i < kMaxUnwindSearch; --i) {
      if (s.calls[i - 1].method == e.method) {
        found = i - 1;
        break;
      }
    }
    if (found == s.calls.size()) {
      ++p_.unmatched_leaves_;
      return;
    }
    while (s.calls.size() > found + 1) close_top(t, e.time, 2);
    close_top(t, e.time, exc ? 1 : 0);
  }

  void sample(const Event& e) {
    const ThreadIndex t = thread_index(e.ptr);
    touch(t, e.time);
    if (!in_window(e.time)) return;
    ++p_.sample_hits_;
    scratch_.clear();  // leaf first
    for (size_t i = 0; i < e.ips.size(); ++i) {
      const uint64_t ip = e.ips[i];
      const uint64_t m = names_.method_at(ip);
      if (m) {
        if (!e.frames.empty() && e.frames[0] == m) continue;  // the innermost managed frame itself
        scratch_.push_back(managed_frame(m));
      } else if (const std::string* sym = names_.symbol_at(ip)) {
        scratch_.push_back(native_frame(*sym, ip));
      } else {
        scratch_.push_back(deferred_frame(ip));
      }
    }
    for (const uint64_t m : e.frames) scratch_.push_back(managed_frame(m));
    if (scratch_.empty()) scratch_.push_back(special_frame("[no frames]"));
    NodeId n = states_[t].root;
    const size_t keep = std::min<size_t>(scratch_.size(), o_.max_depth);
    for (size_t i = keep; i > 0; --i) n = child(n, scratch_[i - 1]);
    add(What::cpu, n, 1);
    emit(TimelineKind::sample, t, e.time, kNoFrame, n);
  }

  void counter_samples(const Event& e, ThreadIndex t) {
    for (const CounterValue& v : e.counter_values) {
      auto [it, inserted] = counter_index_.try_emplace(v.index, 0);
      if (inserted) {
        it->second = static_cast<uint32_t>(p_.counters_.size());
        p_.counters_.push_back(CounterInfo{});
        p_.counters_.back().index = v.index;
      }
      CounterInfo& c = p_.counters_[it->second];
      ++c.samples;
      const CounterDesc* d = names_.counter(v.index);
      if (v.type == format::COUNTER_STRING) {
        c.is_string = true;
        c.last_string = v.is_null ? std::string() : v.str;
      } else if (v.type == format::COUNTER_DOUBLE) {
        double x;
        std::memcpy(&x, &v.bits, sizeof x);
        c.last = x;
      } else if (!d || d->section == format::COUNTER_SECTION_PERFCOUNTERS) {
        c.last = signed_type(v.type) ? static_cast<double>(static_cast<int64_t>(v.bits))
                                     : static_cast<double>(v.bits);
      } else {
        uint64_t& total = counter_totals_[v.index];
        total += v.bits;
        if (v.type == format::COUNTER_INT || v.type == format::COUNTER_UINT) total &= 0xFFFFFFFFu;
        if (v.type == format::COUNTER_INT)
          c.last = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(total)));
        else
          c.last = signed_type(v.type) ? static_cast<double>(static_cast<int64_t>(total))
                                       : static_cast<double>(total);
      }
      if (o_.listener) {
        TimelineEvent ev;
        ev.kind = TimelineKind::counter;
        ev.thread = t;
        ev.time = e.time;
        ev.counter = it->second;
        ev.number = c.last;
        o_.listener->on_event(ev);
      }
    }
  }

  static bool signed_type(uint64_t t) {
    return t == format::COUNTER_INT || t == format::COUNTER_WORD || t == format::COUNTER_LONG ||
           t == format::COUNTER_TIME_INTERVAL;
  }

  bool window_resolved_ = false, windowed_ = false;
  bool names_only_ = false;  // IncrementalBuilder::feed(..., names_only)
  uint64_t win_from_ = 0, win_to_ = UINT64_MAX;
  std::vector<FrameCacheEntry> frame_cache_ = std::vector<FrameCacheEntry>(kFrameCache);
  Profile& p_;
  const BuildOptions& o_;
  Names names_;
  ChildTable table_;
  std::vector<NodeId> last_child_{0};
  std::vector<ThreadState> states_;
  std::unordered_map<uint64_t, ThreadIndex> thread_ids_;
  uint64_t last_thread_id_ = 0;
  ThreadIndex last_thread_ = 0;
  bool have_last_thread_ = false;
  ThreadIndex cur_thread_ = 0;
  std::unordered_map<uint64_t, FrameId> managed_, deferred_;
  std::unordered_map<std::string, FrameId, StringHash, std::equal_to<>> native_, special_;
  std::vector<FrameId> scratch_;
  std::unordered_map<uint64_t, uint32_t> counter_index_;
  std::unordered_map<uint64_t, uint64_t> counter_totals_;
  std::unordered_map<uint64_t, TypeStat> alloc_by_vtable_;
  bool ours_ = false;          // the header says the mlpd agent wrote the file
  bool start_paused_ = false;  // its options had start-paused
  std::vector<uint64_t> pause_marks_;  // times of its periodic sync points: pauses and resumes, alternating
  std::unordered_map<uint64_t, uint64_t> throws_by_vtable_;  // 0 = type unknown
  bool gc_open_ = false;
  GcPause gc_{};
  uint64_t buffers_ = 0, events_ = 0;
  uint64_t buf_min_ = UINT64_MAX, buf_max_ = 0;  // times of the current buffer's enter/leave events
  Listener* const listener_ = o_.listener;  // o_.listener, one load nearer on the hot path
};

// Inlined into decode_as<Builder>'s event loop (build_profile): no call, no prologue per event.
[[gnu::always_inline]] inline void Builder::on_event(const Event& e, const EventInfo&) {
  ++events_;
  const ThreadIndex t = cur_thread_;
  // The hot path: enter/leave need neither Names nor per-event time bookkeeping (the buffer's times
  // are folded in at its end).
  if (e.kind == EventKind::method_enter || e.kind == EventKind::method_leave) {
    if (names_only_) [[unlikely]]
      return;
    // Times never decrease within a buffer (unsigned deltas from its time base): its first and last
    // enter/leave times are their minimum and maximum.
    if (buf_min_ == UINT64_MAX) [[unlikely]]
      buf_min_ = e.time;
    buf_max_ = e.time;
    if (e.kind == EventKind::method_enter)
      enter(e, t);
    else
      leave(e, t, false);
    return;
  }
  other_event(e, t);
}

void Builder::other_event(const Event& e, ThreadIndex t) {
  names_.observe(e);
  if (names_only_) [[unlikely]]
    return;
  if (e.time) {
    if (p_.first_time_ == 0 || e.time < p_.first_time_) p_.first_time_ = e.time;
    if (e.time > p_.last_time_) p_.last_time_ = e.time;
  }
  if (e.kind != EventKind::sample_hit) touch(t, e.time);
  if (windowed_ && !in_window(e.time)) {
    switch (e.kind) {  // counted only in the window (samples: in sample())
      case EventKind::alloc:
      case EventKind::exception_throw:
      case EventKind::exception_clause:
      case EventKind::monitor:
      case EventKind::gc_event:
        return;
      default:
        break;
    }
  }
  switch (e.kind) {
    case EventKind::method_exc_leave: leave(e, t, true); break;
    case EventKind::sample_hit: sample(e); break;
    case EventKind::alloc: {
      // alloc-sample: the sample stands for 1/p allocations of its size (profile.h).
      uint64_t count = 1, bytes = e.size;
      ++p_.alloc_samples_;
      if (const uint64_t interval = p_.alloc_sample_interval_) {
        const double prob = -std::expm1(-static_cast<double>(e.size) / static_cast<double>(interval));
        const double w = prob > 1e-12 ? 1.0 / prob : 1e12;
        count = static_cast<uint64_t>(std::llround(w));
        bytes = static_cast<uint64_t>(std::llround(w * static_cast<double>(e.size)));
      }
      p_.alloc_objects_ += count;
      p_.alloc_bytes_ += bytes;
      p_.present_[static_cast<size_t>(What::alloc)] = p_.present_[static_cast<size_t>(What::alloc_bytes)] = true;
      const NodeId n = event_stack(e, t);
      add(What::alloc, n, count);
      add(What::alloc_bytes, n, bytes);
      TypeStat& ts = alloc_by_vtable_[e.ptr];
      ts.count += count;
      ts.bytes += bytes;
      ThreadState& s = states_[t];
      s.recent_obj[s.recent_next] = e.obj;
      s.recent_vtable[s.recent_next] = e.ptr;
      s.recent_next = (s.recent_next + 1) % kRecentAllocs;
      emit(TimelineKind::alloc, t, e.time, kNoFrame, n, 0, e.size);
      break;
    }
    case EventKind::exception_throw: {
      ++p_.throws_;
      p_.present_[static_cast<size_t>(What::exceptions)] = true;
      const NodeId n = event_stack(e, t);
      add(What::exceptions, n, 1);
      uint64_t vtable = 0;
      const ThreadState& s = states_[t];
      for (size_t i = 0; i < kRecentAllocs; ++i)
        if (s.recent_obj[i] == e.obj && e.obj) vtable = s.recent_vtable[i];
      ++throws_by_vtable_[vtable];
      emit(TimelineKind::exception, t, e.time, kNoFrame, n);
      break;
    }
    case EventKind::exception_clause: ++p_.clauses_; break;
    case EventKind::monitor: {
      p_.present_[static_cast<size_t>(What::monitor)] = true;
      if (e.code < 4) ++p_.monitor_[e.code];
      ThreadState& s = states_[t];
      NodeId n = 0;
      if (e.code == format::MONITOR_CONTENTION) {
        n = event_stack(e, t);
        add(What::monitor, n, 1);
        s.monitor_waiting = true;
        s.monitor_obj = e.obj;
        s.monitor_time = e.time;
      } else if (s.monitor_waiting && s.monitor_obj == e.obj) {
        if (e.time > s.monitor_time) p_.monitor_wait_ns_ += e.time - s.monitor_time;
        s.monitor_waiting = false;
      }
      emit(TimelineKind::monitor, t, e.time, kNoFrame, n, e.code);
      break;
    }
    case EventKind::gc_event:
      if (e.code == format::GC_EVENT_START) {
        if (e.generation < p_.gc_collections_.size()) ++p_.gc_collections_[e.generation];
        gc_open_ = true;
        gc_ = GcPause{e.time, 0, e.generation, t};
      } else if (e.code == format::GC_EVENT_END && gc_open_) {
        gc_.end = e.time >= gc_.start ? e.time : gc_.start;
        p_.gc_pauses_.push_back(gc_);
        gc_open_ = false;
      }
      if (o_.listener) {
        TimelineEvent ev;
        ev.kind = TimelineKind::gc;
        ev.thread = t;
        ev.time = e.time;
        ev.code = e.code;
        ev.generation = e.generation;
        o_.listener->on_event(ev);
      }
      break;
    case EventKind::gc_resize: ++p_.gc_resizes_; break;
    case EventKind::heap_start: {
      states_[t].heapshot = static_cast<int64_t>(p_.heapshots_.size());
      p_.heapshots_.push_back(HeapshotInfo{e.time, 0, 0, 0, t});
      emit(TimelineKind::heapshot_start, t, e.time);
      break;
    }
    case EventKind::heap_object: {
      const int64_t h = states_[t].heapshot;
      if (h >= 0 && e.size > 0) {
        ++p_.heapshots_[static_cast<size_t>(h)].objects;
        p_.heapshots_[static_cast<size_t>(h)].bytes += e.size;
      }
      break;
    }
    case EventKind::heap_end: {
      const int64_t h = states_[t].heapshot;
      if (h >= 0) p_.heapshots_[static_cast<size_t>(h)].end = e.time;
      states_[t].heapshot = -1;
      emit(TimelineKind::heapshot_end, t, e.time);
      break;
    }
    case EventKind::method_jit: {
      ++p_.jit_methods_;
      p_.jit_code_bytes_ += e.size;
      const FrameId f = managed_frame(e.method);
      emit(TimelineKind::jit, t, e.time, f);
      break;
    }
    case EventKind::jit_helper: ++p_.jit_helpers_; break;
    case EventKind::counter_samples: counter_samples(e, t); break;
    case EventKind::sync_point:
      if (ours_ && e.code == format::SYNC_POINT_PERIODIC && pause_marks_.size() < (1u << 20)) pause_marks_.push_back(e.time);
      break;
    case EventKind::thread_start: {
      auto it = thread_ids_.find(e.ptr);
      if (it != thread_ids_.end() && p_.threads_[it->second].ended) {  // a reused id: a new thread
        it->second = new_thread(e.ptr);
        have_last_thread_ = false;
        if (e.ptr == p_.threads_[cur_thread_].id) cur_thread_ = it->second;
      }
      const ThreadIndex th = thread_index(e.ptr);
      ThreadInfo& ti = p_.threads_[th];
      ti.started = true;
      ti.start_time = e.time;
      touch(th, e.time);
      emit(TimelineKind::thread_start, th, e.time);
      break;
    }
    case EventKind::thread_end: {
      const ThreadIndex th = thread_index(e.ptr);
      ThreadInfo& ti = p_.threads_[th];
      ti.ended = true;
      ti.end_time = e.time;
      touch(th, e.time);
      emit(TimelineKind::thread_end, th, e.time);
      break;
    }
    case EventKind::image_load:
      if (p_.program_.empty() && e.name.size() > 4 && e.name.compare(e.name.size() - 4, 4, ".exe") == 0)
        p_.program_ = e.name;
      break;
    case EventKind::thread_name: p_.threads_[thread_index(e.ptr)].name = e.name; break;
    default: break;
  }
}

void Builder::finish(const DecodeSummary& summary, const Input& input) {
  flush_buffer_times();
  p_.summary_ = summary;
  if (!input.error().empty() && p_.problem_count_ == 0) {
    p_.problems_.push_back({input.offset(), -1, input.error()});
    p_.problem_count_ = 1;
  }
  // Recorded intervals: the agent's sync points alternate pause / resume from its initial state.
  if (start_paused_ || !pause_marks_.empty()) {
    p_.pauses_recorded_ = true;
    std::sort(pause_marks_.begin(), pause_marks_.end());
    bool recording = !start_paused_;
    uint64_t since = p_.first_time_;
    for (const uint64_t t : pause_marks_) {
      if (recording) p_.recorded_.push_back(RecordedInterval{since, t});
      recording = !recording;
      since = t;
    }
    if (recording) p_.recorded_.push_back(RecordedInterval{since, std::max(since, p_.last_time_)});
  }
  // Calls still open at the end of the file end at their thread's last event.
  for (ThreadIndex t = 0; t < states_.size(); ++t) {
    p_.unclosed_calls_ += states_[t].calls.size() + states_[t].deep;
    while (!states_[t].calls.empty()) close_top(t, p_.threads_[t].last_time, 3);
  }
  // --what calls: the self time of each call path.
  {
    auto& w = p_.weights_[static_cast<size_t>(What::calls)];
    w.assign(p_.call_stats_.size(), 0);
    uint64_t total = 0;
    for (size_t n = 0; n < p_.call_stats_.size(); ++n) total += (w[n] = p_.call_stats_[n].self_ns);
    p_.totals_[static_cast<size_t>(What::calls)] = total;
  }
  // Names, now that every description in the file has been seen.
  for (Frame& f : p_.frames_) {
    if (f.kind == FrameKind::managed) {
      const std::string* n = names_.method_name(f.address);
      f.name = n ? *n : hex_name("unknown method", f.address);
      if (starts_with(f.name, "(wrapper")) f.kind = FrameKind::runtime;
    } else if (f.kind == FrameKind::native) {
      if (f.name.empty()) {  // an address first seen before what describes it
        if (const uint64_t m = names_.method_at(f.address)) {
          const std::string* n = names_.method_name(m);
          f.name = n ? *n : hex_name("unknown method", m);
          f.kind = FrameKind::managed;
          continue;
        }
        const std::string* s = names_.symbol_at(f.address);
        f.name = s ? *s : hex_name("unknown native", f.address);
      }
      f.module = module_of(f.name);
      if (runtime_native(f.name, f.module)) f.kind = FrameKind::runtime;
    }
  }
  for (Frame& f : p_.frames_) {  // a description with an empty name still names something
    if (f.name.empty()) f.name = hex_name(f.kind == FrameKind::native ? "unnamed native" : "unnamed method", f.address);
  }
  for (ThreadInfo& ti : p_.threads_) {
    if (ti.name.empty())
      if (const std::string* n = names_.thread_name(ti.id)) ti.name = *n;
  }
  for (CounterInfo& c : p_.counters_) {
    if (const CounterDesc* d = names_.counter(c.index)) {
      c.name = d->section_name.empty() ? d->name : d->section_name + "/" + d->name;
      c.section = d->section;
      c.type = d->type;
      c.unit = d->unit;
      c.variance = d->variance;
    } else {
      c.name = hex_name("unknown counter", c.index);
    }
  }
  // Allocations and exceptions by type, merged by class name.
  {
    std::unordered_map<std::string, TypeStat> by_name;
    for (const auto& [vt, s] : alloc_by_vtable_) {
      const std::string* n = names_.vtable_class_name(vt);
      std::string name = n ? *n : hex_name("unknown class of vtable", vt);
      TypeStat& d = by_name[name];
      d.name = name;
      d.count += s.count;
      d.bytes += s.bytes;
    }
    for (auto& [n, s] : by_name) p_.alloc_types_.push_back(std::move(s));
    std::sort(p_.alloc_types_.begin(), p_.alloc_types_.end(), [](const TypeStat& a, const TypeStat& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.count != b.count ? a.count > b.count : a.name < b.name;
    });
    by_name.clear();
    for (const auto& [vt, count] : throws_by_vtable_) {
      const std::string* n = vt ? names_.vtable_class_name(vt) : nullptr;
      std::string name = n ? *n : vt ? hex_name("unknown class of vtable", vt) : std::string("[type not recorded]");
      TypeStat& d = by_name[name];
      d.name = name;
      d.count += count;
    }
    for (auto& [n, s] : by_name) p_.exception_types_.push_back(std::move(s));
    std::sort(p_.exception_types_.begin(), p_.exception_types_.end(), [](const TypeStat& a, const TypeStat& b) {
      return a.count != b.count ? a.count > b.count : a.name < b.name;
    });
  }
  p_.methods_ = method_stats(p_, nullptr);
  for (const auto& [m, f] : managed_) {
    if (const Names::Method* md = names_.method(m)) p_.methods_[f].jit_code_bytes = md->size;
  }
  if (o_.progress) o_.progress(p_.summary_.bytes, events_);
}

std::vector<MethodStat> method_stats(const Profile& p, const std::vector<bool>* thread_mask) {
  const auto wanted = [&](ThreadIndex t) { return t < thread_mask->size() && (*thread_mask)[t]; };
  // Per-method numbers from the tree: self weights at each node's own frame; inclusive numbers over
  // the subtree, each frame counted once per path (recursion does not double-count).
  const size_t nn = p.nodes().size();
  std::vector<MethodStat> out(p.frames().size());
  std::vector<uint64_t> sub(nn, 0);
  for (NodeId n = 1; n < nn; ++n) {
    const FrameId f = p.nodes()[n].frame;
    if (f == kNoFrame || (thread_mask && !wanted(p.nodes()[n].thread))) continue;
    MethodStat& ms = out[f];
    const uint64_t hits = p.weight(What::cpu, n);
    ms.samples_self += hits;
    sub[n] += hits;
    ms.alloc_objects += p.weight(What::alloc, n);
    ms.alloc_bytes += p.weight(What::alloc_bytes, n);
    ms.throws += p.weight(What::exceptions, n);
    ms.contentions += p.weight(What::monitor, n);
    const CallStat cs = p.calls(n);
    ms.calls += cs.calls;
    ms.self_ns += cs.self_ns;
  }
  for (NodeId n = static_cast<NodeId>(nn); n-- > 1;) {
    const NodeId parent = p.nodes()[n].parent;
    if (parent != 0 && p.nodes()[parent].frame != kNoFrame) sub[parent] += sub[n];
  }
  // Depth-first walk with a per-frame count of how many times it is on the current path.
  std::vector<NodeId> first_child(nn, 0), next_sibling(nn, 0);
  for (NodeId n = static_cast<NodeId>(nn); n-- > 1;) {
    const NodeId parent = p.nodes()[n].parent;
    next_sibling[n] = first_child[parent];
    first_child[parent] = n;
  }
  std::vector<uint32_t> active(p.frames().size(), 0);
  std::vector<NodeId> path;
  NodeId n = first_child[0];
  while (n != 0) {
    const FrameId f = p.nodes()[n].frame;
    if (p.nodes()[n].depth == 0 && thread_mask && !wanted(p.nodes()[n].thread)) {  // skip the thread
      n = next_sibling[n];
      continue;
    }
    if (f != kNoFrame) {
      if (active[f]++ == 0) {
        out[f].samples_total += sub[n];
        out[f].total_ns += p.calls(n).total_ns;
      }
    }
    if (first_child[n]) {
      path.push_back(n);
      n = first_child[n];
      continue;
    }
    // Leave n and every ancestor whose children are done.
    for (;;) {
      if (p.nodes()[n].frame != kNoFrame) --active[p.nodes()[n].frame];
      if (next_sibling[n]) {
        n = next_sibling[n];
        break;
      }
      if (path.empty()) {
        n = 0;
        break;
      }
      n = path.back();
      path.pop_back();
    }
  }
  return out;
}

// The reader's memory budget (mlpd/budget.h; `mlpd --max-memory=SIZE`) bounds a report or export as it
// bounds verify and dump: past it, reading ends with one problem naming the limit and the offset.
static DecodeOptions budgeted() {
  DecodeOptions o;
  o.budget = &process_budget();
  return o;
}

bool build_profile(Input& input, Profile& out, const BuildOptions& options) {
  out = Profile();
  Builder b(out, options);
  b.finish(decode_as(input, b, budgeted()), input);
  return out.problem_count() == 0;
}

bool build_profile(const std::vector<Input*>& inputs, Profile& out, const BuildOptions& options) {
  out = Profile();
  if (inputs.empty()) return true;
  Builder b(out, options);
  DecodeSummary all;
  for (Input* in : inputs) {
    const DecodeSummary s = decode_as(*in, b, budgeted());
    all.header_ok = all.header_ok || s.header_ok;
    all.buffers += s.buffers;
    all.events += s.events;
    all.bytes += s.bytes;
    all.problems += s.problems;
    if (in != inputs.back() && !in->error().empty()) b.on_problem({in->offset(), -1, in->error()});
  }
  b.finish(all, *inputs.back());
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

void IncrementalBuilder::snapshot(Profile& out) { builder_->snapshot_into(out, all_, *no_input_); }

uint64_t IncrementalBuilder::problem_count() const { return live_.problem_count(); }

}  // namespace mlpd::profile
