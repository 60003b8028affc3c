// A service started without any profiler, for `mlpd attach` on .NET (tests/integration/dotnet/
// test_attach.py), the .NET twin of tests/programs/attach_service.cs: for SECONDS seconds two worker
// threads (named req-0 and req-1 before any attach) spend their time in AttachHot.Spin, and every
// iteration adds a node to a growing list (AttachGrowing, kept alive from a static). A ticker thread
// remembers the longest gap between two of its 1 ms steps (the target's pause during an attach, a
// heapshot, a detach). Prints "ready" at once, then "done N nodes, longest gap G ms" and exits with 7.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace MlpdTests
{
    public class AttachGrowing
    {
        public byte[] Payload = new byte[64];
        public AttachGrowing Next;
    }

    public static class AttachHot
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Spin(long n)
        {
            long x = 1;
            for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            return x;
        }
    }

    public static class AttachService
    {
        static readonly List<AttachGrowing> Kept = new List<AttachGrowing>();
        static volatile bool stop;
        static long longestGapTicks;

        static void Ticker()
        {
            var sw = Stopwatch.StartNew();
            long last = sw.ElapsedTicks;
            while (!stop)
            {
                Thread.Sleep(1);
                long now = sw.ElapsedTicks;
                if (now - last > longestGapTicks) longestGapTicks = now - last;
                last = now;
            }
        }

        public static int Run(int seconds)
        {
            Console.WriteLine("ready");
            var ticker = new Thread(Ticker) { Name = "ticker" };
            ticker.Start();
            var sw = Stopwatch.StartNew();
            long sink = 0;
            var workers = new List<Thread>();
            for (int w = 0; w < 2; w++)
            {
                var worker = new Thread(() =>
                {
                    AttachGrowing prev = null;
                    long local = 0;
                    while (sw.Elapsed.TotalSeconds < seconds)
                    {
                        local += AttachHot.Spin(200000);
                        var node = new AttachGrowing { Next = prev };
                        prev = node;
                        lock (Kept) Kept.Add(node);
                    }
                    Interlocked.Add(ref sink, local);
                }) { Name = "req-" + w };
                workers.Add(worker);
                worker.Start();
            }
            foreach (var w in workers) w.Join();
            stop = true;
            ticker.Join();
            Console.WriteLine("done " + Kept.Count + " nodes, longest gap " +
                              (longestGapTicks * 1000 / Stopwatch.Frequency) + " ms" + (sink == 42 ? "!" : ""));
            return 7;
        }
    }
}
