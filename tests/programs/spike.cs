// spike.cs - about 3 seconds of light CPU load (Warm: 20 ms of every 100 ms) with a CPU spike in
// Hot() from 1.0 s to 2.0 s after start, for time windows and the heatmap. Prints "done".
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

static class SpikeProgram
{
    static ulong sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Burn(Stopwatch sw, long untilMs)
    {
        ulong x = sink;
        while (sw.ElapsedMilliseconds < untilMs)
            for (int i = 0; i < 10000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Warm(Stopwatch sw, long untilMs) { Burn(sw, untilMs); }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Hot(Stopwatch sw, long untilMs) { Burn(sw, untilMs); }

    static int Main()
    {
        var sw = Stopwatch.StartNew();
        while (sw.ElapsedMilliseconds < 3000) {
            long now = sw.ElapsedMilliseconds;
            if (now >= 1000 && now < 2000) {
                Hot(sw, 2000);
            } else {
                Warm(sw, now + 20);
                long next = (now / 100 + 1) * 100;
                long wait = next - sw.ElapsedMilliseconds;
                if (wait > 0) Thread.Sleep((int)wait);
            }
        }
        Console.WriteLine("done");
        return 0;
    }
}
