// CallStack: a thread's shadow call stack for enter/leave events. It holds the methods whose enter
// was recorded and whose leave was not yet, so that every recorded enter gets exactly one leave
// (mprof-report prints "unmatched leave" otherwise), also when a method is left by an exception
// without its own leave event, or was entered beyond the call depth limit or before profiling began.
// Plain data and logic, no Mono and no events: the callbacks (hooks.cpp) write what it says.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace mlpd::hooks {

struct CallStack {
  uint32_t depth = 0;  // real nesting depth, recorded or not
  uint32_t count = 0;  // recorded frames on `frames`
  uint32_t cap = 0;
  uint64_t* frames = nullptr;

  // An enter: counts the nesting; false when it is beyond `calldepth` (not to be recorded).
  bool enter(uint32_t calldepth) { return depth++ < calldepth; }
  bool full() const { return count == cap; }
  // Room for more frames (64, then doubling); false when out of memory (the enter is not recorded).
  bool grow() {
    const uint32_t c = cap ? cap * 2 : 64;
    auto* f = static_cast<uint64_t*>(std::realloc(frames, sizeof(uint64_t) * c));
    if (!f) return false;
    frames = f;
    cap = c;
    return true;
  }
  // Records the frame of an enter that enter() accepted and that found room (!full()).
  void push(uint64_t method) { frames[count++] = method; }

  // The usual leave: `method` is on top and every frame is recorded. Pops it and returns true;
  // otherwise changes nothing (the caller then calls leave()).
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

  // Any leave (or exceptional leave, or tail call) of `method`: pops down to its frame. Frames above
  // it were left without a leave event: close(frame, false) for each, innermost first, then
  // close(method, true). A leave with no recorded frame is dropped (close is not called).
  template <class Close>
  void leave(uint64_t method, uint32_t calldepth, Close&& close) {
    if (depth == 0) return;
    --depth;
    if (count == 0) return;
    uint32_t i = count;
    while (i > 0 && frames[i - 1] != method) --i;
    if (i == 0) {
      ++depth;  // not a frame we recorded (beyond calldepth, or entered before we started)
      if (depth > count && depth > calldepth) --depth;
      return;
    }
    while (count > i) {
      close(frames[count - 1], false);
      --count;
      if (depth) --depth;
    }
    --count;
    close(method, true);
  }

  // Frees the frames (thread exit); the stack is empty and usable again afterwards.
  void release() {
    std::free(frames);
    *this = CallStack{};
  }
};

}  // namespace mlpd::hooks
