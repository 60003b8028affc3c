// sigignore.cs SIGNUM [SECONDS] - the program's own signal choice (test_kill.py): sets SIGNUM to
// SIG_IGN through libc's signal(), prints "ready", makes calls on two threads for SECONDS (default 2)
// and prints "done", exit status 0. A kill by SIGNUM meanwhile must not end it, profiled or not.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

static class SigIgnore {
    [DllImport("libc", EntryPoint = "signal")]
    static extern IntPtr Signal(int signum, IntPtr handler);

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

    static int Main(string[] args) {
        int signum = int.Parse(args[0]);
        int seconds = args.Length > 1 ? int.Parse(args[1]) : 2;
        Signal(signum, (IntPtr)1);  // SIG_IGN
        var until = DateTime.UtcNow.AddSeconds(seconds);
        ThreadStart work = () => { long s = 0; while (DateTime.UtcNow < until) s += Fib(15); };
        var t = new Thread(work);
        t.Start();
        Console.WriteLine("ready");
        Console.Out.Flush();
        work();
        t.Join();
        Console.WriteLine("done");
        return 0;
    }
}
