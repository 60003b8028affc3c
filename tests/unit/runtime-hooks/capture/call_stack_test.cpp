// CallStack (runtime-hooks/src/capture/call_stack.h): the shadow stack that gives every recorded enter
// exactly one leave.
#include "mlpd_catch.h"
#include <utility>
#include <vector>

#include "capture/call_stack.h"

using mlpd::hooks::CallStack;

namespace {

// What the enter callbacks do, without the event: true when the enter is recorded.
bool enter(CallStack& cs, uint64_t m, uint32_t calldepth = 100) {
  if (cs.depth != cs.count || (cs.full() && !cs.grow())) {
    cs.enter_counted();
    return false;
  }
  if (!cs.within(calldepth)) {
    cs.push_unrecorded(m);
    return false;
  }
  cs.push(m);
  return true;
}

// The leaves a leave of `m` writes: (method, true) for m's own, (method, false) for frames unwound.
std::vector<std::pair<uint64_t, bool>> leave(CallStack& cs, uint64_t m) {
  std::vector<std::pair<uint64_t, bool>> out;
  if (cs.leave_top(m)) {
    out.emplace_back(m, true);
    return out;
  }
  cs.leave(m, [&](uint64_t frame, bool own) { out.emplace_back(frame, own); });
  return out;
}

using Leaves = std::vector<std::pair<uint64_t, bool>>;

}  // namespace

TEST_CASE("CallStack: nested enters and leaves match, growing past 64 frames", "[hooks][calls]") {
  CallStack cs;
  for (uint64_t m = 8; m <= 1600; m += 8) REQUIRE(enter(cs, m, 1000));
  CHECK(cs.count == 200);
  CHECK(cs.depth == 200);
  CHECK(cs.cap >= 200);
  for (uint64_t m = 1600; m >= 8; m -= 8) REQUIRE(leave(cs, m) == Leaves{{m, true}});
  CHECK(cs.count == 0);
  CHECK(cs.depth == 0);
  cs.release();
  CHECK(cs.frames == nullptr);
  CHECK(cs.cap == 0);
}

TEST_CASE("CallStack: a leave below the top closes the frames above as exceptional", "[hooks][calls]") {
  CallStack cs;
  enter(cs, 8);
  enter(cs, 16);
  enter(cs, 24);
  CHECK_FALSE(cs.leave_top(8));
  CHECK(cs.count == 3);  // leave_top changed nothing
  CHECK(leave(cs, 8) == Leaves{{24, false}, {16, false}, {8, true}});
  CHECK(cs.count == 0);
  CHECK(cs.depth == 0);
  cs.release();
}

TEST_CASE("CallStack: a leave of a method never recorded is dropped", "[hooks][calls]") {
  CallStack cs;
  CHECK(leave(cs, 72).empty());  // nothing entered at all
  enter(cs, 8);
  CHECK(leave(cs, 72).empty());
  CHECK(cs.count == 1);
  CHECK(cs.depth == 1);  // the unknown leave did not unbalance the depth
  CHECK(leave(cs, 8) == Leaves{{8, true}});
  cs.release();
}

TEST_CASE("CallStack: enters beyond calldepth are kept, not recorded", "[hooks][calls]") {
  CallStack cs;
  CHECK(enter(cs, 8, 2));
  CHECK(enter(cs, 16, 2));
  CHECK_FALSE(enter(cs, 24, 2));
  CHECK_FALSE(enter(cs, 32, 2));
  CHECK(cs.depth == 4);
  CHECK(cs.count == 4);
  CHECK_FALSE(cs.is_top(32));  // an unrecorded frame never takes the fast leave
  CHECK(leave(cs, 32).empty());
  CHECK(leave(cs, 24).empty());
  CHECK(cs.depth == 2);
  CHECK(leave(cs, 16) == Leaves{{16, true}});
  CHECK(leave(cs, 8) == Leaves{{8, true}});
  CHECK(cs.depth == 0);
  cs.release();
}

