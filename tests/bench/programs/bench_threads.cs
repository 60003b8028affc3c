// Four threads making calls concurrently. argv[0] = millions of calls per thread (default 2).
using System;
using System.Threading;

static class BenchThreads {
  static int A(int x) { return x + 1; }
  static int B(int x) { return A(x) ^ 3; }

  static int Main(string[] args) {
    long millions = args.Length > 0 ? long.Parse(args[0]) : 2;
    long n = millions * 1000000 / 2;
    var threads = new Thread[4];
    var results = new int[4];
    for (int t = 0; t < 4; t++) {
      int id = t;
      threads[t] = new Thread(() => {
        int acc = id;
        for (long i = 0; i < n; i++) acc = B(acc);
        results[id] = acc;
      });
      threads[t].Start();
    }
    foreach (var th in threads) th.Join();
    Console.WriteLine("threads checksum {0}", results[0] ^ results[1] ^ results[2] ^ results[3]);
    return 0;
  }
}
