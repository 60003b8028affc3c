// A multi-threaded service started without any profiler, for the attach tests (test_attach.py `workers`,
// issue 33.3/33.5): THREADS threads (default 4) named req-0..req-N, started at once, each doing CPU
// work for SECONDS seconds (default 10): half of it arithmetic (AttachWork.Compute), half building
// short-lived strings, lists and dictionaries (AttachWork.Churn, so that the runtime's own code, the
// allocator and the GC, is hot). Prints "ready" once the threads run, then "done N" and exits 0.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;
using System.Threading;

static class AttachWork {
    public static long Compute(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    public static int Churn(int n) {
        int total = 0;
        for (int i = 0; i < n; i++) {
            var list = new List<string>();
            var sb = new StringBuilder();
            for (int k = 0; k < 20; k++) {
                sb.Append(k).Append(':');
                list.Add(sb.ToString());
            }
            var map = new Dictionary<string, int>();
            foreach (var s in list) map[s] = s.Length;
            total += map.Count + new byte[256].Length;
        }
        return total;
    }
}

static class AttachWorkers {
    static long done;

    static void Main(string[] args) {
        int seconds = args.Length > 0 ? int.Parse(args[0]) : 10;
        int count = args.Length > 1 ? int.Parse(args[1]) : 4;
        var threads = new List<Thread>();
        var sw = Stopwatch.StartNew();
        for (int i = 0; i < count; i++) {
            var th = new Thread(() => {
                long local = 0;
                while (sw.ElapsedMilliseconds < seconds * 1000L) {
                    local += AttachWork.Compute(200000) & 1;
                    local += AttachWork.Churn(200);
                }
                Interlocked.Add(ref done, local);
            });
            th.Name = "req-" + i;
            threads.Add(th);
            th.Start();
        }
        Console.WriteLine("ready");
        Console.Out.Flush();
        foreach (var th in threads) th.Join();
        Console.WriteLine("done " + (done > 0 ? "ok" : "none"));
    }
}
