// For the counter tests: a fixed amount of work in two phases separated by a sleep (argv[0] ms,
// default 600), so that a profiler sampling counters every 100 ms sees them change between samples.
// Phase 2 JITs methods phase 1 never ran, allocates and throws, so runtime and profiler counters both
// move. Deterministic: the same methods are compiled on every run.
using System;
using System.Collections.Generic;
using System.Threading;

class Item { public int Value; }

static class CountersProgram {
  static int Phase1(int n) {
    var list = new List<Item>();
    for (int i = 0; i < n; i++) list.Add(new Item { Value = i });
    int sum = 0;
    foreach (var it in list) sum += it.Value;
    return sum;
  }

  static int Twice(int x) { return 2 * x; }
  static int Thrice(int x) { return 3 * x; }
  static string Describe(int x) { return "value " + x.ToString(); }

  static int Phase2(int n) {
    var d = new Dictionary<int, string>();
    for (int i = 0; i < n; i++) d[i] = Describe(Twice(i) + Thrice(i));
    try {
      throw new InvalidOperationException("counted");
    } catch (InvalidOperationException) {
      n++;
    }
    return d.Count + n;
  }

  static void Main(string[] args) {
    int sleep = args.Length > 0 ? int.Parse(args[0]) : 600;
    Console.WriteLine("phase1 " + Phase1(1000));
    Thread.Sleep(sleep);
    Console.WriteLine("phase2 " + Phase2(500));
  }
}
