// threads.cs - 3 named threads ("alpha", "beta", "gamma") doing some work
// (allocations + calls) concurrently, joined at the end.
using System;
using System.Threading;

static class ThreadsProgram
{
    static long Work(int seed)
    {
        long s = 0;
        for (int i = 0; i < 20000; i++) {
            var a = new int[4];
            a[i & 3] = i + seed;
            s += a[i & 3];
        }
        return s;
    }

    static int Main()
    {
        string[] names = { "alpha", "beta", "gamma" };
        var results = new long[names.Length];
        var threads = new Thread[names.Length];
        for (int t = 0; t < names.Length; t++) {
            int idx = t;
            threads[t] = new Thread(() => { results[idx] = Work(idx); }) { Name = names[t] };
        }
        foreach (var th in threads) th.Start();
        foreach (var th in threads) th.Join();
        for (int t = 0; t < names.Length; t++)
            Console.WriteLine(names[t] + ": " + results[t]);
        return 0;
    }
}
