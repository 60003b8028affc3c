// Calls around the calldepth limit (issue 22, item 4): deep recursion, nested message loops whose
// inner loop runs beyond the limit (a modal dialog's, the same method as the outer loop), and
// exceptions unwinding across the limit. Deterministic on the main thread: a run with calldepth=N
// must record exactly the calls of a run with no limit that are less than N deep.
using System;
using System.Runtime.CompilerServices;

class CallDepth {
  static int sink;

  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Marker() { sink++; }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static int Recurse(int n) {
    if (n == 0) {
      Marker();
      return 0;
    }
    int r = Recurse(n - 1) + 1;
    Marker();
    return r;
  }

  // A message loop: each message is dispatched through `depth` frames; at the bottom, the first
  // levels open a nested loop (a modal dialog), the same method as the outer loop.
  [MethodImpl(MethodImplOptions.NoInlining)]
  static void RunLoop(int level, int depth) {
    for (int i = 0; i < 3; ++i) {
      Dispatch(level, depth, 0);
      Marker();
    }
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Dispatch(int level, int depth, int d) {
    if (d < depth) {
      Dispatch(level, depth, d + 1);
      Marker();
      return;
    }
    if (level < 2) RunLoop(level + 1, depth);
    Marker();
  }

  // Exceptions thrown `throwAt` frames deep and caught `catchAt` frames deep.
  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Thrower(int d, int at) {
    if (d >= at) throw new InvalidOperationException("deep");
    Thrower(d + 1, at);
    Marker();
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Catcher(int d, int catchAt, int throwAt) {
    if (d < catchAt) {
      Catcher(d + 1, catchAt, throwAt);
      Marker();
      return;
    }
    try {
      Thrower(d, throwAt);
    } catch (InvalidOperationException) {
      Marker();
    }
    Marker();
  }

  // A finally on the way: the unwinding runs it, then goes on.
  [MethodImpl(MethodImplOptions.NoInlining)]
  static void WithFinally(int d, int at, int throwAt) {
    if (d < at) {
      WithFinally(d + 1, at, throwAt);
      Marker();
      return;
    }
    try {
      Thrower(d, throwAt);
    } finally {
      Marker();
    }
  }

  static int Main(string[] args) {
    int total = 0;
    total += Recurse(150);
    total += Recurse(40);
    total += Recurse(3000);
    RunLoop(0, 60);
    RunLoop(0, 120);
    Catcher(0, 90, 130);
    Catcher(0, 110, 130);
    Catcher(0, 50, 95);
    Catcher(0, 20, 60);
    try {
      WithFinally(0, 80, 140);
    } catch (InvalidOperationException) {
      Marker();
    }
    total += Recurse(10);
    Console.WriteLine("calldepth done " + total + " " + sink);
    return 0;
  }
}
