// calls.cs - call-heavy program with known, deterministic call counts.
// Fib(20) performs exactly 21891 calls of Fib (2*fib(21)-1).
// Leaf() is called exactly 1000 times, Middle() 100 times, Outer() 10 times.
using System;
using System.Runtime.CompilerServices;

static class CallsProgram
{
    static int fibCalls, leafCalls, middleCalls, outerCalls;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Fib(int n)
    {
        fibCalls++;
        return n < 2 ? n : Fib(n - 1) + Fib(n - 2);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Leaf(int x)
    {
        leafCalls++;
        return x * 3 + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Middle(int x)
    {
        middleCalls++;
        int s = 0;
        for (int i = 0; i < 10; i++)
            s += Leaf(x + i);
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Outer(int x)
    {
        outerCalls++;
        int s = 0;
        for (int i = 0; i < 10; i++)
            s += Middle(x * 10 + i);
        return s;
    }

    static int Main()
    {
        int f = Fib(20);
        long s = 0;
        for (int i = 0; i < 10; i++)
            s += Outer(i);
        Console.WriteLine("fib(20)=" + f);
        Console.WriteLine("Fib calls: " + fibCalls);
        Console.WriteLine("Outer calls: " + outerCalls);
        Console.WriteLine("Middle calls: " + middleCalls);
        Console.WriteLine("Leaf calls: " + leafCalls);
        Console.WriteLine("sum=" + s);
        return 0;
    }
}
