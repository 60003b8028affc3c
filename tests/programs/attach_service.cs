// A service started without any profiler, for the attach tests (tests/integration/agent/test_attach.py):
// for SECONDS seconds (default 10) a worker thread spends its time in AttachHot.Spin and every
// iteration adds a node to a growing list (AttachGrowing, kept alive). A second thread counts its
// progress and remembers the longest gap between two of its steps (the target's pause during an
// attach). A second argument "steady": the nodes are not kept (a program whose memory does not grow,
// for the attach/detach cycles' resident size). Prints "ready" at once, then "done N nodes, longest gap G ms" and exits with status 7.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;

class AttachGrowing {
    public byte[] Payload = new byte[64];
    public AttachGrowing Next;
}

static class AttachHot {
    public static long Spin(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }
}

// First called 2 s after the start (never inlined): compiled after an attach at 0.3 s, so the only
// one of these methods an attach with `calls` instruments.
static class AttachLate {
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    public static long Step(long x) { return x ^ (x >> 7); }
}

static class AttachService {
    static readonly List<AttachGrowing> Kept = new List<AttachGrowing>();
    static volatile bool stop;
    static long longestGapTicks;

    static void Ticker() {
        var sw = Stopwatch.StartNew();
        long last = sw.ElapsedTicks;
        while (!stop) {
            Thread.Sleep(1);
            long now = sw.ElapsedTicks;
            if (now - last > longestGapTicks) longestGapTicks = now - last;
            last = now;
        }
    }

    static int Main(string[] args) {
        int seconds = args.Length > 0 ? int.Parse(args[0]) : 10;
        bool keep = args.Length < 2 || args[1] != "steady";
        Console.WriteLine("ready");
        var ticker = new Thread(Ticker);
        ticker.Start();
        var sw = Stopwatch.StartNew();
        long sink = 0;
        AttachGrowing prev = null;
        var worker = new Thread(() => {
            while (sw.Elapsed.TotalSeconds < seconds) {
                sink += AttachHot.Spin(200000);
                if (sw.Elapsed.TotalSeconds > 2) sink += AttachLate.Step(sink);
                if (!keep) continue;
                var node = new AttachGrowing { Next = prev };
                prev = node;
                lock (Kept) Kept.Add(node);
            }
        });
        worker.Start();
        worker.Join();
        stop = true;
        ticker.Join();
        Console.WriteLine("done " + Kept.Count + " nodes, longest gap " +
                          (longestGapTicks * 1000 / Stopwatch.Frequency) + " ms" + (sink == 42 ? "!" : ""));
        return 7;
    }
}
