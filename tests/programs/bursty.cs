// CPU-sampling test program (test_ctimer.py): BURSTY threads (default 6) each run BURSTS bursts
// (default 500) of BURST_US us of their own CPU (default 300), waiting 5-15 ms after each
// (Thread.Sleep), as a server's request threads do (the process uses a fifth of a core then); when
// they are done, one more thread spins for SPIN_MS ms of its CPU (default 500). All threads are
// started 200 ms before the work, and wait for it.
// Prints "ready", then (with "wait" as the 4th argument) waits for a line on stdin before the work
// and for another before exiting; prints "cpu bursty=MS spin=MS" (the threads' own CPU time, from
// clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
// Usage: bursty.exe [BURSTS] [BURSTY] [SPIN_MS] [BURST_US] [wait]
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

static class Bursty {
    [StructLayout(LayoutKind.Sequential)]
    struct Timespec { public long Sec; public long Nsec; }

    [DllImport("libc", EntryPoint = "clock_gettime")]
    static extern int ClockGettime(int clock, out Timespec ts);
    const int CLOCK_THREAD_CPUTIME_ID = 3;

    static long ThreadCpuUs() {
        Timespec ts;
        ClockGettime(CLOCK_THREAD_CPUTIME_ID, out ts);
        return ts.Sec * 1000000 + ts.Nsec / 1000;
    }

    static long sink;
    static long burstyUs, spinUs;
    static readonly ManualResetEvent burstGate = new ManualResetEvent(false), spinGate = new ManualResetEvent(false);

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Work(long us) {
        long start = ThreadCpuUs();
        long x = 0;
        while (ThreadCpuUs() - start < us) {
            for (int i = 0; i < 2000; i++) x += i ^ (x >> 3);
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void BurstLoop(int bursts, int burstUs, int seed) {
        var rnd = new Random(seed);
        long x = 0;
        burstGate.WaitOne();
        for (int i = 0; i < bursts; i++) {
            x += Work(burstUs);
            Thread.Sleep(5 + rnd.Next(11));
        }
        Interlocked.Add(ref sink, x);
        Interlocked.Add(ref burstyUs, ThreadCpuUs());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void SpinLoop(int ms) {
        Interlocked.Add(ref sink, Work(ms * 1000L));
        Interlocked.Add(ref spinUs, ThreadCpuUs());
    }

    static int Main(string[] args) {
        int bursts = args.Length > 0 ? int.Parse(args[0]) : 500;
        int n = args.Length > 1 ? int.Parse(args[1]) : 6;
        int spinMs = args.Length > 2 ? int.Parse(args[2]) : 500;
        int burstUs = args.Length > 3 ? int.Parse(args[3]) : 300;
        bool wait = args.Length > 4 && args[4] == "wait";
        Console.WriteLine("ready");
        Console.Out.Flush();
        if (wait) Console.ReadLine();
        var threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            int seed = i;
            threads[i] = new Thread(() => BurstLoop(bursts, burstUs, seed)) { Name = "bursty-" + i };
        }
        var spinner = new Thread(() => { spinGate.WaitOne(); SpinLoop(spinMs); }) { Name = "spinner" };
        // Every thread exists, waiting, 200 ms before its work: a thread is sampled from the moment
        // the profiler's timer thread has given it its CPU timer (within 10 ms on an idle machine,
        // later when that thread waits for a CPU), and this program measures the sampling of the
        // work, not that delay (docs/options.md, `sample`).
        for (int i = 0; i < n; i++) threads[i].Start();
        spinner.Start();
        Thread.Sleep(200);
        burstGate.Set();
        for (int i = 0; i < n; i++) threads[i].Join();
        spinGate.Set();
        spinner.Join();
        Console.WriteLine("cpu bursty=" + (burstyUs / 1000) + " spin=" + (spinUs / 1000));
        Console.Out.Flush();
        if (wait) Console.ReadLine();
        return 0;
    }
}
