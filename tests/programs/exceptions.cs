// exceptions.cs - throws and catches a known number of exceptions.
// 100 x InvalidOperationException caught by catch,
// 50 x ArgumentException through try/finally then caught,
// 30 x FormatException with an exception filter (`when`) evaluated,
// 20 x rethrow (`throw;`) of ApplicationException => 20 original throws + 20 rethrows.
// Total managed throw statements executed: 100 + 50 + 30 + 20 + 20 = 220.
using System;
using System.Runtime.CompilerServices;

static class ExceptionsProgram
{
    static int finallies, filtered, caught;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Thrower(int i) { throw new InvalidOperationException("ioe " + i); }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void WithFinally(int i)
    {
        try { throw new ArgumentException("arg " + i); }
        finally { finallies++; }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static bool Filter(Exception e, int i) { filtered++; return (i & 1) == 0 || e != null; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Rethrower(int i)
    {
        try { throw new ApplicationException("app " + i); }
        catch (ApplicationException) { throw; }
    }

    static int Main()
    {
        for (int i = 0; i < 100; i++) {
            try { Thrower(i); } catch (InvalidOperationException) { caught++; }
        }
        for (int i = 0; i < 50; i++) {
            try { WithFinally(i); } catch (ArgumentException) { caught++; }
        }
        for (int i = 0; i < 30; i++) {
            try { throw new FormatException("fmt " + i); }
            catch (FormatException e) when (Filter(e, i)) { caught++; }
        }
        for (int i = 0; i < 20; i++) {
            try { Rethrower(i); } catch (ApplicationException) { caught++; }
        }
        Console.WriteLine("caught: " + caught);
        Console.WriteLine("finally blocks: " + finallies);
        Console.WriteLine("filters evaluated: " + filtered);
        return 0;
    }
}
