// The CPU usage counters' test program (test_issue15.py): a thread named "busy" spins until it has
// used MS milliseconds of CPU (default 1000; at most 30 s of wall time), a thread named "sleeper"
// sleeps meanwhile; both then stay alive 500 ms more (so the counter samples see their final times).
// The busy thread measures its own CPU time (clock_gettime(CLOCK_THREAD_CPUTIME_ID)) and wall time;
// the program prints "busy CPU_MS WALL_MS".
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Threading;

static class CpuThreads {
    [StructLayout(LayoutKind.Sequential)]
    struct Timespec { public long Sec; public long Nsec; }

    [DllImport("libc", EntryPoint = "clock_gettime")]
    static extern int ClockGettime(int clock, out Timespec ts);
    const int CLOCK_THREAD_CPUTIME_ID = 3;

    static long ThreadCpuMs() {
        Timespec ts;
        ClockGettime(CLOCK_THREAD_CPUTIME_ID, out ts);
        return ts.Sec * 1000 + ts.Nsec / 1000000;
    }

    static long cpuMs, wallMs;
    static volatile bool done;

    static void Main(string[] args) {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1000;
        var busy = new Thread(() => {
            var sw = Stopwatch.StartNew();
            long start = ThreadCpuMs();
            long x = 0;
            while (ThreadCpuMs() - start < ms && sw.ElapsedMilliseconds < 30000) {
                for (int i = 0; i < 10000; i++) x++;
            }
            cpuMs = ThreadCpuMs();
            wallMs = sw.ElapsedMilliseconds;
            done = true;
            Thread.Sleep(500);
            if (x < 0) Console.WriteLine("never");
        });
        busy.Name = "busy";
        var sleeper = new Thread(() => {
            while (!done) Thread.Sleep(50);
            Thread.Sleep(500);
        });
        sleeper.Name = "sleeper";
        busy.Start();
        sleeper.Start();
        busy.Join();
        sleeper.Join();
        Console.WriteLine("busy " + cpuMs + " " + wallMs);
    }
}
