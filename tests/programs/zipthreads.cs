// zip's memory test (test_zip.py): four threads making calls as fast as they can, as the overhead
// benchmark's bench_threads. argv[0] = thousands of calls to B (each calls A) per thread (default 1000).
// Prints "zipthreads CALLS CHECKSUM", CALLS being the calls to B per thread.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

static class ZipThreads {
  [MethodImpl(MethodImplOptions.NoInlining)]
  static int A(int x) { return x + 1; }
  [MethodImpl(MethodImplOptions.NoInlining)]
  static int B(int x) { return A(x) ^ 3; }

  static int Main(string[] args) {
    long n = (args.Length > 0 ? long.Parse(args[0]) : 1000) * 1000;
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
    Console.WriteLine("zipthreads {0} {1}", n, results[0] ^ results[1] ^ results[2] ^ results[3]);
    return 0;
  }
}
