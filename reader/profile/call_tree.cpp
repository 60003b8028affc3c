// The call tree (profile/builder.h, call_tree.h): threads and their root nodes, frames (managed,
// native, deferred, special), the (parent, frame) -> child nodes, the stack each event lands on, and
// what the open calls leave at the end of the pass.
#include "builder.h"

#include <algorithm>

namespace mlpd::profile {

void Profile::stack(NodeId node, std::vector<FrameId>& root_first) const {
  root_first.clear();
  while (node != 0 && node < nodes_.size() && nodes_[node].frame != kNoFrame) {
    root_first.push_back(nodes_[node].frame);
    node = nodes_[node].parent;
  }
  std::reverse(root_first.begin(), root_first.end());
}

ThreadIndex Builder::new_thread(uint64_t id) {
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

NodeId Builder::child_slow(NodeId parent, FrameId frame) {
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

FrameId Builder::new_frame(FrameKind kind, uint64_t address, std::string name) {
  const FrameId f = static_cast<FrameId>(p_.frames_.size());
  p_.frames_.push_back(Frame{kind, address, std::move(name), {}});
  return f;
}

FrameId Builder::managed_frame_slow(uint64_t method, FrameCacheEntry& c) {
  auto [it, inserted] = managed_.try_emplace(method, 0);
  if (inserted) it->second = new_frame(FrameKind::managed, method, {});
  c.method = method;
  c.frame = it->second;
  return it->second;
}

FrameId Builder::native_frame(const std::string& name, uint64_t address) {
  auto it = native_.find(std::string_view(name));
  if (it != native_.end()) return it->second;
  const FrameId f = new_frame(FrameKind::native, address, name);
  native_.emplace(name, f);
  return f;
}

FrameId Builder::deferred_frame(uint64_t ip) {
  auto [it, inserted] = deferred_.try_emplace(ip, 0);
  if (inserted) it->second = new_frame(FrameKind::native, ip, {});
  return it->second;
}

FrameId Builder::special_frame(std::string_view name) {
  auto it = special_.find(name);
  if (it != special_.end()) return it->second;
  const FrameId f = new_frame(FrameKind::special, 0, std::string(name));
  special_.emplace(std::string(name), f);
  return f;
}

void Builder::emit_to_listener(TimelineKind k, ThreadIndex t, uint64_t time, FrameId frame,
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
NodeId Builder::event_stack(const Event& e, ThreadIndex t) {
  ThreadState& s = states_[t];
  if (e.has_backtrace && !e.backtrace.empty()) {
    NodeId n = s.root;
    const size_t skip = e.backtrace.size() > o_.max_depth ? e.backtrace.size() - o_.max_depth : 0;
    for (size_t i = skip; i < e.backtrace.size(); ++i) n = child(n, managed_frame(e.backtrace[i]));
    return n;
  }
  if (replaying_) [[unlikely]] {
    if (replay_top_) return replay_top_;
  } else if (!s.calls.empty()) {
    return s.calls.back().node;
  }
  return child(s.root, special_frame("[no backtrace]"));
}

void Builder::sample(const Event& e) {
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

void Builder::close_open_calls() {
  // Calls still open at the end of the file end at their thread's last event.
  for (ThreadIndex t = 0; t < states_.size(); ++t) {
    CallHooks h{*this, t};
    p_.unclosed_calls_ += detail::close_all(states_[t].calls, states_[t].deep, p_.threads_[t].last_time, h);
  }
}

void Builder::call_weights() {
  // --what calls: the self time of each call path.
  auto& w = p_.weights_[static_cast<size_t>(What::calls)];
  w.assign(p_.call_stats_.size(), 0);
  uint64_t total = 0;
  for (size_t n = 0; n < p_.call_stats_.size(); ++n) total += (w[n] = p_.call_stats_[n].self_ns);
  p_.totals_[static_cast<size_t>(What::calls)] = total;
  // Each weights vector ends at its last non-zero weight (weight() is 0 past it): one form of the
  // model whatever the build made it by (the parallel build adds the workers' weights at the end, when
  // every node is made; the one-thread build grows them as it goes).
  for (std::vector<uint64_t>& v : p_.weights_)
    while (!v.empty() && v.back() == 0) v.pop_back();
}

}  // namespace mlpd::profile
