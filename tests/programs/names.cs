// names.cs - names the reader must keep whole (issue 22.10): about 2.5 s of CPU in an anonymous
// method (mcs names it NamesProgram:<Main>m__0), a generic method, allocations (so that `alloc`
// puts the agent's own code on the samples) and two threads that only wait (futex, nanosleep),
// for the report's grouped lines. Prints "done".
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class NamesProgram
{
    static ulong sink;
    static object gate = new object();

    [MethodImpl(MethodImplOptions.NoInlining)]
    static T Keep<T>(T v) { return v; }

    static int Main()
    {
        var waiter = new Thread(() => { lock (gate) Monitor.Wait(gate, 4000); });
        waiter.Start();
        var sleeper = new Thread(() => Thread.Sleep(3000));
        sleeper.Start();
        var sw = Stopwatch.StartNew();
        Func<long, ulong> work = until => {
            ulong x = 1;
            var list = new List<object>();
            while (sw.ElapsedMilliseconds < until) {
                for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
                list.Add(Keep(new byte[32 + (int)(x & 63)]));
                if (list.Count > 1000) list.Clear();
            }
            return x;
        };
        sink = work(2500);
        lock (gate) Monitor.PulseAll(gate);
        waiter.Join();
        sleeper.Join();
        Console.WriteLine(sink == 42 ? "?" : "done");
        return 0;
    }
}
