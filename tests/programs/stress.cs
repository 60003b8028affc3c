// Stress for the profiler: many short-lived threads that call, allocate, throw, lock and create GC
// handles while other threads force collections. argv[0] = rounds (default 20). The output is
// deterministic (sums only); the exit status is 0.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Threading;

class Box { public int Value; public Box Next; public byte[] Payload; }

static class StressProgram {
  static readonly object Gate = new object();
  static long shared;

  static int Work(int seed) {
    int acc = seed;
    Box chain = null;
    for (int i = 0; i < 300; i++) {
      chain = new Box { Value = i, Next = chain, Payload = (i % 50 == 0) ? new byte[2048] : null };
      acc += Leaf(i) ^ chain.Value;
      if (i % 97 == 0) {
        try { throw new InvalidOperationException("s"); } catch (InvalidOperationException) { acc++; }
      }
      if (i % 31 == 0) {
        lock (Gate) { shared += i; }
      }
      if (i % 101 == 0) {
        var h = GCHandle.Alloc(chain, i % 2 == 0 ? GCHandleType.Normal : GCHandleType.Weak);
        h.Free();
      }
    }
    return acc;
  }

  static int Leaf(int x) { return x * 7 + 1; }

  static int Main(string[] args) {
    int rounds = args.Length > 0 ? int.Parse(args[0]) : 20;
    long total = 0;
    for (int r = 0; r < rounds; r++) {
      var threads = new List<Thread>();
      var results = new int[8];
      for (int t = 0; t < 8; t++) {
        int id = t;
        var th = new Thread(() => { results[id] = Work(id); });
        th.Name = "worker-" + r + "-" + t;
        threads.Add(th);
        th.Start();
      }
      if (r % 5 == 0) GC.Collect();
      foreach (var th in threads) th.Join();
      foreach (int v in results) total += v;
    }
    Console.WriteLine("stress total {0} shared {1}", total, shared);
    return 0;
  }
}
