// Three phases for pause/resume (test_issue15.py). Before each phase the program prints "phase N"
// and waits for a line on stdin (the test pauses or resumes the profiler meanwhile); phase N calls
// WorkN(Allocs) Calls[N] times, each call allocating Allocs PhaseNObj objects. At the end it prints
// "done" after a last stdin line.
using System;
using System.Runtime.CompilerServices;

class Phase1Obj { public long A; }
class Phase2Obj { public long A; }
class Phase3Obj { public long A; }

static class Phases {
    public const int Allocs = 1000;
    static readonly int[] Calls = { 0, 5, 7, 9 };
    static object keep;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work1(int n) { for (int i = 0; i < n; i++) keep = new Phase1Obj { A = i }; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work2(int n) { for (int i = 0; i < n; i++) keep = new Phase2Obj { A = i }; }
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Work3(int n) { for (int i = 0; i < n; i++) keep = new Phase3Obj { A = i }; }

    static void Wait(string what) {
        Console.WriteLine(what);
        Console.Out.Flush();
        Console.ReadLine();
    }

    static void Main() {
        Wait("phase 1");
        for (int i = 0; i < Calls[1]; i++) Work1(Allocs);
        Wait("phase 2");
        for (int i = 0; i < Calls[2]; i++) Work2(Allocs);
        Wait("phase 3");
        for (int i = 0; i < Calls[3]; i++) Work3(Allocs);
        Wait("end");
        Console.WriteLine("done " + (keep != null));
    }
}
