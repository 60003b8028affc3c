// Allocation-heavy benchmark: short-lived small objects. argv[0] = millions of objects (default 5).
using System;

class Small { public int A; public Small Next; }

static class BenchAlloc {
  static int Main(string[] args) {
    long millions = args.Length > 0 ? long.Parse(args[0]) : 5;
    long n = millions * 1000000;
    Small keep = null;
    int acc = 0;
    for (long i = 0; i < n; i++) {
      var s = new Small { A = (int)i };
      if ((i & 1023) == 0) { s.Next = keep; keep = s; }
      acc += s.A;
    }
    Console.WriteLine("alloc checksum {0}", acc);
    return 0;
  }
}
