// Call-heavy benchmark: small methods called in a tight loop. argv[0] = millions of calls (default 5).
using System;

static class BenchCalls {
  static int A(int x) { return x + 1; }
  static int B(int x) { return A(x) ^ 3; }
  static int C(int x) { return B(x) + A(x); }

  static int Main(string[] args) {
    long millions = args.Length > 0 ? long.Parse(args[0]) : 5;
    long n = millions * 1000000 / 4;  // C calls B and A, B calls A: 4 calls per iteration
    int acc = 0;
    for (long i = 0; i < n; i++) acc = C(acc);
    Console.WriteLine("calls checksum {0}", acc);
    return 0;
  }
}