// KeePass's modal dialog (issue 22): a message loop below the limit, the same method's nested loop
// beyond it. The nested loop's leave is its own (nothing written), not the outer loop's.
TEST_CASE("CallStack: a nested loop beyond calldepth leaves itself, not the outer loop", "[hooks][calls]") {
  constexpr uint64_t kRun = 0x100, kDispatch = 0x200, kHandler = 0x300;
  CallStack cs;
  CHECK(enter(cs, kRun, 3));
  CHECK(enter(cs, kDispatch, 3));
  CHECK(enter(cs, kHandler, 3));
  CHECK_FALSE(enter(cs, kRun, 3));       // the modal loop, 3 deep
  CHECK_FALSE(enter(cs, kDispatch, 3));  // its messages
  CHECK(leave(cs, kDispatch).empty());
  CHECK(leave(cs, kRun).empty());  // before: closed the handler and dispatch frames and the outer loop
  CHECK(cs.count == 3);
  CHECK(cs.depth == 3);
  CHECK(leave(cs, kHandler) == Leaves{{kHandler, true}});
  CHECK(leave(cs, kDispatch) == Leaves{{kDispatch, true}});
  CHECK(leave(cs, kRun) == Leaves{{kRun, true}});
  CHECK(cs.depth == 0);
  cs.release();
}

TEST_CASE("CallStack: recursion across calldepth: each leave is its own level's", "[hooks][calls]") {
  constexpr uint64_t kRec = 0x40;
  CallStack cs;
  int recorded = 0;
  for (int i = 0; i < 300; ++i) recorded += enter(cs, kRec, 100) ? 1 : 0;
  CHECK(recorded == 100);
  CHECK(cs.count == 300);
  int written = 0;
  for (int i = 300; i > 0; --i) {
    const Leaves l = leave(cs, kRec);
    if (i > 100) {
      CHECK(l.empty());
    } else {
      CHECK(l == Leaves{{kRec, true}});
    }
    written += static_cast<int>(l.size());
    CHECK(cs.depth == static_cast<uint32_t>(i - 1));
  }
  CHECK(written == 100);
  cs.release();
}

// An exception thrown beyond the limit and caught below it: the exceptional leaves of the frames
// beyond write nothing; those below close their own recorded frames.
TEST_CASE("CallStack: an exception unwinding across calldepth", "[hooks][calls]") {
  CallStack cs;
  for (uint64_t m = 1; m <= 6; ++m) enter(cs, m * 8, 3);  // 8, 16, 24 recorded; 32, 40, 48 not
  for (uint64_t m : {48, 40, 32}) CHECK(leave(cs, m).empty());
  CHECK(leave(cs, 24) == Leaves{{24, true}});
  CHECK(cs.depth == 2);
  // A frame whose exceptional leave Mono did not raise (unwound without one): the next leave below
  // closes it as an exceptional leave.
  enter(cs, 24, 3);
  enter(cs, 32, 3);
  CHECK(leave(cs, 16) == Leaves{{24, false}, {16, true}});
  CHECK(cs.depth == 1);
  CHECK(cs.count == 1);
  cs.release();
}

TEST_CASE("CallStack: frames that cannot be kept are counted and end innermost first", "[hooks][calls]") {
  CallStack cs;
  for (uint64_t m = 1; m <= 64; ++m) REQUIRE(enter(cs, m * 8, 1000));
  cs.cap = cs.kMaxFrames;  // as if at the limit of frames kept (the array holds 64)
  cs.count = cs.depth = cs.kMaxFrames;
  CHECK_FALSE(enter(cs, 8, 2000000));
  CHECK(cs.depth == cs.kMaxFrames + 1);
  CHECK_FALSE(cs.grow());
  CHECK(leave(cs, 8).empty());  // the counted frame, not a kept one
  CHECK(cs.depth == cs.kMaxFrames);
  cs.count = cs.depth = 64;
  cs.cap = 64;
  for (uint64_t m = 64; m >= 1; --m) REQUIRE(leave(cs, m * 8) == Leaves{{m * 8, true}});
  cs.release();
}

TEST_CASE("CallStack: leaves of frames entered before profiling began leave the depth in step", "[hooks][calls]") {
  CallStack cs;
  enter(cs, 8, 2);
  enter(cs, 16, 2);
  // An exception unwinds past a frame beyond calldepth that was never entered by us.
  CHECK(leave(cs, 56).empty());
  CHECK(cs.depth == 2);
  CHECK(leave(cs, 16) == Leaves{{16, true}});
  CHECK(leave(cs, 8) == Leaves{{8, true}});
  CHECK(cs.depth == 0);
  CHECK(cs.count == 0);
  cs.release();
}
