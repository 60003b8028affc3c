// sleepyserver.cs - a server's shape for the calls report's hot path (issue 33.5): the main thread
// starts WORKERS request threads (default 2, named "req-N"), then sleeps SLEEP_MS (default 2500) in
// Thread.Sleep and joins them; each worker handles requests (Handle -> Parse, Compute: calls and CPU)
// for BUSY_MS of wall time (default 1200). Main's inclusive time is the longest, but it sleeps: the
// CPU is the workers'. Prints "done N" with the number of requests.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class SleepyServer
{
    static long requests;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Parse(int id)
    {
        int h = id;
        for (int i = 0; i < 200; i++) h = h * 31 + i;
        return h;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Compute(int seed)
    {
        long x = seed;
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Handle(int id) { return Compute(Parse(id)); }

    static void Worker(object arg)
    {
        int busyMs = (int)arg;
        var sw = Stopwatch.StartNew();
        long sink = 0;
        int id = 0;
        while (sw.ElapsedMilliseconds < busyMs) {
            sink += Handle(id++);
            Interlocked.Increment(ref requests);
        }
        if (sink == 42) Console.WriteLine("unlikely");
    }

    static int Main(string[] args)
    {
        int workers = args.Length > 0 ? int.Parse(args[0]) : 2;
        int sleepMs = args.Length > 1 ? int.Parse(args[1]) : 2500;
        int busyMs = args.Length > 2 ? int.Parse(args[2]) : 1200;
        var threads = new Thread[workers];
        for (int i = 0; i < workers; i++) {
            threads[i] = new Thread(Worker) { Name = "req-" + i };
            threads[i].Start(busyMs);
        }
        Thread.Sleep(sleepMs);
        foreach (var t in threads) t.Join();
        Console.WriteLine("done " + Interlocked.Read(ref requests));
        return 0;
    }
}
