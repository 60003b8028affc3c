// samplecalls.cs - call-heavy CPU work for statistical sampling: most of the time goes to
// Work.Hot (called millions of times), a little to Work.Light. Output is deterministic.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

static class Work
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong Hot(ulong x)
    {
        for (int i = 0; i < 200; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static ulong Light(ulong x) { return x ^ (x >> 3); }

    static int Main(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1500;
        var sw = Stopwatch.StartNew();
        ulong x = 1;
        long calls = 0;
        while (sw.ElapsedMilliseconds < ms) {
            for (int i = 0; i < 1000; i++) {
                x = Hot(x);
                x = Light(x);
                calls += 2;
            }
        }
        Console.WriteLine("calls: " + (calls > 0 ? "many" : "none") + " " + (x != 0 || x == 0));
        return 0;
    }
}
