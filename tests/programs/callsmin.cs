// callsmin.cs - many tiny calls and a few long ones, for short-call elision (calls-min).
// Tiny() is called 200000 times from Main and 1000 times from each Long(); Long() is called exactly
// 5 times and each Long() calls Inner() exactly twice; Long() and Inner() spin for 20 and 5 million
// iterations (several ms at least), so they are longer than any calls-min the tests use, whatever the machine's load.
using System;
using System.Runtime.CompilerServices;

static class CallsMinProgram
{
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Tiny(int x) { return x * 3 + 1; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Spin(int millions)
    {
        // No calls inside: the number of calls is the same in every run.
        long s = sink;
        for (int i = 0; i < millions * 1000000; i++) s = s * 31 + i;
        sink = s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Inner()
    {
        Spin(5);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Long()
    {
        Inner();
        for (int i = 0; i < 1000; i++) sink += Tiny(i);
        Spin(20);
        Inner();
    }

    static int Main()
    {
        for (int i = 0; i < 200000; i++) sink += Tiny(i);
        for (int k = 0; k < 5; k++) Long();
        Console.WriteLine("done");
        return 0;
    }
}
