// Sampling test program (test_cpu_sampling.py): the main thread spins until it has used SPIN_MS
// milliseconds of CPU (default 4000; at most 60 s of wall time) while WORKERS threads (default 40)
// wake every PERIOD_MS (default 2) from a timed Monitor.Wait and park again: threads that are
// blocked in the kernel nearly all the time but run for a moment, like a server's idle thread-pool
// workers. With DEPTH > 0 the spinning happens DEPTH calls deep (Deep recursion), for stacks deeper
// than the sampler keeps. SPINNERS (default 0) more threads spin as long as the main thread, so
// that woken workers wait for a CPU. Prints "spin CPU_MS" (the main thread's own CPU time, from
// clock_gettime(CLOCK_THREAD_CPUTIME_ID)).
// Usage: spinpark.exe [SPIN_MS] [WORKERS] [PERIOD_MS] [DEPTH] [SPINNERS]
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

static class SpinPark {
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

    static volatile bool done;
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Spin(int ms) {
        var sw = Stopwatch.StartNew();
        long start = ThreadCpuMs();
        long x = 0;
        while (ThreadCpuMs() - start < ms && sw.ElapsedMilliseconds < 60000) {
            for (int i = 0; i < 20000; i++) x += i ^ (x >> 3);
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static long Deep(int depth, int ms) {
        if (depth <= 1) return Spin(ms);
        return Deep(depth - 1, ms) + 1;
    }

    static void Main(string[] args) {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 4000;
        int workers = args.Length > 1 ? int.Parse(args[1]) : 40;
        int period = args.Length > 2 ? int.Parse(args[2]) : 2;
        int depth = args.Length > 3 ? int.Parse(args[3]) : 0;
        int spinners = args.Length > 4 ? int.Parse(args[4]) : 0;
        var threads = new Thread[workers];
        for (int i = 0; i < workers; i++) {
            var gate = new object();
            threads[i] = new Thread(() => {
                lock (gate) {
                    while (!done) Monitor.Wait(gate, period);
                }
            });
            threads[i].Start();
        }
        var extra = new Thread[spinners];
        for (int i = 0; i < spinners; i++) {
            extra[i] = new Thread(() => { while (!done) Spin(5); });
            extra[i].Start();
        }
        long cpu0 = ThreadCpuMs();
        sink = depth > 0 ? Deep(depth, ms) : Spin(ms);
        long cpu = ThreadCpuMs() - cpu0;
        done = true;
        foreach (var t in threads) t.Join();
        foreach (var t in extra) t.Join();
        Console.WriteLine("spin " + cpu);
    }
}
