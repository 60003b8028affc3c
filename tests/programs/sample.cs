// sample.cs - CPU-bound busy loop for ~0.6 s (wall clock) in a known method
// (SampleProgram.Spin) for statistical sampling. Output is deterministic.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

static class SampleProgram
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static ulong Spin(ulong x, int iters)
    {
        for (int i = 0; i < iters; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        return x;
    }

    static int Main()
    {
        var sw = Stopwatch.StartNew();
        ulong x = 1;
        long rounds = 0;
        while (sw.ElapsedMilliseconds < 600) {
            x = Spin(x, 100000);
            rounds++;
        }
        Console.WriteLine("spun: " + (rounds > 0 ? "yes" : "no") + " " + (x != 0 || x == 0));
        return 0;
    }
}
