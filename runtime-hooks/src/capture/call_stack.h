// CallStack: a thread's shadow call stack for enter/leave events. It holds every method the thread
// entered while we watched and has not left yet, recorded (its enter is in the file) or not (entered
// beyond `calldepth`, or while logging was off), so that every recorded enter gets exactly one leave
// (mprof-report prints "unmatched leave" otherwise) and every leave is matched with its own enter:
// also when a method is left by an exception without its own leave event, or when the same method is
// both below and beyond the limit (a nested message loop, recursion; docs/design.md, "calls at the
// depth limit"). Plain data and logic, no Mono and no events: the callbacks (call_callbacks.cpp) write what it
// says.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace mlpd::hooks {

struct CallStack {
  // A frame is the method's address, with bit 0 set when its enter was not recorded (MonoMethod is
  // at least 8-byte aligned): so a recorded frame compares equal to its method in one compare.
  static constexpr uint64_t kUnrecorded = 1;
  // Frames kept at most (8 MiB); deeper frames are only counted (depth > count) and never recorded.
  static constexpr uint32_t kMaxFrames = 1u << 20;

  uint32_t depth = 0;  // real nesting depth: `count` frames, plus those only counted (out of memory)
  uint32_t count = 0;  // frames on `frames`
  uint32_t cap = 0;
  uint64_t* frames = nullptr;

  bool full() const { return count == cap; }
  // Whether the next enter can be kept as a frame (else it is only counted: enter_counted()).
  bool can_push() const { return depth == count && !full(); }
  // Room for more frames (64, then doubling); false when out of memory or at kMaxFrames.
  bool grow() {
    if (cap >= kMaxFrames) return false;
    const uint32_t c = cap ? cap * 2 : 64;
    auto* f = static_cast<uint64_t*>(std::realloc(frames, sizeof(uint64_t) * c));
    if (!f) return false;
    frames = f;
    cap = c;
    return true;
  }
  // Whether an enter now would be recorded (before any push): the frames below are fewer than the limit.
  bool within(uint32_t calldepth) const { return depth < calldepth; }
  // An enter, when can_push(): its frame, recorded or not.
  void push(uint64_t method) {
    frames[count++] = method;
    ++depth;
  }
  void push_unrecorded(uint64_t method) { push(method | kUnrecorded); }
  // An enter that cannot be kept (out of memory, or kMaxFrames deep): counted, never recorded.
  void enter_counted() { ++depth; }

  // The usual leave: `method` is on top and recorded. Pops it and returns true; otherwise changes
  // nothing (the caller then calls leave()).
  bool leave_top(uint64_t method) {
    if (!is_top(method)) [[unlikely]] return false;
    pop_top();
    return true;
  }
  // leave_top() in two steps, for a caller that checks more before changing anything.
  bool is_top(uint64_t method) const { return count != 0 && count == depth && frames[count - 1] == method; }
  void pop_top() {
    --count;
    --depth;
  }

  // Any leave (or exceptional leave, or tail call) of `method`: pops down to its innermost frame,
  // recorded or not. Frames above it were left without a leave event: close(frame, false) for each
  // recorded one, innermost first, then close(method, true) if its own frame is recorded. A leave of
  // a method with no frame (entered before we watched) changes nothing; a leave while frames are
  // only counted ends the innermost of them.
  template <class Close>
  void leave(uint64_t method, Close&& close) {
    if (depth > count) {
      --depth;
      return;
    }
    uint32_t i = count;
    while (i > 0 && (frames[i - 1] & ~kUnrecorded) != method) --i;
    if (i == 0) return;
    while (count > i) {
      const uint64_t f = frames[--count];
      --depth;
      if (!(f & kUnrecorded)) close(f, false);
    }
    const uint64_t f = frames[--count];
    --depth;
    if (!(f & kUnrecorded)) close(method, true);
  }

  // Frees the frames (thread exit); the stack is empty and usable again afterwards.
  void release() {
    std::free(frames);
    *this = CallStack{};
  }
};

}  // namespace mlpd::hooks
