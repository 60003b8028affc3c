// Timed markers for the clock test (tests/integration/agent/test_clock.py): every INTERVAL ms,
// measured with Stopwatch (CLOCK_MONOTONIC), one GC.Collect(). Prints, for each marker, the
// Stopwatch time just before and just after the call, so that the test can bound the time of the
// file's GC start event by [before, after] and compare the file's intervals with the program's.
// Optional busy threads keep the CPUs loaded (the test runs several of these at once).
// Usage: clockmarks.exe COUNT INTERVAL_MS [BUSY_THREADS]
using System;
using System.Diagnostics;
using System.Threading;

class ClockMarks {
    static volatile bool stop;

    static void Busy() {
        ulong x = 1;
        while (!stop) {
            for (int i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        }
        if (x == 42) Console.WriteLine("unlikely");
    }

    static double Ns(Stopwatch sw) {
        return sw.ElapsedTicks * (1e9 / Stopwatch.Frequency);
    }

    static int Main(string[] args) {
        var sw = Stopwatch.StartNew();
        int count = args.Length > 0 ? int.Parse(args[0]) : 10;
        int interval = args.Length > 1 ? int.Parse(args[1]) : 500;
        int busy = args.Length > 2 ? int.Parse(args[2]) : 0;
        var threads = new Thread[busy];
        for (int i = 0; i < busy; i++) {
            threads[i] = new Thread(Busy);
            threads[i].IsBackground = true;
            threads[i].Start();
        }
        var lines = new string[count];
        double next = Ns(sw) + interval * 1e6;
        for (int k = 0; k < count; k++) {
            while (true) {
                double left = next - Ns(sw);
                if (left <= 0) break;
                if (left > 2e6) Thread.Sleep((int)(left / 1e6) - 1);
            }
            double before = Ns(sw);
            GC.Collect();
            double after = Ns(sw);
            lines[k] = string.Format("mark {0} {1:F0} {2:F0}", k, before, after);
            next += interval * 1e6;
        }
        stop = true;
        foreach (var l in lines) Console.WriteLine(l);
        Console.WriteLine("run {0:F0}", Ns(sw));
        return 0;
    }
}
