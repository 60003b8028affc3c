// finalizers.cs - creates 1000 unreachable objects with finalizers, then
// GC.Collect + GC.WaitForPendingFinalizers; prints how many were finalized.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

sealed class Finalizable
{
    public static int Finalized;
    public int Id;
    ~Finalizable() { Interlocked.Increment(ref Finalized); }
}

static class FinalizersProgram
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Create(int n)
    {
        for (int i = 0; i < n; i++)
            new Finalizable { Id = i };
    }

    static int Main()
    {
        const int N = 1000;
        Create(N);
        for (int i = 0; i < 5 && Finalizable.Finalized < N; i++) {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
        Console.WriteLine("created: " + N);
        Console.WriteLine("finalized: " + (Finalizable.Finalized >= N ? N : Finalizable.Finalized));
        return 0;
    }
}
