// Benchmark workload: a call-heavy and allocation-heavy loop whose size is set by argv[0]
// (iterations; default 1000). Used to produce large mlpd files and to measure profiler overhead.
using System;
using System.Collections.Generic;

class Item {
  public int Key;
  public Item Next;
  public Item(int key, Item next) { Key = key; Next = next; }
}

static class Workload {
  static int Leaf(int x) { return x * 3 + 1; }
  static int Middle(int x) { return Leaf(x) + Leaf(x + 1); }
  static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

  static Item Build(int n) {
    Item head = null;
    for (int i = 0; i < n; i++) head = new Item(i, head);
    return head;
  }

  static int Main(string[] args) {
    int iterations = args.Length > 0 ? int.Parse(args[0]) : 1000;
    long sum = 0;
    for (int i = 0; i < iterations; i++) {
      sum += Fib(12);
      for (int j = 0; j < 50; j++) sum += Middle(j);
      Item list = Build(200);
      while (list != null) { sum += list.Key; list = list.Next; }
      var strings = new List<string>();
      for (int j = 0; j < 20; j++) strings.Add(j.ToString());
      sum += strings.Count;
    }
    Console.WriteLine("workload: {0} iterations, checksum {1}", iterations, sum);
    return 0;
  }
}
