// The tallies (profile/builder.h): every event but enter/leave -- sample hits, allocations (weighted
// when the agent sampled them), throws, monitors, collections, heapshots, JIT, counters, threads --
// folded into the profile's aggregates, and the recorded intervals of a paused run.
#include "builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mlpd/format.h"

namespace mlpd::profile {

void Builder::other_event(const Event& e, ThreadIndex t) {
  names_.observe(e);
  if (names_only_) [[unlikely]] {
    // What a part read for its names still tells about the whole file (mlpd top's history, issue
    // 33.4): the program, and the counters whose samples are deltas (their value is the sum of all).
    if (e.kind == EventKind::image_load) program_image(e);
    if (e.kind == EventKind::counter_samples) counter_samples(e, t, true);
    return;
  }
  if (o_.tap && o_.tap->wants(e.kind)) [[unlikely]]
    o_.tap->on_event(e);
  detail::file_time(p_.first_time_, p_.last_time_, e.time);
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
    case EventKind::method_exc_leave:
      if (!replaying_) leave(e.time, e.method, t, detail::kLeftThrow);
      break;
    case EventKind::sample_hit: sample(e); break;
    case EventKind::alloc: tally<EventKind::alloc>(e, t); break;
    case EventKind::exception_throw: tally<EventKind::exception_throw>(e, t); break;
    case EventKind::exception_clause: tally<EventKind::exception_clause>(e, t); break;
    case EventKind::monitor: tally<EventKind::monitor>(e, t); break;
    case EventKind::gc_event: gc_event(e, t); break;
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
    case EventKind::counter_samples: counter_samples(e, t, false); break;
    case EventKind::sync_point:
      if (ours_ && e.code == format::SYNC_POINT_PERIODIC && pause_marks_.size() < (1u << 20)) pause_marks_.push_back(e.time);
      break;
    case EventKind::thread_start: thread_start(e); break;
    case EventKind::thread_end: thread_end(e); break;
    case EventKind::image_load: program_image(e); break;
    case EventKind::thread_name: p_.threads_[thread_index(e.ptr)].name = e.name; break;
    default: break;
  }
}

template <EventKind K>
void Builder::tally(const Event& e, ThreadIndex t) {
  TallyHooks h{*this, t, e.time};
  detail::fold_tally_as<K>(e, states_[t].tally, tallies_, p_.alloc_sample_interval_, h);
}

void Builder::publish_tallies() {
  const detail::TallySums& s = tallies_;
  p_.alloc_samples_ = s.alloc_samples;
  p_.alloc_objects_ = s.alloc_objects;
  p_.alloc_bytes_ = s.alloc_bytes;
  p_.throws_ = s.throws;
  p_.clauses_ = s.clauses;
  std::copy(std::begin(s.monitor), std::end(s.monitor), std::begin(p_.monitor_));
  p_.monitor_wait_ns_ = s.monitor_wait_ns;
  if (s.alloc_present)
    p_.present_[static_cast<size_t>(What::alloc)] = p_.present_[static_cast<size_t>(What::alloc_bytes)] = true;
  if (s.exc_present) p_.present_[static_cast<size_t>(What::exceptions)] = true;
  if (s.mon_present) p_.present_[static_cast<size_t>(What::monitor)] = true;
}

void Builder::gc_event(const Event& e, ThreadIndex t) {
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
}

void Builder::thread_start(const Event& e) {
  auto it = thread_ids_.find(e.ptr);
  if (it != thread_ids_.end() && p_.threads_[it->second].ended) {  // a reused id: a new thread
    it->second = new_thread(e.ptr);
    ++reused_threads_;
    have_last_thread_ = false;
    if (e.ptr == p_.threads_[cur_thread_].id) cur_thread_ = it->second;
  }
  const ThreadIndex th = thread_index(e.ptr);
  ThreadInfo& ti = p_.threads_[th];
  ti.started = true;
  ti.start_time = e.time;
  touch(th, e.time);
  emit(TimelineKind::thread_start, th, e.time);
}

void Builder::thread_end(const Event& e) {
  const ThreadIndex th = thread_index(e.ptr);
  ThreadInfo& ti = p_.threads_[th];
  ti.ended = true;
  ti.end_time = e.time;
  touch(th, e.time);
  emit(TimelineKind::thread_end, th, e.time);
}

// The program: the first image ending in .exe (Mono runs one); a .NET program is a .dll, so until an
// .exe comes the first .dll that is not the runtime's own (System.Private.CoreLib, the shared
// framework's assemblies under .../shared/Microsoft.*/) stands for it.
void Builder::program_image(const Event& e) {
  auto ends = [&](std::string_view tail) {
    return e.name.size() > tail.size() && e.name.compare(e.name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (p_.program_exe_) return;
  if (ends(".exe")) {
    p_.program_ = e.name;
    p_.program_exe_ = true;
  } else if (p_.program_.empty() && ends(".dll") && !ends("/System.Private.CoreLib.dll") &&
             e.name.find("/shared/Microsoft.") == std::string::npos) {
    p_.program_ = e.name;
  }
}

// `names_only`: a part read only for its names (mlpd top's history, read alongside the live part):
// deltas are summed (a sum does not depend on the order the parts come in); a value that is not a
// delta is taken only while the counted part has given none (the history is older); not counted as
// samples, not given to the listener.
void Builder::counter_samples(const Event& e, ThreadIndex t, bool names_only) {
  for (const CounterValue& v : e.counter_values) {
    auto [it, inserted] = counter_index_.try_emplace(v.index, 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(p_.counters_.size());
      p_.counters_.push_back(CounterInfo{});
      p_.counters_.back().index = v.index;
    }
    CounterInfo& c = p_.counters_[it->second];
    const CounterDesc* d = names_.counter(v.index);
    const bool delta = v.type != format::COUNTER_STRING && v.type != format::COUNTER_DOUBLE && d &&
                       d->section != format::COUNTER_SECTION_PERFCOUNTERS;
    if (names_only && !delta && c.samples) continue;
    if (!names_only) ++c.samples;
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
    if (o_.listener && !names_only) {
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

bool Builder::signed_type(uint64_t t) {
  return t == format::COUNTER_INT || t == format::COUNTER_WORD || t == format::COUNTER_LONG ||
         t == format::COUNTER_TIME_INTERVAL;
}

// Recorded intervals: the agent's sync points alternate pause / resume from its initial state.
void Builder::record_intervals() {
  if (!start_paused_ && pause_marks_.empty()) return;
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

}  // namespace mlpd::profile
