// samplenative.cs - spends its time in native code: mlpd_hot_spin of libmlpdhot.so (built from
// tests/programs/native/mlpdhot.c next to this program), called through P/Invoke.
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;

static class SampleNative
{
    [DllImport("mlpdhot")]
    static extern ulong mlpd_hot_spin(ulong x, int iters);
    [DllImport("mlpdhot")]
    static extern ulong mlpd_cold_before(ulong x);
    [DllImport("mlpdhot")]
    static extern ulong mlpd_cold_after(ulong x);

    static int Main(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 1500;
        var sw = Stopwatch.StartNew();
        ulong x = 88172645463325252UL;
        while (sw.ElapsedMilliseconds < ms)
            x = mlpd_cold_after(mlpd_hot_spin(mlpd_cold_before(x), 2000000));
        Console.WriteLine("native: done " + (x != 0 || x == 0));
        return 0;
    }
}
