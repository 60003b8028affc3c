// CallStack (runtime-hooks/src/call_stack.h): the shadow stack that gives every recorded enter
// exactly one leave.
#include "mlpd_catch.h"
#include <utility>
#include <vector>

#include "call_stack.h"

using mlpd::hooks::CallStack;

namespace {

// What the enter callback does, without the event: true when the enter is recorded.
bool enter(CallStack& cs, uint64_t m, uint32_t calldepth = 100) {
  if (!cs.enter(calldepth)) return false;
  if (cs.full() && !cs.grow()) return false;
  cs.push(m);
  return true;
}

// The leaves a leave of `m` writes: (method, true) for m's own, (method, false) for frames unwound.
std::vector<std::pair<uint64_t, bool>> leave(CallStack& cs, uint64_t m, uint32_t calldepth = 100) {
  std::vector<std::pair<uint64_t, bool>> out;
  if (cs.leave_top(m)) {
    out.emplace_back(m, true);
    return out;
  }
  cs.leave(m, calldepth, [&](uint64_t frame, bool own) { out.emplace_back(frame, own); });
  return out;
}

using Leaves = std::vector<std::pair<uint64_t, bool>>;

}  // namespace

TEST_CASE("CallStack: nested enters and leaves match, growing past 64 frames", "[hooks][calls]") {
  CallStack cs;
  for (uint64_t m = 1; m <= 200; ++m) REQUIRE(enter(cs, m, 1000));
  CHECK(cs.count == 200);
  CHECK(cs.depth == 200);
  CHECK(cs.cap >= 200);
  for (uint64_t m = 200; m >= 1; --m) REQUIRE(leave(cs, m, 1000) == Leaves{{m, true}});
  CHECK(cs.count == 0);
  CHECK(cs.depth == 0);
  cs.release();
  CHECK(cs.frames == nullptr);
  CHECK(cs.cap == 0);
}

TEST_CASE("CallStack: a leave below the top closes the frames above as exceptional", "[hooks][calls]") {
  CallStack cs;
  enter(cs, 1);
  enter(cs, 2);
  enter(cs, 3);
  CHECK_FALSE(cs.leave_top(1));
  CHECK(cs.count == 3);  // leave_top changed nothing
  CHECK(leave(cs, 1) == Leaves{{3, false}, {2, false}, {1, true}});
  CHECK(cs.count == 0);
  CHECK(cs.depth == 0);
  cs.release();
}

TEST_CASE("CallStack: a leave of a method never recorded is dropped", "[hooks][calls]") {
  CallStack cs;
  CHECK(leave(cs, 9).empty());  // nothing entered at all
  enter(cs, 1);
  CHECK(leave(cs, 9).empty());
  CHECK(cs.count == 1);
  CHECK(cs.depth == 1);  // the unknown leave did not unbalance the depth
  CHECK(leave(cs, 1) == Leaves{{1, true}});
  cs.release();
}

TEST_CASE("CallStack: enters beyond calldepth are counted, not recorded", "[hooks][calls]") {
  CallStack cs;
  CHECK(enter(cs, 1, 2));
  CHECK(enter(cs, 2, 2));
  CHECK_FALSE(enter(cs, 3, 2));
  CHECK_FALSE(enter(cs, 4, 2));
  CHECK(cs.depth == 4);
  CHECK(cs.count == 2);
  CHECK(leave(cs, 4, 2).empty());
  CHECK(leave(cs, 3, 2).empty());
  CHECK(cs.depth == 2);
  CHECK(leave(cs, 2, 2) == Leaves{{2, true}});
  CHECK(leave(cs, 1, 2) == Leaves{{1, true}});
  CHECK(cs.depth == 0);
  cs.release();
}

TEST_CASE("CallStack: leaves of frames entered before profiling began leave the depth in step", "[hooks][calls]") {
  CallStack cs;
  enter(cs, 1, 2);
  enter(cs, 2, 2);
  // An exception unwinds past a frame beyond calldepth that was never entered by us.
  CHECK(leave(cs, 7, 2).empty());
  CHECK(cs.depth == 2);
  CHECK(leave(cs, 2, 2) == Leaves{{2, true}});
  CHECK(leave(cs, 1, 2) == Leaves{{1, true}});
  CHECK(cs.depth == 0);
  CHECK(cs.count == 0);
  cs.release();
}
